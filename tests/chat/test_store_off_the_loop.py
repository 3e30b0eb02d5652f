"""No store call of a turn, its fold gate or its background folds runs on the event loop.

The store is synchronous and the event loop serves every conversation's stream, so the
chat layer reads the store in worker threads and writes it through the ordered
`StoreWriter`. Here every public method of the store raises when it is called on the
event loop (`foldline.testing.loop_guard.LoopGuard`) while a turn (or a manual fold) and
its background work run: turns that prepare and commit folds, an undo that drops a
prepared summary, a failed fold that leaves an emergency digest, and its re-summary
committed when the conversation is idle. Every start of work is armed from the call on:
a send and an edit, a retry, a regeneration, a manual fold with instructions, a branch
switch and a hand-off; their checks (the message, the model, a project's cap) read the
store in a worker thread too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import MODEL, fake_server, filler, make_service, noting_model

from foldline.chat.events import ChatEvent
from foldline.chat.handoff import HandoffRequest
from foldline.chat.service import ChatService
from foldline.chat.turn_handle import TurnHandle
from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.testing import FakeProviderServer, Reply, structured_summary
from foldline.testing.loop_guard import LoopGuard


async def follow(
    guard: LoopGuard, service: ChatService, conversation_id: str, handle: TurnHandle
) -> list[ChatEvent]:
    """The turn's events, and its background work to the end, with the guard armed."""
    with guard.arming():
        events = [event async for event in handle.events()]
        await service.background.wait(conversation_id)
    return events


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(noting_model(lambda request: Reply(text=structured_summary(request)))) as (
        fake
    ):
        yield fake


