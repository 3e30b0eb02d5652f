"""`foldline doctor`: check the database and, if it is damaged, salvage it.

Close Foldline first: the repair replaces the database file.
"""

from __future__ import annotations

import argparse
import sys

from foldline.paths import DataDirUnusable, prepare_data_dir
from foldline.store.doctor import repair

DATABASE_FILE = "foldline.db"
EXIT_OK = 0
EXIT_FAILED = 1


def run_doctor(args: argparse.Namespace) -> int:
    try:
        data_dir = prepare_data_dir(args.data_dir)
    except DataDirUnusable as error:
        print(f"foldline doctor: {error}", file=sys.stderr)
        return EXIT_FAILED
    path = data_dir / DATABASE_FILE
    if not path.exists():
        print(f"foldline doctor: no database at {path} (nothing to check).")
        return EXIT_OK
    try:
        report = repair(path)
    except Exception as error:  # a report for the person, not a traceback
        print(f"foldline doctor: could not repair {path}: {error}", file=sys.stderr)
        return EXIT_FAILED
    if not report.problems:
        if not report.repaired_values:
            print(f"{path}: integrity check passed; nothing to do.")
            return EXIT_OK
        print(f"{path}: integrity check passed; {len(report.repaired_values)} unreadable values:")
        for line in report.repaired_values:
            print(f"  {line}")
        return EXIT_OK
    print(f"{path}: damaged ({'; '.join(report.problems[:3])}).")
    print(f"The damaged file is kept as {report.backup}.")
    rows = ", ".join(f"{count} {table}" for table, count in report.salvaged_rows.items())
    print(f"Salvaged with {report.method}: {rows}. The salvaged database is now in place.")
    return EXIT_OK
