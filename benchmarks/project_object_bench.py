"""A project import whose `project` object is about 30 MB: peak memory and time.

The parent writes each document to a file; a child process (`--child`) opens a fresh
store, records its peak resident memory, imports the file with `import_project`, and
prints the peak again, so each number is the import's alone. Shapes: `notes` (180,000
short notes), `files` (15 text files of 1.5 MB, 30 MB of base64).

Rerun: `PYTHONPATH=backend .venv/bin/python benchmarks/project_object_bench.py`
(about a minute). Results: docs/benchmarks.md, "Hostile files and the sidebar's search".
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

T = "2026-01-01T00:00:00Z"


def document(shape: str) -> dict[str, Any]:
    project: dict[str, Any] = {
        "id": "p1",
        "name": "P",
        "instructions": "",
        "model": None,
        "settings": {},
        "createdAt": T,
        "updatedAt": T,
        "files": [],
        "notes": [],
    }
    if shape == "notes":
        project["notes"] = [
            {"title": "t", "text": "n" * 60, "createdAt": T, "updatedAt": T} for _ in range(180_000)
        ]
    else:
        project["files"] = [
            {
                "name": f"f{n}.txt",
                "mediaType": "text/plain",
                "createdAt": T,
                "data": base64.b64encode((f"{n} " + "word " * 300_000).encode()).decode(),
            }
            for n in range(15)
        ]
    return {
        "format": "foldline.project",
        "formatVersion": 1,
        "project": project,
        "conversations": [],
    }


def child(path: Path) -> None:
    from foldline.store import Store
    from foldline.store.project_export import import_project

    store = Store(path.with_suffix(".db"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    with path.open("rb") as body:
        import_project(store, body)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {before:.0f} -> {after:.0f} MiB (+{after - before:.0f}), {took:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--shapes", default="notes,files")
    args = parser.parse_args()
    if args.child:
        child(Path(args.child))
        return
    with tempfile.TemporaryDirectory() as directory:
        for shape in args.shapes.split(","):
            path = Path(directory) / f"{shape}.json"
            path.write_bytes(json.dumps(document(shape)).encode())
            size = path.stat().st_size / 1e6
            print(f"{shape}: {size:.1f} MB document, load {os.getloadavg()[0]:.1f}: ", end="")
            sys.stdout.flush()
            subprocess.run([sys.executable, __file__, "--child", str(path)], check=True)


if __name__ == "__main__":
    main()
