"""Memory through the real SDKs against the fake server: what the person said survives.

A summarizer that ignores the requested format (as many local models do) and keeps none
of the person's details must not cost them: its summary is kept free-form and the
person's own words stay after it, fold after fold. Pinned messages ride in
every request after the summary, through folds and undo.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import (
    MODEL,
    WIRES,
    chat_requests,
    fake_server,
    filler,
    make_service,
    noting_model,
    run,
)

from foldline.chat.events import ChatEvent
from foldline.store import Store
from foldline.testing import FakeProviderServer, ScriptedModel

FACTS = (
    "Use port 8081 for the staging API.",
    "The config lives at /etc/foldline/staging.toml and nowhere else.",
    "Never push directly to the release branch.",
)
MUST_SURVIVE = (
    "Use port 8081 for the staging API.",  # an instruction, whole
    "/etc/foldline/staging.toml",  # a path
    "Never push directly to the release branch.",
)


def format_ignoring_summary(request: object) -> str:
    """Prose without the six headings and without a single detail of the person's."""
    return "The person and the assistant discussed the storage layer at length."


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(ScriptedModel(when_empty="echo", summaries=format_ignoring_summary)) as fake:
        yield fake


def first_message(server: FakeProviderServer) -> str:
    final = chat_requests(server)[-1].model_request
    assert final is not None
    return final.messages[0].text


@pytest.mark.parametrize("wire", WIRES)
async def test_first_turn_facts_survive_a_format_ignoring_summarizer(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = noting_model(format_ignoring_summary)
    events: list[ChatEvent] = []
    for turn in range(1, 41):
        fact = FACTS[turn - 1] if turn <= len(FACTS) else ""
        events += await run(service, conversation.id, f"Turn {turn}. {fact} " + filler(turn, 80))

    server.assert_no_errors()
    assert not [e for e in events if e.name == "error"]
    folds = [e for e in events if e.name == "compaction.completed"]
    assert len(folds) >= 3, "the folds must stack"
    assert all(f.data["strategy"] == "free-form" and not f.data["degraded"] for f in folds)
    assert all(f.data["detailsAppended"] >= 1 for f in folds)
    assert folds[-1].data["detailsTotal"] >= len(FACTS)  # carried from the first fold on
    seen = first_message(server)
    # The model's own summary was kept (the whole view printed if not: a failure seen
    # once under load in CI, not reproduced since).
    assert "discussed the storage layer" in seen, seen
    assert "<person-words>" in seen
    for detail in MUST_SURVIVE:
        assert detail in seen, f"{detail!r} was lost in the folds"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_pin_rides_in_every_request_through_folds_and_undo(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = noting_model(format_ignoring_summary)
    pinned = "Pinned brief: the budget is 1234 credits, owner Mireille."
    await run(service, conversation.id, pinned)
    first = store.list_messages(conversation.id, limit=1)[0]
    store.set_pinned(conversation.id, first.id, True)

    folded_requests = 0
    for turn in range(2, 36):
        await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 80))
        request = chat_requests(server)[-1].model_request
        assert request is not None
        texts = [m.text for m in request.messages]
        assert sum(pinned in text for text in texts) == 1, "the pin is sent exactly once"
        if "[Conversation summary" in texts[0]:
            folded_requests += 1
            assert "Pinned by the person" in texts[0] and pinned in texts[0]
    assert folded_requests >= 5
    assert len(store.list_compactions(conversation.id)) >= 2

    current = store.current_compaction(conversation.id)
    assert current is not None
    store.undo_fold(conversation.id, current.version)
    await run(service, conversation.id, "After the undo.")
    assert pinned in first_message(server)

    store.set_pinned(conversation.id, first.id, False)
    await run(service, conversation.id, "After the unpin.")
    assert pinned not in first_message(server)
