"""Builders shared by the store tests (not collected: no `test_` prefix)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import Store
from foldline.store.schema import rebuild_search_index


def ticking_clock(start: datetime | None = None) -> Callable[[], datetime]:
    """A clock that advances one second per reading, so timestamps order writes."""
    origin = start or datetime(2025, 1, 1, tzinfo=UTC)
    counter = itertools.count()
    return lambda: origin + timedelta(seconds=next(counter))


def fold_state(
    version: int,
    api_start_index: int,
    *,
    previous_start: int = 0,
    summary: str | None = None,
    trigger: str = "auto",
    degraded: bool = False,
) -> CompactionState:
    return CompactionState(
        version=version,
        compacted_at=f"2025-02-01T00:00:{version:02d}Z",
        summary_message=summary or f"summary of everything before {api_start_index}",
        api_start_index=api_start_index,
        summarized_range=SummarizedRange(
            from_index=previous_start,
            to_index=api_start_index,
            message_count=api_start_index - previous_start,
        ),
        strategy="emergency" if degraded else "structured",
        trigger=trigger,  # type: ignore[arg-type]
        tokens_before=1000 * version,
        tokens_after=100 * version,
        model=None if degraded else "claude-sonnet-4-5",
        degraded=degraded,
    )


def exchange(n: int) -> list[Message]:
    """One user turn with a tool round trip: user, assistant(call), tool(result), assistant."""
    call = ToolCallPart(id=f"call_{n}", name="shell", input={"cmd": f"ls dir{n}"})
    return [
        user(f"question {n}"),
        assistant(f"let me look {n}", call),
        tool_results(ToolResultPart(call_id=f"call_{n}", name="shell", output=f"file{n}.txt")),
        assistant(f"answer {n}"),
    ]


def every_kind_of_part() -> Message:
    return Message(
        role="assistant",
        parts=(
            ReasoningPart(text="thinking about ünïcödé", signature="sig=="),
            TextPart(text="Here is `code` and a fence ```"),
            ToolCallPart(id="c1", name="read_file", input={"path": "a.py", "lines": [1, 2]}),
        ),
    )


def rich_history() -> list[Message]:
    return [
        user("start"),
        every_kind_of_part(),
        tool_results(
            ToolResultPart(
                call_id="c1",
                name="read_file",
                output="[truncated]",
                full_output="print('hello')\n" * 3,
                is_error=False,
                compacted_at="2025-03-01T00:00:00Z",
            )
        ),
        Message(
            role="user",
            parts=(
                TextPart(text="see attached"),
                AttachmentPart(name="notes.md", media_type="text/markdown", text="# Notes"),
                AttachmentPart(
                    name="pic.png",
                    media_type="image/png",
                    # A whole 1x1 PNG: an import checks a file as an upload is checked.
                    data_base64="iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mPQqDgBAAI0AWkmu/ajAAAAAElFTkSuQmCC",
                ),
            ),
        ),
        assistant("done"),
    ]


def search_index_contents(store: Store) -> list[tuple[object, ...]]:
    """Every (term, rowid, column, offset) in the full-text index."""
    conn = store._pool.get().conn
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_instances "
        "USING fts5vocab('main', 'messages_fts', 'instance')"
    )
    return conn.execute("SELECT * FROM temp.fts_instances ORDER BY 1, 2, 3, 4").fetchall()


def assert_index_matches_a_fresh_rebuild(store: Store) -> None:
    """The triggers kept the index exactly as a rebuild from the parts would make it.

    (FTS5's own integrity-check cannot see a wrong 'delete' on a contentless table.)"""
    maintained = search_index_contents(store)
    with store._pool.write():
        rebuild_search_index(store._pool.get())
    assert maintained == search_index_contents(store)