async def test_the_guard_catches_a_store_call_on_the_loop_and_only_there(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    guard = LoopGuard(store, monkeypatch.setattr)
    conversation = store.create_conversation()
    guard.armed = True
    with pytest.raises(AssertionError, match="get_conversation"):
        store.get_conversation(conversation.id)
    assert guard.on_loop == ["get_conversation"]
    # A worker thread runs no loop: its calls pass.
    assert (await asyncio.to_thread(store.get_conversation, conversation.id)).id == conversation.id
    guard.armed = False
    assert store.get_conversation(conversation.id).id == conversation.id
    assert guard.on_loop == ["get_conversation"]


async def test_turns_folds_and_background_work_stay_off_the_loop(
    server: FakeProviderServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(server, store, tmp_path)
    conversation_id = store.create_conversation(model=MODEL["anthropic"]).id
    guard = LoopGuard(store, monkeypatch.setattr)

    async def turn(text: str) -> list[ChatEvent]:
        guard.armed = True
        handle = await service.start_turn(conversation_id, text)
        return await follow(guard, service, conversation_id, handle)

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
    guard.armed = True
    handle = await service.start_compaction(conversation_id, None)
    events = await follow(guard, service, conversation_id, handle)
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
    guard = LoopGuard(store, monkeypatch.setattr)

    guard.armed = True
    sent = await service.start_turn(conversation_id, "First question.")
    events = await follow(guard, service, conversation_id, sent)
    assert [e.name for e in events][-1] == "done" and "error" not in [e.name for e in events]
    first = next(e for e in events if e.name == "message.created").data["message"]["id"]

    guard.armed = True
    edited = await service.start_edit(conversation_id, first, "The question, again.")
    events = await follow(guard, service, conversation_id, edited)
    assert "error" not in [e.name for e in events]
    assert guard.on_loop == []


# --- every other start of work a route makes -----------------------------------------


def answered_conversation(
    store: Store, exchanges: int, *, words: int = 60, last_failed: bool = False
) -> str:
    """A conversation of `exchanges` questions and answers of about `words` words each,
    written before the guard is armed; with `last_failed`, the last answer ended in an
    error."""
    conversation_id = store.create_conversation(model=MODEL["anthropic"]).id
    for n in range(exchanges):
        store.append_message(conversation_id, user(f"Question {n}. " + filler(n, words)))
        failed = last_failed and n == exchanges - 1
        store.append_message(
            conversation_id,
            assistant("" if failed else f"Answer {n}. " + filler(n + 1, words)),
            status="error" if failed else "complete",
        )
    return conversation_id


@pytest.fixture
def guarded(
    server: FakeProviderServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[ChatService, LoopGuard]:
    return make_service(server, store, tmp_path), LoopGuard(store, monkeypatch.setattr)


async def test_a_retry_starts_off_the_loop(
    guarded: tuple[ChatService, LoopGuard], store: Store
) -> None:
    service, guard = guarded
    conversation_id = answered_conversation(store, 2, last_failed=True)
    guard.armed = True
    handle = await service.start_retry(conversation_id)
    events = await follow(guard, service, conversation_id, handle)
    assert [e.name for e in events][-1] == "done" and "error" not in [e.name for e in events]
    assert store.list_messages(conversation_id)[-1].status == "complete"
    assert guard.on_loop == []


async def test_a_regeneration_starts_off_the_loop(
    guarded: tuple[ChatService, LoopGuard], store: Store
) -> None:
    service, guard = guarded
    conversation_id = answered_conversation(store, 2)
    answer = store.list_messages(conversation_id)[-1]
    guard.armed = True
    handle = await service.start_regenerate(conversation_id, answer.id)
    events = await follow(guard, service, conversation_id, handle)
    assert "error" not in [e.name for e in events]
    assert store.list_messages(conversation_id)[-1].id != answer.id
    assert guard.on_loop == []


async def test_a_manual_fold_with_instructions_starts_off_the_loop(
    guarded: tuple[ChatService, LoopGuard], store: Store
) -> None:
    service, guard = guarded
    conversation_id = answered_conversation(store, 6, words=250)
    guard.armed = True
    handle = await service.start_compaction(conversation_id, "Keep every number.")
    events = await follow(guard, service, conversation_id, handle)
    completed = next(e for e in events if e.name == "compaction.completed")
    assert not completed.data["degraded"]
    assert store.current_compaction(conversation_id) is not None
    assert guard.on_loop == []


async def test_a_branch_switch_is_written_off_the_loop(
    guarded: tuple[ChatService, LoopGuard], store: Store
) -> None:
    service, guard = guarded
    conversation_id = answered_conversation(store, 2)
    first_answer = store.list_messages(conversation_id)[-1]
    question = store.list_messages(conversation_id)[-2]
    store.branch(conversation_id, question.id, assistant("Another answer."))
    assert store.list_messages(conversation_id)[-1].id != first_answer.id
    with guard.arming():
        switched = await service.switch_branch(conversation_id, first_answer.id)
    assert switched.active_leaf_id == first_answer.id
    assert store.list_messages(conversation_id)[-1].id == first_answer.id
    assert guard.on_loop == []


async def test_a_hand_off_starts_and_writes_off_the_loop(
    guarded: tuple[ChatService, LoopGuard], store: Store
) -> None:
    service, guard = guarded
    conversation_id = answered_conversation(store, 4)
    with guard.arming():
        created = await service.hand_off(
            conversation_id, HandoffRequest(None, "Carry every number.", keep_last=2)
        )
    assert store.get_conversation(created.id).message_count == 2
    assert store.current_compaction(created.id) is not None
    assert guard.on_loop == []


async def test_a_made_title_is_read_off_the_loop_and_written_in_order(
    server: FakeProviderServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The title made after the first exchange: its checks read in a worker thread, its
    bill and the title written by the turns' ordered writer."""
    service = make_service(server, store, tmp_path, auto_title=True)
    conversation_id = store.create_conversation(model=MODEL["anthropic"]).id
    writers: dict[str, list[str]] = {"replace_title": [], "record_calls": []}
    for name in ("replace_title", "record_calls"):
        original = getattr(store, name)

        def noted(*args, _name=name, _original=original, **kwargs):  # type: ignore[no-untyped-def]
            writers[_name].append(threading.current_thread().name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(store, name, noted)
    guard = LoopGuard(store, monkeypatch.setattr)
    first = "Why is the sky blue on a clear day?"

    guard.armed = True
    handle = await service.start_turn(conversation_id, first)
    await follow(guard, service, conversation_id, handle)
    with guard.arming():
        await service.titles.wait(conversation_id)
    assert store.get_conversation(conversation_id).title not in ("", first)
    assert guard.on_loop == []
    # The turn's and the title request's bills, the first message's title and the made
    # one: all in the writer's thread.
    assert len(writers["record_calls"]) == 2 and len(writers["replace_title"]) == 2
    threads = writers["record_calls"] + writers["replace_title"]
    assert all(thread.startswith("foldline-store-writer") for thread in threads), threads
