"""The turn loop with a scripted model: persistence, events, tools, errors, cancel."""

from __future__ import annotations

import asyncio

import pytest

from foldline.chat.events import ChatEvent
from foldline.chat.folding import PreparationBackoff
from foldline.chat.service import ChatService, ChatUnavailable, TurnInProgress
from foldline.providers.base import ProviderError
from foldline.store import Store
from foldline.testing import Reply, ScriptedModel, call, error_step, text_step, tool_step


async def collect(handle) -> list[ChatEvent]:
    return [event async for event in handle.events()]


def names(events: list[ChatEvent]) -> list[str]:
    return [event.name for event in events]


async def test_a_turn_streams_and_persists(store: Store, make_service) -> None:
    model = ScriptedModel(text_step("Hello there, friend."))
    service: ChatService = make_service(model)
    conversation = store.create_conversation(title="t")
    events = await collect(await service.start_turn(conversation.id, "Hi"))
    assert names(events)[0] == "message.created"
    assert "assistant.delta" in names(events)
    assert names(events)[-1] == "done"
    streamed = "".join(e.data["text"] for e in events if e.name == "assistant.delta")
    assert streamed == "Hello there, friend."
    records = store.list_messages(conversation.id)
    assert [r.message.role for r in records] == ["user", "assistant"]
    assert records[1].message.text == "Hello there, friend."
    assert records[1].status == "complete"
    assert records[1].usage is not None
    model.assert_complete()
    # The model received the system prompt, both context tools and the user message.
    request = model.calls[0]
    assert {t.name for t in request.tools} >= {"getContextStats", "compactContext"}
    assert request.messages[-1].text == "Hi"


async def test_tool_loop_runs_tools_and_pairs_results(store: Store, make_service) -> None:
    model = ScriptedModel(tool_step(call("getContextStats", {})), text_step("Plenty of room."))
    service = make_service(model)
    conversation = store.create_conversation()
    events = await collect(await service.start_turn(conversation.id, "How full are you?"))
    assert "tool.call" in names(events) and "tool.result" in names(events)
    roles = [r.message.role for r in store.list_messages(conversation.id)]
    assert roles == ["user", "assistant", "tool", "assistant"]
    second = model.calls[1]
    result = second.messages[-1].tool_results[0]
    assert '"inputBudget"' in result.output
    assert result.call_id == second.messages[-2].tool_calls[0].id


async def test_retryable_error_is_retried_then_succeeds(store: Store, make_service) -> None:
    model = ScriptedModel(
        error_step(ProviderError("rate_limited", "slow down", retry_after=2)),
        text_step("ok now"),
    )
    service = make_service(model)
    conversation = store.create_conversation()
    events = await collect(await service.start_turn(conversation.id, "hi"))
    assert "error" not in names(events)
    assert store.list_messages(conversation.id)[-1].message.text == "ok now"


async def test_auth_error_marks_message_and_emits_error(store: Store, make_service) -> None:
    model = ScriptedModel(error_step(ProviderError("auth", "bad key", status=401)))
    service = make_service(model)
    conversation = store.create_conversation()
    events = await collect(await service.start_turn(conversation.id, "hi"))
    error = next(e for e in events if e.name == "error")
    assert error.data == {"code": "auth", "message": "bad key", "retryable": False}
    last = store.list_messages(conversation.id)[-1]
    assert last.status == "error" and last.error == "bad key"


async def test_cancel_keeps_partial_answer_interrupted(store: Store, make_service) -> None:
    model = ScriptedModel(Reply(text="word " * 200, chunk_chars=5, delay=0.01))
    service = make_service(model)
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, "write a lot")
    seen = 0
    async for event in handle.events():
        if event.name == "assistant.delta":
            seen += 1
            if seen == 5:
                assert service.cancel(conversation.id)
    await asyncio.sleep(0)
    last = store.list_messages(conversation.id)[-1]
    assert last.status == "interrupted"
    assert last.message.text.startswith("word word")
    assert not service.is_running(conversation.id)


