"""Reasoning through the real SDKs against the fake server, and what the server refuses.

Foldline's providers send the model's reasoning back inside a tool loop; the fake server
refuses a loop without it, a tampered signature or encrypted item, tools with reasoning
on Chat Completions for a family that refuses them, and `previous_response_id`, as the
real APIs do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic as anthropic_sdk
import openai
import pytest

from foldline.chat.answer import StreamedAnswer
from foldline.core.messages import (
    Message,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    tool_results,
    user,
)
from foldline.core.reasoning import Effort
from foldline.core.wire import to_anthropic_messages
from foldline.providers.anthropic import AnthropicProvider
from foldline.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ReasoningDelta,
    Stop,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from foldline.providers.openai import OpenAIProvider
from foldline.providers.openai_responses import OpenAIResponsesProvider
from foldline.testing import FakeProviderServer, ModelLimits, ScriptedModel, call, text_step
from foldline.testing.steps import Reply

CLAUDE = "claude-sonnet-4-6"  # adaptive thinking
OLD_CLAUDE = "claude-sonnet-4-5"  # budget_tokens
GPT = "gpt-6.1-sol"  # Responses API; Chat Completions refuses tools with reasoning
LIMITS = ModelLimits(context_window=200_000, max_output_tokens=64_000)
TOOLS = [ToolSpec(name="read_file", description="Read a file")]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    models = {name: LIMITS for name in (CLAUDE, OLD_CLAUDE, GPT)}
    with FakeProviderServer(ScriptedModel(when_empty="echo"), models=models) as running:
        yield running


@pytest.fixture
def fake(server: FakeProviderServer) -> FakeProviderServer:
    server.reset()
    server.script.reset()
    return server


def anthropic(fake: FakeProviderServer) -> AnthropicProvider:
    return AnthropicProvider("anthropic", "sk-ant-test", fake.anthropic_url)


def responses(fake: FakeProviderServer) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider("openai", "sk-test", fake.openai_url)


def request(model: str, messages: list[Message], effort: Effort = "high") -> ModelRequest:
    return ModelRequest(
        model=model,
        system="Be brief.",
        messages=messages,
        tools=TOOLS,
        max_output_tokens=16_000,
        cache_key="conversation-1",
        reasoning_effort=effort,
    )


async def collect(provider: Provider, req: ModelRequest) -> list[Any]:
    return [event async for event in provider.stream(req)]


def answer_of(events: list[Any]) -> Message:
    """The assistant message the turn loop stores for these events (its own assembly)."""
    answer = StreamedAnswer()
    for event in events:
        if isinstance(event, ReasoningDelta):
            answer.add_reasoning(event, 0.0)
        elif isinstance(event, TextDelta):
            answer.text += event.text
        elif isinstance(event, ToolCallEvent):
            answer.calls.append(ToolCallPart(id=event.id, name=event.name, input=event.input))
    return answer.message()


def results_for(answer: Message) -> Message:
    return tool_results(
        *(ToolResultPart(call_id=c.id, name=c.name, output="contents") for c in answer.tool_calls)
    )


def without_reasoning(message: Message) -> Message:
    return Message(
        role=message.role, parts=tuple(p for p in message.parts if not isinstance(p, ReasoningPart))
    )


def tampered(message: Message, **changes: str) -> Message:
    parts = tuple(
        p.model_copy(update=changes) if isinstance(p, ReasoningPart) else p for p in message.parts
    )
    return Message(role=message.role, parts=parts)


# --- Anthropic ---------------------------------------------------------------------------


async def test_anthropic_adaptive_thinking_streams_and_goes_back_signed(
    fake: FakeProviderServer,
) -> None:
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)), text_step("Done."))
    first = await collect(anthropic(fake), request(CLAUDE, [user("Read a.txt")]))
    body = fake.requests[-1].body
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}
    assert any(isinstance(e, ReasoningDelta) and e.text for e in first)
    answer = answer_of(first)
    assert isinstance(answer.parts[0], ReasoningPart) and answer.parts[0].signature
    second = await collect(
        anthropic(fake), request(CLAUDE, [user("Read a.txt"), answer, results_for(answer)])
    )
    assert isinstance(second[-1], Stop) and second[-1].reason == "end_turn"
    sent = fake.requests[-1].body["messages"][1]["content"][0]
    assert sent["type"] == "thinking" and sent["signature"] == answer.parts[0].signature
    fake.assert_no_errors()


async def test_anthropic_refuses_a_tool_loop_without_its_thinking(
    fake: FakeProviderServer,
) -> None:
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)))
    answer = answer_of(await collect(anthropic(fake), request(CLAUDE, [user("Read a.txt")])))
    stripped = without_reasoning(answer)
    # Straight through the SDK: Foldline's provider would not send such a request.
    client = anthropic_sdk.AsyncAnthropic(api_key="sk-ant-test", base_url=fake.anthropic_url)
    with pytest.raises(anthropic_sdk.BadRequestError) as refused:
        await client.messages.create(
            model=CLAUDE,
            max_tokens=4000,
            thinking={"type": "adaptive"},
            messages=to_anthropic_messages(  # type: ignore[arg-type]
                [user("Read a.txt"), stripped, results_for(answer)]
            ),
        )
    await client.close()
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in str(refused.value)


async def test_anthropic_refuses_a_tampered_signature(fake: FakeProviderServer) -> None:
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)))
    answer = answer_of(await collect(anthropic(fake), request(CLAUDE, [user("Read a.txt")])))
    forged = tampered(answer, text="I never thought this.")
    with pytest.raises(ProviderError) as refused:
        await collect(
            anthropic(fake), request(CLAUDE, [user("Read a.txt"), forged, results_for(answer)])
        )
    assert "Invalid `signature` in `thinking` block" in refused.value.message


async def test_older_claude_gets_a_budget_below_max_tokens(fake: FakeProviderServer) -> None:
    await collect(anthropic(fake), request(OLD_CLAUDE, [user("Hi")], effort="max"))
    body = fake.requests[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8000}  # half of 16,000
    assert body["thinking"]["budget_tokens"] < body["max_tokens"]
    assert "output_config" not in body


async def test_effort_off_sends_no_thinking(fake: FakeProviderServer) -> None:
    events = await collect(anthropic(fake), request(CLAUDE, [user("Hi")], effort="off"))
    assert "thinking" not in fake.requests[-1].body
    assert not any(isinstance(e, ReasoningDelta) for e in events)


async def test_earlier_turns_thinking_is_not_sent(fake: FakeProviderServer) -> None:
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)), text_step("Done."))
    first = answer_of(await collect(anthropic(fake), request(CLAUDE, [user("Read a.txt")])))
    history = [user("Read a.txt"), first, results_for(first)]
    done = answer_of(await collect(anthropic(fake), request(CLAUDE, history)))
    await collect(anthropic(fake), request(CLAUDE, [*history, done, user("Thanks")]))
    sent = fake.requests[-1].body["messages"]
    kinds = [b["type"] for m in sent for b in m["content"] if isinstance(b, dict)]
    assert "thinking" not in kinds
    fake.assert_no_errors()


# --- OpenAI Responses --------------------------------------------------------------------


async def test_responses_wire_is_stateless_and_streams_reasoning(fake: FakeProviderServer) -> None:
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)), text_step("Done."))
    first = await collect(responses(fake), request(GPT, [user("Read a.txt")]))
    record = fake.requests[-1]
    assert record.path == "/v1/responses"
    body = record.body
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["prompt_cache_key"] == "conversation-1"
    assert "previous_response_id" not in body
    assert body["instructions"] == "Be brief."
    answer = answer_of(first)
    thought = answer.parts[0]
    assert isinstance(thought, ReasoningPart)
    assert thought.item_id and thought.encrypted_content and thought.text
    usage = next(e for e in first if isinstance(e, Usage))
    assert usage.reasoning_tokens > 0 and usage.output_tokens >= usage.reasoning_tokens
    second = await collect(
        responses(fake), request(GPT, [user("Read a.txt"), answer, results_for(answer)])
    )
    kinds = [item.get("type", "message") for item in fake.requests[-1].body["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    assert "".join(e.text for e in second if isinstance(e, TextDelta)) == "Done."
    fake.assert_no_errors()


async def test_responses_refuses_a_call_without_its_reasoning_item(
    fake: FakeProviderServer,
) -> None:
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)))
    answer = answer_of(await collect(responses(fake), request(GPT, [user("Read a.txt")])))
    with pytest.raises(ProviderError) as refused:
        await collect(
            responses(fake),
            request(GPT, [user("Read a.txt"), without_reasoning(answer), results_for(answer)]),
        )
    assert "of type 'function_call' was provided without its required 'reasoning' item" in (
        refused.value.message
    )


async def test_responses_refuses_a_tampered_encrypted_item(fake: FakeProviderServer) -> None:
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)))
    answer = answer_of(await collect(responses(fake), request(GPT, [user("Read a.txt")])))
    thought = answer.parts[0]
    assert isinstance(thought, ReasoningPart) and thought.encrypted_content
    for forged in (
        tampered(answer, encrypted_content=thought.encrypted_content[:-4] + "AAAA"),
        tampered(answer, item_id="rs_someone_else"),
    ):
        with pytest.raises(ProviderError) as refused:
            await collect(
                responses(fake), request(GPT, [user("Read a.txt"), forged, results_for(answer)])
            )
        assert "could not be verified" in refused.value.message


async def test_responses_refuses_previous_response_id_without_store(
    fake: FakeProviderServer,
) -> None:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=fake.openai_url)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(
            model=GPT, input="Hi", store=False, previous_response_id="resp_123"
        )
    assert "Previous response with id 'resp_123' not found" in str(refused.value)
    await client.close()


async def test_responses_without_reasoning_for_off(fake: FakeProviderServer) -> None:
    events = await collect(responses(fake), request(GPT, [user("Hi")], effort="off"))
    assert fake.requests[-1].body["reasoning"] == {"effort": "none"}
    assert not any(isinstance(e, ReasoningDelta) for e in events)


# --- OpenAI Chat Completions ----------------------------------------------------------------


async def test_chat_completions_refuses_tools_with_reasoning_on_newer_families(
    fake: FakeProviderServer,
) -> None:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=fake.openai_url)
    tools: list[Any] = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(
            model=GPT,
            messages=[{"role": "user", "content": "Hi"}],
            tools=tools,
            reasoning_effort="high",
        )
    assert "Function tools with reasoning_effort are not supported for gpt-6.1-sol" in str(
        refused.value
    )
    await client.close()
    # Foldline's chat provider, asked for reasoning on such a model, says `none` with
    # tools (the Responses API is where both go together), and the request passes.
    chat = OpenAIProvider("openai", "sk-test", fake.openai_url)
    await collect(chat, request(GPT, [user("Hi")]))
    assert fake.requests[-1].body["reasoning_effort"] == "none"
    assert json.loads(fake.requests[-1].raw)["tools"]


async def test_a_loop_begun_without_thinking_finishes_without_it(
    fake: FakeProviderServer,
) -> None:
    # The effort was off when the model called the tool, then the person turned it up:
    # the loop's last assistant turn has no thinking block, so this call sends none.
    fake.script.add(Reply(tool_calls=(call("read_file", {"path": "a.txt"}),)), text_step("Ok."))
    answer = answer_of(await collect(anthropic(fake), request(CLAUDE, [user("Read")], "off")))
    assert not any(isinstance(p, ReasoningPart) for p in answer.parts)
    events = await collect(
        anthropic(fake), request(CLAUDE, [user("Read"), answer, results_for(answer)], "high")
    )
    assert isinstance(events[-1], Stop) and events[-1].reason == "end_turn"
    assert "thinking" not in fake.requests[-1].body
    # The next person's message thinks again.
    done = answer_of(events)
    history = [user("Read"), answer, results_for(answer), done, user("More?")]
    await collect(anthropic(fake), request(CLAUDE, history, "high"))
    assert fake.requests[-1].body["thinking"] == {"type": "adaptive"}
    fake.assert_no_errors()
