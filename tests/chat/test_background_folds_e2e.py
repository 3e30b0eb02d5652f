"""Folds nobody waits for, through the real SDKs against the fake server.

With the defaults (`prepare_threshold`, `threshold`, the hard threshold; the assertions
read them) a turn that ends above `prepare_threshold` starts the next fold's summary in
the background; earlier (down to the target) when the view grows faster than a summary
is written, as these turns with no pause do. The fold lands at a later gate with no
summarizer call in that turn. A turn that finds the summary still being written goes
ahead unfolded unless its request would overflow the input budget, where it waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fake_sessions import MODEL, WIRES, fake_server, filler, make_service, noting_model, run

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.core.messages import ToolSpec
from foldline.core.settings import CompactionSettings
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    Reply,
    structured_summary,
)

DEFAULTS = CompactionSettings()
SUMMARY_DELAY = 0.6
"""Seconds the fake summarizer takes (one delta, after this delay)."""


def slow_summary(request) -> Reply:  # type: ignore[no-untyped-def]
    text = structured_summary(request)
    return Reply(text=text, chunk_chars=len(text), delay=SUMMARY_DELAY)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(noting_model(slow_summary)) as fake:
        yield fake


def summary_requests(server: FakeProviderServer) -> int:
    return len([r for r in server.requests if r.is_summary])


async def turns_until_preparing(
    service: ChatService, conversation_id: str, limit: int = 40
) -> list[ChatEvent]:
    """Run turns until one ends with a fold being prepared; return that turn's events."""
    for turn in range(limit):
        events = await run(service, conversation_id, f"Turn {turn}. " + filler(turn, 80))
        assert not [e for e in events if e.name in ("error", "compaction.completed")]
        if events[-2].data["backgroundFold"] is not None:
            return events
    raise AssertionError("no fold was ever prepared")


async def preparing_a_fold(
    server: FakeProviderServer,
    store: Store,
    tmp_path: Path,
    *,
    from_prepare_threshold: bool = False,
) -> tuple[ChatService, str, list[ChatEvent]]:
    """A service and an Anthropic-wire conversation whose last turn (its events returned)
    started preparing a fold in the background. `from_prepare_threshold`: summaries are
    known to be quick, so it starts at `prepare_threshold` whatever the pace, and
    the view stays where a fold is prepared however slowly the machine runs the turns
    (the pace is measured on the wall clock)."""
    service = make_service(server, store, tmp_path)
    if from_prepare_threshold:
        service.background.summary_seconds = 0.0
    conversation = store.create_conversation(model=MODEL["anthropic"])
    events = await turns_until_preparing(service, conversation.id)
    return service, conversation.id, events