async def test_second_turn_while_running_is_refused(store: Store, make_service) -> None:
    model = ScriptedModel(Reply(text="slow " * 50, chunk_chars=5, delay=0.01))
    service = make_service(model)
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, "one")
    with pytest.raises(TurnInProgress):
        await service.start_turn(conversation.id, "two")
    await collect(handle)
    assert [r.message.role for r in store.list_messages(conversation.id)] == ["user", "assistant"]


async def test_preview_names_what_a_fold_would_summarize(store: Store, make_service) -> None:
    model = ScriptedModel(*[text_step(f"Answer {i}. " + "detail " * 300) for i in range(6)])
    service = make_service(model)
    conversation = store.create_conversation(model="test-big")
    for i in range(6):
        await collect(await service.start_turn(conversation.id, f"Question {i}: " + "words " * 200))
    preview = service.preview_compaction(conversation.id).model_dump()
    assert preview["fromIndex"] == 0
    assert 0 < preview["messages"] < 12
    assert preview["toIndex"] == preview["messages"]
    assert preview["tokens"] > 0


async def test_retry_after_an_error_answers_without_a_new_message(
    store: Store, make_service
) -> None:
    model = ScriptedModel(
        error_step(ProviderError("auth", "bad key", status=401)), text_step("Second try works.")
    )
    service = make_service(model)
    conversation = store.create_conversation()
    await collect(await service.start_turn(conversation.id, "hi"))
    events = await collect(await service.start_retry(conversation.id))
    assert "error" not in names(events)
    records = store.list_messages(conversation.id)
    assert [(r.message.role, r.status) for r in records] == [
        ("user", "complete"),
        ("assistant", "error"),
        ("assistant", "complete"),
    ]
    # The model saw the question once, and not the empty failed attempt.
    assert [m.role for m in model.calls[1].messages] == ["user"]
    with pytest.raises(ChatUnavailable):
        await service.start_retry(conversation.id)


def test_resummary_backoff_doubles_the_wait_and_resets() -> None:
    backoff = PreparationBackoff()
    tries = []
    for turn in range(12):
        if backoff.should_try():
            tries.append(turn)
            backoff.failed()
    # Waits of 1, 2, 4 ... turns between attempts while the summarizer keeps failing.
    assert tries == [0, 2, 5, 10]
    backoff.succeeded()
    assert backoff.allows and backoff.should_try()


async def test_stop_during_a_retry_back_off_keeps_the_message_interrupted(
    store: Store, config
) -> None:
    waiting = asyncio.Event()

    async def long_sleep(_seconds: float) -> None:
        waiting.set()
        await asyncio.sleep(3600)

    model = ScriptedModel(error_step(ProviderError("overloaded", "busy", retry_after=30)))
    service = ChatService(
        store, lambda: config, provider_factory=lambda _c, _m: model, sleep=long_sleep
    )
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, "hi")
    await waiting.wait()
    assert service.cancel(conversation.id)
    events = await collect(handle)
    assert events[-1].name == "done" and events[-1].data == {"cancelled": True}
    last = store.list_messages(conversation.id)[-1]
    assert (last.message.role, last.status) == ("assistant", "interrupted")


async def test_lone_surrogates_are_replaced_so_the_answer_is_stored(
    store: Store, make_service
) -> None:
    model = ScriptedModel(text_step("bad \ud800 high, \udfff low, fine \U0001f600"))
    service = make_service(model)
    conversation = store.create_conversation()
    events = await collect(await service.start_turn(conversation.id, "odd \udc00 question"))
    assert names(events)[-1] == "done"
    records = store.list_messages(conversation.id)
    assert records[0].message.text == "odd \ufffd question"
    assert records[1].message.text == "bad \ufffd high, \ufffd low, fine \U0001f600"
    assert records[1].status == "complete"
