"""Export a long conversation to JSON and import it back: time and peak memory.

Builds a conversation of N messages (user questions, assistant answers, every tenth
answer a tool call with a 2 kB result) in a fresh store, writes the JSON export to a file
(`write_export`, one message at a time) and imports that file (`import_stream`, one
message at a time, written in batches). Peak memory is the process' maximum resident
set size after each phase (`resource.getrusage`), so the figure includes Python itself
and the SQLite page cache.

While the import runs, another thread (its own connection, as a second conversation's
turn would have) appends a message to another conversation every 50 ms and times each
write, from the call to its commit; a write that waits longer than the store's busy
timeout (5 s) fails with "database is locked". It also lists the conversations each
time: the one being imported must never appear with part of its messages.

Rerun: `.venv/bin/python benchmarks/import_bench.py --messages 100000`
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from foldline.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, user
from foldline.store import Store
from foldline.store.export import write_export
from foldline.store.import_reader import import_stream

BATCH = 1000


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def history(count: int) -> Iterator[Message]:
    """Every 20 messages: 9 questions and answers, then a tool call, its 2 kB result and
    the answer after it."""
    for index in range(count):
        position = index % 20
        if position == 17:
            call = ToolCallPart(id=f"call_{index}", name="read_file", input={"path": f"{index}.py"})
            yield Message(role="assistant", parts=(TextPart(text="Reading it."), call))
        elif position == 18:
            result = ToolResultPart(
                call_id=f"call_{index - 1}", name="read_file", output="x" * 2048
            )
            yield Message(role="tool", parts=(result,))
        elif position % 2 == 0:
            yield user(f"Question {index}: how does part {index} of the parser work? " * 3)
        else:
            yield Message(role="assistant", parts=(TextPart(text=f"Answer {index}. " * 30),))


def build(store: Store, count: int) -> str:
    conversation = store.create_conversation(title="long", model="gpt-4.1")
    batch: list[Message] = []
    for message in history(count):
        batch.append(message)
        if len(batch) >= BATCH:
            store.append_messages(conversation.id, batch)
            batch = []
    if batch:
        store.append_messages(conversation.id, batch)
    return conversation.id


class OtherWrites:
    """Writes to another conversation every 50 ms while the import runs."""

    def __init__(self, store: Store, complete: int) -> None:
        self.store = store
        self.complete = complete
        self.conversation_id = store.create_conversation(title="meanwhile").id
        self.latencies: list[float] = []
        self.failed = 0
        self.seen_early = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> OtherWrites:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                self.store.append_message(self.conversation_id, user(f"meanwhile {n}"))
                self.latencies.append(time.perf_counter() - started)
            except sqlite3.OperationalError:
                self.failed += 1
            self.seen_early += any(
                c.title == "long" and c.message_count != self.complete
                for c in self.store.list_conversations()
            )
            n += 1
            self._stop.wait(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with Store(root / "source.db") as source:
            started = time.perf_counter()
            conversation_id = build(source, args.messages)
            built = time.perf_counter() - started
            after_build = peak_mib()
            export_path = root / "export.json"
            started = time.perf_counter()
            with export_path.open("wb") as out:
                write_export(source, conversation_id, out)
            exported = time.perf_counter() - started
            after_export = peak_mib()
        with Store(root / "target.db") as target:
            with OtherWrites(target, args.messages) as others:
                started = time.perf_counter()
                with export_path.open("rb") as body:
                    record = import_stream(target, body)
                imported = time.perf_counter() - started
            after_import = peak_mib()
            assert target.message_count(record.id) == args.messages
        size = export_path.stat().st_size / 2**20
    print(f"messages: {args.messages:,}; export file: {size:,.1f} MiB")
    print(f"build the store: {built:.1f} s (peak RSS {after_build:.0f} MiB)")
    print(f"export (write_export to a file): {exported:.1f} s (peak RSS {after_export:.0f} MiB)")
    print(
        f"import (import_stream from the file): {imported:.1f} s (peak RSS {after_import:.0f} MiB)"
    )
    waits = sorted(others.latencies) or [0.0]
    print(
        f"other conversation's writes during the import: {len(others.latencies)} done, "
        f"{others.failed} failed (locked out); median {statistics.median(waits) * 1000:.0f} ms, "
        f"p99 {waits[int(len(waits) * 0.99)] * 1000:.0f} ms, longest {waits[-1] * 1000:.0f} ms; "
        f"the imported conversation listed incomplete: {others.seen_early} times"
    )


if __name__ == "__main__":
    main()