@pytest.mark.parametrize("wire", WIRES)
async def test_a_prepared_fold_is_committed_with_no_summary_call_in_the_turn(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    events = await turns_until_preparing(service, conversation.id)
    stats = events[-2].data
    assert stats["backgroundFold"] == {"status": "preparing", "kind": "fold"}
    # Turns with no pause: started before `prepare_threshold`, early enough for
    # the pace, and never below the target.
    assert DEFAULTS.target <= stats["fraction"] < DEFAULTS.prepare_threshold
    await service.background.wait(conversation.id)
    ready = service.context(conversation.id, include_messages=False).model_dump()["backgroundFold"]
    assert ready == {"status": "ready", "kind": "fold"}

    folded: list[ChatEvent] = []
    for turn in range(10):
        before = summary_requests(server)
        events = []
        async for event in (
            await service.start_turn(conversation.id, f"More {turn}. " + filler(turn, 80))
        ).events():
            events.append(event)
            if event.name == "assistant.delta":
                # Nothing summarized inside the turn, up to its answer (the next fold's
                # summary may start in the background once the turn has ended).
                assert summary_requests(server) == before
        folded = [e for e in events if e.name == "compaction.completed"]
        if folded:
            break
    assert folded, "the prepared fold never landed"
    completed = folded[0].data
    assert completed["prepared"] is True and completed["degraded"] is False
    assert completed["tokensAfter"] < DEFAULTS.threshold * stats["inputBudget"]
    # The fold lands at the gate, before the model call of that turn.
    names = [e.name for e in events]
    assert names.index("compaction.completed") < names.index("assistant.delta")
    state = store.current_compaction(conversation.id)
    assert state is not None and state.version == completed["version"]
    # What the summary cost is billed to the fold it became.
    fold_usage = store.fold_usage(conversation.id)
    assert set(fold_usage) == {state.version}
    assert fold_usage[state.version].calls >= 1
    server.assert_no_errors()


async def test_under_the_hard_threshold_a_turn_does_not_wait_for_the_summary(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id, _ = await preparing_a_fold(server, store, tmp_path)
    # The summary is still being written when the next turn runs to its end.
    events = await run(service, conversation_id, "Quick question. " + filler(50, 300))
    assert not [e for e in events if e.name.startswith("compaction.")]
    assert events[-2].data["fraction"] < DEFAULTS.hard_threshold
    assert events[-2].data["backgroundFold"] == {"status": "preparing", "kind": "fold"}
    await service.background.wait(conversation_id)


async def test_a_request_over_the_budget_waits_for_the_prepared_summary(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    # Summaries known to be quick: the preparation starts at `prepare_threshold`, as for
    # a person who pauses, so the prepared fold still fits after the paste.
    service.background.summary_seconds = 0.0
    conversation_id = store.create_conversation(model=MODEL["anthropic"]).id
    events = await turns_until_preparing(service, conversation_id)
    assert events[-2].data["fraction"] >= DEFAULTS.prepare_threshold
    # A message large enough to take the view past the input budget at once (filler
    # words are about 1.3 tokens each): the only case where a turn waits.
    stats = events[-2].data
    words = int((1.04 - stats["fraction"]) * stats["inputBudget"] / 1.3)
    events = []
    summaries_at_fold = None
    async for event in (
        await service.start_turn(conversation_id, "Paste. " + filler(60, words))
    ).events():
        events.append(event)
        if event.name == "compaction.completed":
            summaries_at_fold = summary_requests(server)

    started = [e for e in events if e.name == "compaction.started"]
    completed = [e for e in events if e.name == "compaction.completed"]
    assert started and started[0].data.get("waiting") is True
    assert completed and completed[0].data["prepared"] is True
    # It waited for the one summary under way instead of starting another (the next
    # fold's may start once the turn has ended).
    assert summaries_at_fold == 1
    assert len([e for e in events if e.name == "compaction.started"]) == 1
    assert not [e for e in events if e.name == "error"]


async def test_an_undo_drops_the_prepared_summary_and_keeps_its_cost(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL["openai"])
    for turn in range(8):
        await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 80))
    handle = await service.start_compaction(conversation.id, None)
    assert [e async for e in handle.events() if e.name == "compaction.completed"]
    await turns_until_preparing(service, conversation.id)
    await service.background.wait(conversation.id)
    version = store.current_compaction(conversation.id).version
    store.undo_fold(conversation.id, version)
    # The meter's "next fold ready" badge goes with it: that summary no longer applies.
    assert service.context(conversation.id, include_messages=False).background_fold is None

    events = await run(service, conversation.id, "After the undo.")
    assert not [e for e in events if e.name == "compaction.completed" and e.data.get("prepared")]
    dropped = [c for c in store.list_calls(conversation.id) if c.purpose == "summary"]
    assert [c.fold_version for c in dropped].count(None) >= 1
    await service.background.wait(conversation.id)


async def test_deleting_a_conversation_cancels_its_background_work(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id, _ = await preparing_a_fold(server, store, tmp_path)
    entry = service.background.of(conversation_id).prepared
    assert entry is not None
    task = entry.task
    assert not task.done()  # the summary takes SUMMARY_DELAY: it is still being written
    service.background.cancel(conversation_id)
    store.delete_conversation(conversation_id)
    await service.background.wait(conversation_id)
    # A task waiting on a worker thread takes a few loop turns to end once cancelled;
    # had the cancel not reached it, it would end with its summary instead.
    await asyncio.wait({task})
    assert task.cancelled()
    assert service.background.status(conversation_id) is None


async def test_after_a_pause_longer_than_the_cache_lifetime_a_ready_fold_lands_early(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id, events = await preparing_a_fold(
        server, store, tmp_path, from_prepare_threshold=True
    )
    assert events[-2].data["fraction"] < DEFAULTS.threshold  # not due yet
    await service.background.wait(conversation_id)
    # Six minutes later (the clock, not the test, waits): the prompt cache is cold.
    service.background.clock = lambda: datetime.now(UTC) + timedelta(minutes=6)

    events = await run(service, conversation_id, "Back from a break.")
    completed = [e for e in events if e.name == "compaction.completed"]
    started = [e for e in events if e.name == "compaction.started"]
    assert completed and completed[0].data["prepared"] is True
    assert "prompt cache expired" in started[0].data["reason"]


class NewTools:
    """A tool source whose list appears between two turns (an MCP server's list changed)."""

    def tools(self) -> list:
        return [Echo()]

    async def prepare(self) -> list[ChatEvent]:
        return []

    async def shutdown(self) -> None:
        return None


class Echo:
    spec = ToolSpec(name="echo", description="Echo.", input_schema={"type": "object"})

    async def run(self, call, env):  # type: ignore[no-untyped-def]
        raise AssertionError("not called")


async def test_a_changed_tool_list_lands_a_ready_fold_early(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id, events = await preparing_a_fold(
        server, store, tmp_path, from_prepare_threshold=True
    )
    assert events[-2].data["fraction"] < DEFAULTS.threshold  # not due yet
    await service.background.wait(conversation_id)
    service.tool_sources.append(NewTools())  # the cached prefix changes at the next call

    events = await run(service, conversation_id, "Right away.")
    completed = [e for e in events if e.name == "compaction.completed"]
    started = [e for e in events if e.name == "compaction.started"]
    assert completed and completed[0].data["prepared"] is True
    assert "tools offered changed" in started[0].data["reason"]


async def test_without_a_pause_a_ready_fold_waits_until_it_is_due(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id, _ = await preparing_a_fold(server, store, tmp_path)
    await service.background.wait(conversation_id)
    events = await run(service, conversation_id, "Short one.")
    assert not [e for e in events if e.name.startswith("compaction.")]


async def test_a_change_of_reasoning_effort_lands_a_ready_fold_early(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id, events = await preparing_a_fold(
        server, store, tmp_path, from_prepare_threshold=True
    )
    assert events[-2].data["fraction"] < DEFAULTS.threshold  # not due yet
    await service.background.wait(conversation_id)
    # The person raises the effort: the next request misses the prompt cache anyway.
    store.update_conversation(conversation_id, settings={"reasoning": {"effort": "high"}})

    events = await run(service, conversation_id, "Think harder now.")
    completed = [e for e in events if e.name == "compaction.completed"]
    started = [e for e in events if e.name == "compaction.started"]
    assert completed and completed[0].data["prepared"] is True
    assert "reasoning effort changed" in started[0].data["reason"]


async def test_a_manual_fold_clears_the_ready_badge_of_the_summary_it_replaced(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id, _ = await preparing_a_fold(
        server, store, tmp_path, from_prepare_threshold=True
    )
    await service.background.wait(conversation_id)
    context = service.context(conversation_id, include_messages=False)
    assert context.model_dump()["backgroundFold"] == {"status": "ready", "kind": "fold"}

    handle = await service.start_compaction(conversation_id, None)
    assert [e async for e in handle.events() if e.name == "compaction.completed"]
    # The prepared summary was written on the fold before: it cannot be used any more.
    assert service.context(conversation_id, include_messages=False).background_fold is None


async def test_the_pages_hear_of_a_prepared_summary_once_its_calibration_is_stored(
    server: FakeProviderServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On the OpenAI wire the count is calibrated, and the summarizer's calls (the
    # conversation's own model) refine the ratio: the meter's number moves when the
    # summary is ready, with no turn to send it, so the pages are told.
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL["openai"])
    events = await turns_until_preparing(service, conversation.id)
    at_turn_end = store.get_calibration("fake-openai", MODEL["openai"])
    heard: list[tuple[int, int]] = []
    publish = service.background.on_prepared

    def hear(conversation_id: str) -> None:
        calibration = store.get_calibration("fake-openai", MODEL["openai"])
        tokens = service.context(conversation_id, include_messages=False).tokens
        heard.append((calibration.samples, tokens))
        publish(conversation_id)

    service.background.on_prepared = hear
    # The samples are written in the store's writer thread, queued without waiting; a
    # slow disk there must not let the pages read the count before the sample.
    store_sample = store.set_calibration

    def slow_sample(*args: Any) -> None:
        time.sleep(0.3)
        store_sample(*args)

    monkeypatch.setattr(store, "set_calibration", slow_sample)
    await service.background.wait(conversation.id)

    after = store.get_calibration("fake-openai", MODEL["openai"])
    assert after.samples > at_turn_end.samples  # the summary's call was a sample
    now = service.context(conversation.id, include_messages=False)
    assert now.background_fold is not None and now.background_fold.status == "ready"
    # Heard once, after the sample was stored: the count the page reads then is current.
    assert heard == [(after.samples, now.tokens)]
    changes = await service.watch.changes_after(0)
    assert [c.kind for c in changes][-2:] == ["turn.finished", "context"]
    assert changes[-1].conversation_id == conversation.id
    assert events[-2].data["backgroundFold"] == {"status": "preparing", "kind": "fold"}
