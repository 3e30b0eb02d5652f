"""Continue after a cut-off answer, through the real `anthropic` and `openai` SDKs.

The fake server cuts the stream after a few deltas (the answer is stored `interrupted`
with its text so far); Continue (`ChatService.start_retry`) must then extend that same
message: one message in the history, its text the old text plus the new, `complete`
and marked continued. The fake server refuses a final assistant message on the
Anthropic wire, as Claude models since 4.6 do, so the request must end with a user turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import MODEL, WIRES, chat_requests, fake_server, make_service, run

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.chat.tool_registry import ToolEnv, ToolOutcome
from foldline.config import AppConfig
from foldline.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec
from foldline.core.view import CONTINUE_PROMPT, INTERRUPTED_RESULT
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    Reply,
    ScriptedModel,
    call,
    request_text,
    text_step,
    tool_step,
)

FIRST = "The answer begins here and then goes on"
REST = " to its very end."


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(ScriptedModel()) as fake:
        yield fake


async def _retry(service: ChatService, conversation_id: str) -> list[ChatEvent]:
    handle = await service.start_retry(conversation_id)
    return [event async for event in handle.events()]


@pytest.mark.parametrize("wire", WIRES)
async def test_continue_extends_the_cut_off_answer_in_place(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(Reply(text=FIRST, chunk_chars=5), text_step(REST))
    server.fail_next("disconnect", after_deltas=3, on="chat")

    await run(service, conversation.id, "Tell me the answer.")
    history = store.list_messages(conversation.id)
    assert [(m.message.role, m.status) for m in history] == [
        ("user", "complete"),
        ("assistant", "interrupted"),
    ]
    cut = history[1]
    assert cut.message.text == FIRST[:15]
    assert not cut.continued

    events = await _retry(service, conversation.id)
    assert [e for e in events if e.name == "error"] == []
    # The event stream names the same message: no new bubble.
    created = [e.data["message"] for e in events if e.name == "message.created"]
    assert [m["id"] for m in created] == [cut.id]
    assert created[0]["continued"] is True
    deltas = "".join(e.data["text"] for e in events if e.name == "assistant.delta")
    assert deltas == REST

    history = store.list_messages(conversation.id)
    assert len(history) == 2
    answer = history[1]
    assert (answer.id, answer.seq, answer.status) == (cut.id, 1, "complete")
    assert answer.continued
    assert answer.error is None
    assert answer.message.text == FIRST[:15] + REST
    assert len(answer.message.parts) == 1  # one text, not two pieces

    # The continuing request: the cut-off answer, then the short prompt to go on, last.
    server.assert_no_errors()
    request = chat_requests(server)[-1].model_request
    assert request is not None
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    assert request.messages[1].text == FIRST[:15]
    assert request_text(request.messages[2:]) == CONTINUE_PROMPT

    # The next turn sees the whole answer once, as an ordinary message.
    server.responder.add(text_step("Next."))
    await run(service, conversation.id, "Thanks.")
    request = chat_requests(server)[-1].model_request
    assert request is not None
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    assert request.messages[1].text == FIRST[:15] + REST
    assert CONTINUE_PROMPT not in request_text(request.messages)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_continuation_cut_again_keeps_both_pieces(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(
        Reply(text=FIRST, chunk_chars=5),
        Reply(text=" and on and on", chunk_chars=4),
        text_step(REST),
    )
    server.fail_next("disconnect", after_deltas=2, on="chat")
    await run(service, conversation.id, "Go.")
    server.fail_next("disconnect", after_deltas=1, on="chat")
    await _retry(service, conversation.id)
    middle = store.list_messages(conversation.id)[1]
    assert (middle.status, middle.continued) == ("interrupted", True)
    assert middle.message.text == FIRST[:10] + " and"

    await _retry(service, conversation.id)
    history = store.list_messages(conversation.id)
    assert len(history) == 2
    assert history[1].status == "complete"
    assert history[1].message.text == FIRST[:10] + " and" + REST


@pytest.mark.parametrize("wire", WIRES)
async def test_a_continued_answer_counts_the_output_of_the_cut_call_too(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    """The cut call reported no usage (providers report it at the end of a stream): its
    text is counted, marked estimated, and the continuation adds to it."""
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(Reply(text=FIRST, chunk_chars=5), text_step(REST))
    server.fail_next("disconnect", after_deltas=3, on="chat")
    await run(service, conversation.id, "Tell me the answer.")
    cut = store.list_messages(conversation.id)[1]
    counted = cut.usage["outputTokens"]
    assert counted > 0 and cut.usage == {"outputTokens": counted, "estimatedOutputTokens": counted}

    # The cut call is billed all the same: it is in the conversation's calls, counted.
    [cut_call] = store.list_calls(conversation.id)
    assert cut_call.estimated and cut_call.message_id == cut.id
    assert cut_call.output_tokens == counted
    assert cut_call.input_tokens + cut_call.cache_read_tokens > 0

    events = await _retry(service, conversation.id)
    [reported] = [e.data["outputTokens"] for e in events if e.name == "usage"]
    answer = store.list_messages(conversation.id)[1]
    assert answer.usage["outputTokens"] == reported + counted
    assert answer.usage["estimatedOutputTokens"] == counted
    total, _last_turn = store.usage_totals(conversation.id)
    assert (total.calls, total.estimated_calls) == (2, 1)
    assert total.output_tokens == reported + counted


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stopped_answer_is_billed_as_counted(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    """Stop ends the stream before the provider reports usage; the call is recorded with
    the view it was sent and what it wrote, both counted, its cached share as the last
    call's."""
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(
        text_step("A first answer, whole."),
        Reply(text=FIRST + REST, chunk_chars=4, delay=0.05),
    )
    await run(service, conversation.id, "First question.")
    [first] = store.list_calls(conversation.id)
    handle = await service.start_turn(conversation.id, "Second question.")
    async for event in handle.events():
        if event.name == "assistant.delta":
            break
    await asyncio.sleep(0.2)
    assert service.cancel(conversation.id)
    await handle.wait()

    stopped = store.list_messages(conversation.id)[-1]
    assert stopped.status == "interrupted" and stopped.message.text
    first_again, cut = store.list_calls(conversation.id)
    assert first_again == first and not first.estimated
    assert cut.estimated and cut.message_id == stopped.id
    assert cut.output_tokens == stopped.usage["estimatedOutputTokens"] > 0
    sent = cut.input_tokens + cut.cache_read_tokens
    assert sent > first.input_tokens + first.cache_read_tokens + first.cache_creation_tokens
    assert cut.cache_read_tokens == first.cache_read_tokens + first.cache_creation_tokens
    total, last_turn = store.usage_totals(conversation.id)
    assert (total.calls, total.estimated_calls, last_turn.estimated_calls) == (2, 1, 1)
    await service.shutdown()


