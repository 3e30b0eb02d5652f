"""No store call of a turn, its fold gate or its background folds runs on the event loop.

The store is synchronous and the event loop serves every conversation's stream, so the
chat layer reads the store in worker threads and writes it through the ordered
`StoreWriter`. Here every public method of the store raises when it is called on the
event loop's thread while a turn (or a manual fold) and its background work run: turns
that prepare and commit folds, an undo that drops a prepared summary, a failed fold that
leaves an emergency digest, and its re-summary committed when the conversation is idle.
The server's starts of a send and an edit (`start_turn_off_loop`, `start_edit_off_loop`)
are armed from the call on: their checks (the message, the model, a project's cap) read
the store in a worker thread too.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import MODEL, fake_server, filler, make_service, noting_model

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.chat.turn_handle import TurnHandle
from foldline.store import Store
from foldline.testing import FakeProviderServer, Reply, structured_summary


class LoopGuard:
    """Makes every public method of a store raise on the event loop's thread while armed."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.loop_thread = threading.get_ident()
        self.armed = False
        self.on_loop: list[str] = []
        for name, method in inspect.getmembers(store, inspect.ismethod):
            if not name.startswith("_"):
                monkeypatch.setattr(store, name, self._guarded(name, method))

    def _guarded(self, name: str, method):  # type: ignore[no-untyped-def]
        def guarded(*args, **kwargs):  # type: ignore[no-untyped-def]
            if self.armed and threading.get_ident() == self.loop_thread:
                self.on_loop.append(name)
                raise AssertionError(f"Store.{name} called on the event loop")
            return method(*args, **kwargs)

        return guarded

    async def follow(
        self, service: ChatService, conversation_id: str, handle: TurnHandle
    ) -> list[ChatEvent]:
        """The turn's events, and its background work to the end, with the guard armed."""
        self.armed = True
        try:
            events = [event async for event in handle.events()]
            await service.background.wait(conversation_id)
        finally:
            self.armed = False
        return events


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(noting_model(lambda request: Reply(text=structured_summary(request)))) as (
        fake
    ):
        yield fake


def test_the_guard_catches_a_store_call_on_the_loop(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    guard = LoopGuard(store, monkeypatch)
    conversation = store.create_conversation()
    guard.armed = True
    with pytest.raises(AssertionError, match="get_conversation"):
        store.get_conversation(conversation.id)
    assert guard.on_loop == ["get_conversation"]


async def test_turns_folds_and_background_work_stay_off_the_loop(
    server: FakeProviderServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(server, store, tmp_path)
    conversation_id = store.create_conversation(model=MODEL["anthropic"]).id
    guard = LoopGuard(store, monkeypatch)

    async def turn(text: str) -> list[ChatEvent]:
        guard.armed = True
        handle = await service.start_turn_off_loop(conversation_id, text)
        return await guard.follow(service, conversation_id, handle)

    # Turns until a fold prepared in the background lands at a gate.
    prepared_landed = False
    for n in range(40):
        events = await turn(f"Turn {n}. " + filler(n, 80))
        assert "error" not in [event.name for event in events]
        if any(e.name == "compaction.completed" and e.data["prepared"] for e in events):
            prepared_landed = True
            break
    assert prepared_landed

    # A summary prepared, then dropped at the next gate after an undo.
    for n in range(40, 80):
        await turn(f"Turn {n}. " + filler(n, 80))
        if service.background.status(conversation_id) is not None:
            break
    assert service.background.status(conversation_id) is not None
    version = store.current_compaction(conversation_id).version
    store.undo_fold(conversation_id, version)
    await turn("After the undo.")

    # A manual fold whose summarizer fails leaves a digest; the next turn starts its
    # re-summary, committed once the conversation is idle.
    server.fail_next("server_error", times=50, on="summary")
    handle = service.start_compaction(conversation_id, None)
    events = await guard.follow(service, conversation_id, handle)
    assert next(e for e in events if e.name == "compaction.completed").data["degraded"]
    server.reset()
    await turn("Still there?")
    current = store.current_compaction(conversation_id)
    assert current is not None and not current.degraded

    assert guard.on_loop == []


async def test_the_checks_before_a_send_or_an_edit_stay_off_the_loop(
    server: FakeProviderServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(server, store, tmp_path)
    # In a project, so the start also checks the project's cap (a whole context load).
    project = store.create_project(name="Shared", instructions="Answer briefly.")
    conversation_id = store.create_conversation(model=MODEL["anthropic"], project_id=project.id).id
    guard = LoopGuard(store, monkeypatch)

    guard.armed = True
    sent = await service.start_turn_off_loop(conversation_id, "First question.")
    events = await guard.follow(service, conversation_id, sent)
    assert [e.name for e in events][-1] == "done" and "error" not in [e.name for e in events]
    first = next(e for e in events if e.name == "message.created").data["message"]["id"]

    guard.armed = True
    edited = await service.start_edit_off_loop(conversation_id, first, "The question, again.")
    events = await guard.follow(service, conversation_id, edited)
    assert "error" not in [e.name for e in events]
    assert guard.on_loop == []
