"""Export a long conversation to JSON and import it back: time and peak memory.

Builds a conversation of N messages (user questions, assistant answers, every tenth
answer a tool call with a 2 kB result) in a fresh store, writes the JSON export to a file
(`write_export`, one message at a time) and imports that file (`import_stream`, one
message at a time, written in batches). Peak memory is the process' maximum resident
set size after each phase (`resource.getrusage`), so the figure includes Python itself
and the SQLite page cache.

Rerun: `.venv/bin/python benchmarks/import_bench.py --messages 100000`
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from foldline.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, user
from foldline.store import Store
from foldline.store.export import import_stream, write_export

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


if __name__ == "__main__":
    main()
