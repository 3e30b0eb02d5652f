"""`foldline doctor`: check the database, keep a copy, salvage what SQLite can read.

A database can be damaged by a failing disk, a full disk at a bad moment, or a copy
taken while it was being written. The app then refuses to start (naming the file)
rather than guess. This module does what a careful person would do by hand: run
SQLite's integrity check; if it fails, copy the damaged file (with its WAL) aside
untouched, read every row SQLite can still read into a fresh database with the current
schema (`sqlite3`'s `.recover` when the command-line tool is installed, else a
table-by-table copy that skips unreadable rows), and put the fresh file in place.

A sound file can still hold values no answer can carry (settings nested hundreds deep,
a lone surrogate), written by an older version that did not check them; the app serves
those as empty with a notice, and the doctor resets them for good (`repair_values`).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from foldline.store.branches import rebuild_lanes
from foldline.store.connection import open_database
from foldline.store.records import (
    PARTS_ADAPTER,
    CorruptDatabase,
    dump_parts,
    load_message,
    readable_json,
)
from foldline.store.store import Store

COPIED_TABLES = ("conversations", "messages", "compactions", "calibration", "model_calls")
"""The tables that hold the person's data, parents first (foreign keys)."""


def integrity_problems(path: Path, limit: int = 20, *, quick: bool = False) -> list[str]:
    """SQLite's `integrity_check` (empty when the file is sound). `quick` runs
    `quick_check`, which skips the index-content checks and is several times faster."""
    pragma = "quick_check" if quick else "integrity_check"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute(f"PRAGMA {pragma}({limit})").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:
        return [str(error)]
    problems = [str(row[0]) for row in rows]
    return [] if problems == ["ok"] else problems


def check_database(path: Path) -> None:
    """Raise `CorruptDatabase` naming `path` when SQLite's quick check finds damage.

    Run once at start-up, so a damaged file is refused before anything writes to it,
    instead of failing later, request by request."""
    if not path.exists():
        return
    problems = integrity_problems(path, limit=3, quick=True)
    if problems:
        raise CorruptDatabase(path, "; ".join(problems))


@dataclass
class DoctorReport:
    path: Path
    problems: list[str]
    backup: Path | None = None
    salvaged_rows: dict[str, int] = field(default_factory=dict)
    method: str | None = None
    repaired_values: list[str] = field(default_factory=list)
    """One line per stored value reset because it could not be read back."""


def _half_imports(path: Path) -> list[str]:
    """A line per project or conversation an import was still writing (a crash cut it)."""
    conn = sqlite3.connect(path)
    try:
        projects = conn.execute(
            "SELECT id, name, (SELECT count(*) FROM conversations AS c "
            "WHERE c.project_id = p.id) FROM projects AS p WHERE importing = 1"
        ).fetchall()
        conversations = conn.execute(
            "SELECT id, title FROM conversations WHERE importing = 1 AND (project_id IS NULL "
            "OR project_id NOT IN (SELECT id FROM projects WHERE importing = 1))"
        ).fetchall()
    except sqlite3.OperationalError:  # a database older than these columns
        return []
    finally:
        conn.close()
    return [
        f"project {pid} ({name!r}): half-imported (the import was cut short), removed with "
        f"the {count} conversations written so far"
        for pid, name, count in projects
    ] + [
        f"conversation {cid} ({title!r}): half-imported (the import was cut short), removed"
        for cid, title in conversations
    ]


def repair_values(path: Path) -> list[str]:
    """Reset the free-form values that cannot be read back (see `readable_json`): a
    conversation's settings to `{}`, a message's usage to null, a message's unreadable
    tool arguments to the note ingest stores now (`load_message`); and delete what an
    import cut short by a crash left (hidden, never shown). Returns what changed."""
    repaired = _half_imports(path)
    if repaired:
        Store(path).close()  # opening the store deletes unfinished imports
    conn = sqlite3.connect(path)
    try:
        with conn:
            for conversation_id, settings in conn.execute(
                "SELECT id, settings FROM conversations"
            ).fetchall():
                value, readable = readable_json(settings)
                if not (readable and isinstance(value, dict)):
                    conn.execute(
                        "UPDATE conversations SET settings = '{}' WHERE id = ?", (conversation_id,)
                    )
                    repaired.append(f"conversation {conversation_id}: settings reset to {{}}")
            for message_id, usage in conn.execute(
                "SELECT id, usage FROM messages WHERE usage IS NOT NULL"
            ).fetchall():
                value, readable = readable_json(usage)
                if not (readable and isinstance(value, dict)):
                    conn.execute("UPDATE messages SET usage = NULL WHERE id = ?", (message_id,))
                    repaired.append(f"message {message_id}: usage reset to null")
            for message_id, role, parts in conn.execute(
                "SELECT id, role, parts FROM messages"
            ).fetchall():
                try:
                    PARTS_ADAPTER.validate_json(parts)
                except ValueError:
                    mended = dump_parts(load_message(role, parts))
                    conn.execute("UPDATE messages SET parts = ? WHERE id = ?", (mended, message_id))
                    repaired.append(f"message {message_id}: unreadable parts replaced")
    finally:
        conn.close()
    return repaired