async def test_retry_after_an_error_with_no_text_still_answers_anew(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL["anthropic"])
    server.responder = ScriptedModel(text_step("Recovered."))
    server.fail_next("auth")  # not retried by the turn: the answer fails empty
    await run(service, conversation.id, "Hi?")
    assert [m.status for m in store.list_messages(conversation.id)] == ["complete", "error"]

    await _retry(service, conversation.id)
    history = store.list_messages(conversation.id)
    assert [(m.message.role, m.status, m.continued) for m in history] == [
        ("user", "complete", False),
        ("assistant", "error", False),
        ("assistant", "complete", False),
    ]
    assert history[2].message.text == "Recovered."


def without_titles(config: AppConfig) -> AppConfig:
    """No title made in the background: its thread could outlive the test's store."""
    compaction = config.compaction.model_copy(update={"auto_title": False})
    return config.model_copy(update={"compaction": compaction})


class SlowTool:
    """A tool that never finishes by itself (the person presses Stop while it runs)."""

    started: asyncio.Event

    def __init__(self) -> None:
        self.started = asyncio.Event()

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name="slow", description="Takes forever.", input_schema={"type": "object"})

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        self.started.set()
        await asyncio.sleep(3600)
        return ToolOutcome("never")


class SlowSource:
    def __init__(self, tool: SlowTool) -> None:
        self.tool = tool

    def tools(self) -> list[SlowTool]:
        return [self.tool]

    async def prepare(self) -> list[ChatEvent]:
        return []

    async def shutdown(self) -> None:
        return None


async def test_stop_during_a_tool_batch_leaves_no_call_without_its_result(
    store: Store, config: AppConfig, tmp_path: Path
) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "a.txt").write_text("hello")
    tool = SlowTool()
    model = ScriptedModel(
        tool_step(
            call("read_file", {"path": "a.txt"}, id="c1"),
            call("slow", id="c2"),
            call("read_file", {"path": "a.txt"}, id="c3"),
        ),
        text_step("Done after the stop."),
    )
    config = without_titles(config)
    service = ChatService(
        store,
        lambda: config,
        provider_factory=lambda _config, _model: model,
        files_root=tmp_path / "workspace",
        tool_sources=[SlowSource(tool)],
    )
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, "Read and wait.")
    await asyncio.wait_for(tool.started.wait(), 10)
    assert service.cancel(conversation.id)
    await handle.wait()

    history = store.list_messages(conversation.id)
    assert [(m.message.role, m.status) for m in history] == [
        ("user", "complete"),
        ("assistant", "complete"),
        ("tool", "interrupted"),
    ]
    results = [p for p in history[2].message.parts if isinstance(p, ToolResultPart)]
    assert [(r.call_id, r.is_error) for r in results] == [
        ("c1", False),
        ("c2", True),
        ("c3", True),
    ]
    assert results[0].output == "hello"
    assert results[1].output == INTERRUPTED_RESULT

    # Continue goes on after the results: a new answer, the history stays valid.
    retried = await service.start_retry(conversation.id)
    await retried.wait()
    history = store.list_messages(conversation.id)
    assert [(m.message.role, m.status) for m in history][-1] == ("assistant", "complete")
    last_request = model.calls[-1].messages
    assert [m.role for m in last_request] == ["user", "assistant", "tool"]
    await service.shutdown()


async def test_retry_closes_the_calls_of_an_answer_left_without_results(
    store: Store, config: AppConfig, tmp_path: Path
) -> None:
    # The app stopped during a tool batch: the answer that made the calls is complete,
    # nothing follows it.
    model = ScriptedModel(text_step("Going on."))
    config = without_titles(config)
    service = ChatService(store, lambda: config, provider_factory=lambda _c, _m: model)
    conversation = store.create_conversation()
    store.append_message(conversation.id, Message(role="user", parts=(TextPart(text="Go"),)))
    calls = (ToolCallPart(id="c1", name="read_file", input={"path": "a"}),)
    store.append_message(conversation.id, Message(role="assistant", parts=calls))

    await (await service.start_retry(conversation.id)).wait()
    history = store.list_messages(conversation.id)
    assert [(m.message.role, m.status) for m in history] == [
        ("user", "complete"),
        ("assistant", "complete"),
        ("tool", "interrupted"),
        ("assistant", "complete"),
    ]
    assert history[2].message.tool_results[0].output == INTERRUPTED_RESULT
    await service.shutdown()
