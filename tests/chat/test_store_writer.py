"""The turns' writes run off the event loop, in order, and survive a Stop."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from foldline.chat import background, tool_registry
from foldline.chat.service import ChatService
from foldline.chat.store_writer import StoreWriter
from foldline.store import Store
from foldline.testing import Reply, ScriptedModel, call, tool_step


async def test_writes_land_in_the_order_they_were_asked_for() -> None:
    writer = StoreWriter()
    landed: list[int] = []

    def write(number: int, seconds: float) -> int:
        time.sleep(seconds)
        landed.append(number)
        return number

    # The first writes are the slowest: a pool of threads would let the later overtake.
    queued = [writer.submit(write, number, 0.02 * (5 - number)) for number in range(5)]
    assert await writer.run(write, 5, 0.0) == 5
    assert landed == [0, 1, 2, 3, 4, 5]
    assert [future.result() for future in queued] == [0, 1, 2, 3, 4]
    writer.close()


async def test_a_cancelled_caller_does_not_cancel_its_write() -> None:
    writer = StoreWriter()
    release = threading.Event()
    landed: list[str] = []

    def first() -> None:
        release.wait(5)
        landed.append("first")

    writer.submit(first)  # keeps the next write queued, not yet started
    waiting = asyncio.ensure_future(writer.run(landed.append, "second"))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await writer.run(landed.append, "third")
    assert landed == ["first", "second", "third"]
    writer.close()


async def test_a_stop_while_the_answer_row_is_written_leaves_it_interrupted(
    store: Store, make_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()
    append = store.append_message

    def slow_append(conversation_id: str, message, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("status") == "streaming":
            entered.set()
            release.wait(5)
        return append(conversation_id, message, **kwargs)

    monkeypatch.setattr(store, "append_message", slow_append)
    service: ChatService = make_service(ScriptedModel(Reply(text="never streamed")))
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, "hi")
    assert await asyncio.to_thread(entered.wait, 5)
    assert service.cancel(conversation.id)
    await asyncio.sleep(0.1)  # the Stop has landed while the row is still being written
    release.set()
    events = [event async for event in handle.events()]
    assert events[-1].name == "done" and events[-1].data == {"cancelled": True}
    last = store.list_messages(conversation.id)[-1]
    assert (last.message.role, last.status) == ("assistant", "interrupted")


async def test_a_slow_flush_never_lands_after_the_final_write(
    store: Store, make_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    update = store.update_message
    flushes: list[str] = []

    def slow_flush(message_id: str, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("status") == "streaming":
            time.sleep(1.0)  # still writing when the stream has ended
            flushes.append(message_id)
        return update(message_id, **kwargs)

    monkeypatch.setattr(store, "update_message", slow_flush)
    text = "word " * 40
    service: ChatService = make_service(ScriptedModel(Reply(text=text, chunk_chars=5, delay=0.01)))
    conversation = store.create_conversation()
    events = [event async for event in (await service.start_turn(conversation.id, "hi")).events()]
    assert events[-1].name == "done"
    assert flushes  # the stream lasted long enough to flush at least once
    last = store.list_messages(conversation.id)[-1]
    assert (last.status, last.message.text) == ("complete", text)


async def test_a_turn_writes_loads_and_truncates_off_the_event_loop(
    store: Store, make_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    on_loop: list[str] = []

    def watch(owner: object, name: str) -> None:
        original = getattr(owner, name)

        def watched(*args, **kwargs):  # type: ignore[no-untyped-def]
            if threading.get_ident() == loop_thread:
                on_loop.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, watched)

    for name in (
        "append_message",
        "update_message",
        "replace_title",
        "record_calls",
        "get_calibration",
        "set_calibration",
        "load_window",
        "list_pins",
        "usage_totals",
    ):
        watch(store, name)
    watch(tool_registry, "truncate_tool_output")
    model = ScriptedModel(
        tool_step(call("getContextStats", {})),
        Reply(text="word " * 100, chunk_chars=5, delay=0.005),  # long enough to flush
    )
    service: ChatService = make_service(model)
    conversation = store.create_conversation()
    events = [event async for event in (await service.start_turn(conversation.id, "hi")).events()]
    assert events[-1].name == "done" and "error" not in [event.name for event in events]
    model.assert_complete()
    assert on_loop == []


async def test_a_prepared_fold_is_checked_and_committed_off_the_event_loop(
    store: Store, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking that a prepared summary still fits hashes every folded message (twice,
    at every gate); that, the count of the view after it and its commit stay off the
    loop."""
    from fake_sessions import MODEL, fake_server, filler, make_service, noting_model, run

    from foldline.testing import structured_summary

    loop_thread = threading.get_ident()
    calls: dict[str, list[bool]] = {"fingerprint": [], "tokens_after": [], "commit_fold": []}

    def watch(owner: object, name: str) -> None:
        original = getattr(owner, name)

        def watched(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls[name].append(threading.get_ident() == loop_thread)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, watched)

    watch(background, "fingerprint")
    watch(background, "tokens_after")
    watch(store, "commit_fold")
    with fake_server(noting_model(lambda request: Reply(text=structured_summary(request)))) as (
        server
    ):
        service = make_service(server, store, tmp_path)
        conversation = store.create_conversation(model=MODEL["anthropic"])
        folded = False
        for turn in range(40):
            events = await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 80))
            await service.background.wait(conversation.id)
            folded = any(event.name == "compaction.completed" for event in events)
            if folded:
                break
    assert folded, "no prepared fold ever landed"
    assert calls["fingerprint"] and calls["tokens_after"] and calls["commit_fold"]
    assert not any(on_loop for seen in calls.values() for on_loop in seen)
