"""An emergency fold re-summarized after the next good turn, through the real SDKs.

The fake server fails every summary request of a fold, so the fold ends in the
extractive digest (degraded). After the next turn the digest is replaced, in the
background and without delaying that turn's `done`, by a model summary of the same
messages, at the same `apiStartIndex`, as a new fold version; while the summarizer
keeps failing, the digest stays and the turns go on undisturbed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import MODEL, WIRES, chat_requests, fake_server, filler, make_service, run

from foldline.chat.folding import resummary_base
from foldline.chat.service import ChatService
from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import CompactionRecord, Store
from foldline.testing import (
    SUMMARY_HEADINGS,
    FakeProviderServer,
    Reply,
    ScriptedModel,
    request_text,
)

MARKER = "RESUMMARY-5531"


def turns_summary(request) -> str:  # type: ignore[no-untyped-def]
    """A structured summary that lists which numbered turns it was given to read."""
    text = request_text(request.messages)
    seen = sorted({int(n) for n in re.findall(r"Turn (\d+):", text)})
    sections = {heading: "None." for heading in SUMMARY_HEADINGS}
    sections["Session Narrative"] = f"{MARKER} turns read: {seen}"
    return "\n\n".join(f"## {h}\n{body}" for h, body in sections.items())


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Sure. " + filler(0, 100)),
        summaries=turns_summary,
    )
    with fake_server(model) as fake:
        yield fake


async def degraded_conversation(
    service: ChatService, server: FakeProviderServer, store: Store, wire: str
) -> tuple[str, CompactionState]:
    """Eight turns, then a manual fold whose every summary request fails."""
    conversation = store.create_conversation(model=MODEL[wire])
    for turn in range(8):
        await run(service, conversation.id, f"Turn {turn}: " + filler(turn, 60))
    server.fail_next("server_error", times=50, on="summary")
    handle = await service.start_compaction(conversation.id, None)
    events = [event async for event in handle.events()]
    completed = [e for e in events if e.name == "compaction.completed"]
    assert completed and completed[0].data["degraded"] is True
    degraded = store.current_compaction(conversation.id)
    assert degraded is not None and degraded.degraded and degraded.strategy == "emergency"
    return conversation.id, degraded


@pytest.mark.parametrize("wire", WIRES)
async def test_the_digest_is_resummarized_after_the_next_turn(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation_id, degraded = await degraded_conversation(service, server, store, wire)
    server.reset()  # the summarizer is healthy again

    events = await run(service, conversation_id, "Turn 6: still there?")

    server.assert_no_errors()
    assert not [e for e in events if e.name in ("error", "compaction.failed")]
    # The turn did not wait for the summarizer: it ended with the re-summary under way.
    assert not [e for e in events if e.name.startswith("compaction.")]
    assert events[-2].name == "context.stats" and events[-1].name == "done"
    assert events[-2].data["backgroundFold"] == {"status": "preparing", "kind": "resummary"}
    assert store.current_compaction(conversation_id) == degraded

    await service.background.wait(conversation_id)
    current = store.current_compaction(conversation_id)
    assert current is not None and not current.degraded
    assert current.strategy == "structured"
    assert current.api_start_index == degraded.api_start_index
    assert current.summarized_range == degraded.summarized_range
    assert current.version == degraded.version + 1
    assert current.trigger == "manual"
    assert service.background.status(conversation_id) is None
    # Committed after the turn ended: the pages showing the conversation are told.
    kinds = [c.kind for c in await service.watch.changes_after(0)]
    assert kinds[-2:] == ["turn.finished", "fold"]
    # Its summarizer call is billed to the new version.
    assert set(store.fold_usage(conversation_id)) == {current.version}
    records = {r.state.version: r for r in store.list_compactions(conversation_id)}
    assert records[degraded.version].state == degraded  # kept, no longer current
    assert not records[degraded.version].is_current
    assert records[current.version].parent_version == degraded.version
    # The summarizer read exactly the folded turns (turn n is display index 2n).
    folded_turns = [n for n in range(7) if 2 * n < degraded.api_start_index]
    assert folded_turns and f"turns read: {folded_turns}" in current.summary_message

    # The next request starts with the new structured summary, not the digest.
    server.reset()
    after = await run(service, conversation_id, "Turn 7: and now?")
    assert not [e for e in after if e.name in ("error", "compaction.completed")]
    first = chat_requests(server)[0].model_request.messages[0].text
    assert MARKER in first and "Emergency digest" not in first
    assert all(f"## {heading}" in first for heading in SUMMARY_HEADINGS)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_still_failing_summarizer_leaves_the_digest_and_the_turn_alone(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation_id, degraded = await degraded_conversation(service, server, store, wire)
    summaries_before = len([r for r in server.requests if r.is_summary])

    events = await run(service, conversation_id, "Turn 6: still there?")
    await service.background.wait(conversation_id)

    assert not [e for e in events if e.name == "error"]
    assert not [e for e in events if e.name.startswith("compaction.")]
    assert events[-1].name == "done"
    last = store.list_messages(conversation_id, offset=0, limit=1000)[-1]
    assert last.message.role == "assistant" and last.status == "complete"
    # It was tried (and failed), and the digest stays current.
    tried = [r for r in server.requests if r.is_summary][summaries_before:]
    assert tried and all(r.failure == "server_error" for r in tried)
    assert store.current_compaction(conversation_id) == degraded
    assert len(store.list_compactions(conversation_id)) == 1


def fold_record(version: int, parent: int, degraded: bool, start: int) -> CompactionRecord:
    state = CompactionState(
        version=version,
        compacted_at="2025-05-05T10:00:00Z",
        summary_message=f"fold {version}",
        api_start_index=start,
        summarized_range=SummarizedRange(from_index=0, to_index=start, message_count=start),
        strategy="emergency" if degraded else "structured",
        trigger="auto",
        tokens_before=0,
        tokens_after=0,
        degraded=degraded,
    )
    return CompactionRecord(state=state, is_current=False, parent_version=parent)


def test_the_resummary_stacks_on_the_nearest_fold_that_is_not_a_digest() -> None:
    good = fold_record(1, 0, False, 10)
    first_digest = fold_record(2, 1, True, 20)
    undone = fold_record(3, 2, False, 25)  # undone: not in the lineage of version 4
    second_digest = fold_record(4, 2, True, 30)
    records = [good, first_digest, undone, second_digest]

    assert resummary_base(records, second_digest.state) == (True, good.state)
    assert resummary_base(records, first_digest.state) == (True, good.state)
    lone = fold_record(1, 0, True, 10)
    assert resummary_base([lone], lone.state) == (True, None)
    orphan = fold_record(5, 9, True, 40)  # its parent is not on record
    assert resummary_base([*records, orphan], orphan.state) == (False, None)
