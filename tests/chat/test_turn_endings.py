"""Every way out of a turn leaves the answer stored complete or interrupted.

A Stop that lands just as an answer finishes (while its last writes run) used to leave
it `streaming` with the parts of its last flush, often none; an unexpected failure used
to show the exception's own text to the person.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from foldline.chat.service import INTERNAL_ERROR
from foldline.core.messages import ToolCallPart
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step


async def collect(handle) -> list:
    return [event async for event in handle.events()]


def settled(store: Store, conversation_id: str, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while True:
        answer = [r for r in store.list_messages(conversation_id) if r.message.role == "assistant"]
        if (answer and answer[-1].status != "streaming") or time.monotonic() > deadline:
            return answer[-1]
        time.sleep(0.02)


@pytest.mark.parametrize("blocked", ["record_calls", "set_calibration"])
async def test_stop_while_the_finished_answer_is_written_keeps_it_complete(
    store: Store, make_service, monkeypatch: pytest.MonkeyPatch, blocked: str
) -> None:
    model = ScriptedModel(
        tool_step(call("getContextStats", {"why": "x"}), text="Let me look at the numbers.")
    )
    service = make_service(model)
    conversation = store.create_conversation()
    entered, release = threading.Event(), threading.Event()
    original = getattr(store, blocked)

    def held(*args, **kwargs):
        entered.set()
        release.wait(5)
        return original(*args, **kwargs)

    monkeypatch.setattr(store, blocked, held)
    handle = await service.start_turn(conversation.id, "How full is the context?")
    events = asyncio.ensure_future(collect(handle))
    await asyncio.to_thread(entered.wait, 5)
    assert service.cancel(conversation.id)
    seen = await events
    assert seen[-1].name == "done" and seen[-1].data == {"cancelled": True}
    release.set()
    answer = await asyncio.to_thread(settled, store, conversation.id)
    assert answer.status == "complete"
    assert answer.message.text == "Let me look at the numbers."
    assert [part.name for part in answer.message.parts if isinstance(part, ToolCallPart)] == [
        "getContextStats"
    ]


async def test_an_unexpected_failure_shows_a_plain_message_and_logs_the_details(
    store: Store, make_service, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    service = make_service(ScriptedModel(text_step("Hello.")))
    conversation = store.create_conversation()

    def broken(*args, **kwargs):
        raise RuntimeError("secret /home/someone/path in the internals")

    monkeypatch.setattr(store, "record_calls", broken)
    events = await collect(await service.start_turn(conversation.id, "Hi"))
    errors = [event.data for event in events if event.name == "error"]
    assert len(errors) == 1
    assert errors[0]["message"] == INTERNAL_ERROR and "secret" not in str(errors[0])
    assert "secret /home/someone/path" in caplog.text
    answer = settled(store, conversation.id)
    assert answer.status == "complete" and answer.message.text == "Hello."


async def test_a_failure_in_the_middle_of_the_stream_keeps_the_answer_interrupted(
    store: Store, make_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(ScriptedModel(text_step("Half an answer, then trouble.")))
    conversation = store.create_conversation()
    from foldline.chat import model_call

    real = model_call.without_lone_surrogates
    seen: list[str] = []

    def failing(text: str) -> str:
        seen.append(text)
        if len(seen) == 3:
            raise RuntimeError("broken in the middle")
        return real(text)

    monkeypatch.setattr(model_call, "without_lone_surrogates", failing)
    events = await collect(await service.start_turn(conversation.id, "Hi"))
    assert [event.name for event in events][-2:] == ["error", "done"]
    answer = settled(store, conversation.id)
    assert answer.status == "interrupted"
    assert answer.message.text == "".join(seen[:2])