def _backup(path: Path, stamp: str) -> Path:
    backup = path.with_name(f"{path.name}.damaged-{stamp}")
    shutil.copy2(path, backup)
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            shutil.copy2(companion, backup.with_name(backup.name + suffix))
    return backup


def _recover_with_cli(damaged: Path, recovered: Path) -> bool:
    """`sqlite3 damaged .recover | sqlite3 recovered` (SQLite ≥ 3.29), when installed."""
    tool = shutil.which("sqlite3")
    if tool is None:
        return False
    try:
        dump = subprocess.run(
            [tool, str(damaged), ".recover"], capture_output=True, check=True, timeout=3600
        )
        subprocess.run(
            [tool, str(recovered)], input=dump.stdout, capture_output=True, check=True, timeout=3600
        )
    except (subprocess.SubprocessError, OSError):
        recovered.unlink(missing_ok=True)
        return False
    return True


def _copy_readable_rows(damaged: Path, target: sqlite3.Connection) -> dict[str, int]:
    """Copy each table row by row from a read-only connection, skipping what cannot be read.

    The damaged file is read through its own connection rather than attached: a
    transaction that spans a damaged database fails as a whole at COMMIT. A scan stops
    at the first unreadable page, so the row ids are gathered from both ends.
    """
    counts: dict[str, int] = {}
    source = sqlite3.connect(f"file:{damaged}?mode=ro", uri=True)
    try:
        target.execute("BEGIN")
        for table in COPIED_TABLES:
            columns = [row[1] for row in target.execute(f"PRAGMA main.table_info({table})")]
            try:
                present = {row[1] for row in source.execute(f"PRAGMA table_info({table})")}
            except sqlite3.DatabaseError:
                present = set()
            names = [column for column in columns if column in present]
            counts[table] = 0
            if not names:
                continue
            selected = ", ".join(names)
            insert = (
                f"INSERT OR IGNORE INTO main.{table} ({selected}) "
                f"VALUES ({', '.join('?' for _ in names)})"
            )
            for rowid in _readable_rowids(source, table):
                try:
                    row = source.execute(
                        f"SELECT {selected} FROM {table} WHERE rowid = ?", (rowid,)
                    ).fetchone()
                except sqlite3.DatabaseError:
                    continue
                if row is not None and target.execute(insert, row).rowcount:
                    counts[table] += 1
        target.execute("COMMIT")
    finally:
        source.close()
    return counts


def _readable_rowids(source: sqlite3.Connection, table: str) -> list[int]:
    """The row ids a scan can reach, forwards until the damage and backwards until it."""
    found: set[int] = set()
    for order in ("ASC", "DESC"):
        try:
            for (rowid,) in source.execute(f"SELECT rowid FROM {table} ORDER BY rowid {order}"):
                found.add(rowid)
        except sqlite3.DatabaseError:
            continue
    return sorted(found)


def _count_rows(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in COPIED_TABLES}
    finally:
        conn.close()


def repair(path: Path, *, now: datetime | None = None) -> DoctorReport:
    """Check `path`; when damaged, back it up and replace it by what can be salvaged."""
    problems = integrity_problems(path)
    report = DoctorReport(path=path, problems=problems)
    if not problems:
        report.repaired_values = repair_values(path)
        return report
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    report.backup = _backup(path, stamp)
    salvaged = path.with_name(f"{path.name}.salvaged-{stamp}")
    if _recover_with_cli(report.backup, salvaged) and not integrity_problems(salvaged):
        # `.recover` rebuilds the old schema; opening it as a Store migrates it if needed.
        Store(salvaged, recover=False).close()
        report.method = "sqlite3 .recover"
    else:
        salvaged.unlink(missing_ok=True)
        Store(salvaged, recover=False).close()  # a fresh file with the current schema
        db = open_database(salvaged)
        try:
            db.conn.execute("PRAGMA foreign_keys = OFF")
            _copy_readable_rows(report.backup, db.conn)
            # The lanes are derived from the messages' parents: built again from what
            # was salvaged rather than copied half-readable.
            db.conn.execute("BEGIN")
            rebuild_lanes(db.conn)
            db.conn.execute("COMMIT")
        finally:
            db.close()
        report.method = "row-by-row copy"
    report.salvaged_rows = _count_rows(salvaged)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    salvaged.replace(path)
    for suffix in ("-wal", "-shm"):
        moved = salvaged.with_name(salvaged.name + suffix)
        if moved.exists():
            moved.replace(path.with_name(path.name + suffix))
    report.repaired_values = repair_values(path)
    return report
