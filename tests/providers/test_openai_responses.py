"""OpenAIResponsesProvider's stream translation through the real `openai` SDK, on
hand-written Responses event streams (the shapes of OpenAI's API reference)."""

from __future__ import annotations

from typing import Any

from foldline.core.messages import ToolSpec, user
from foldline.providers.base import (
    ModelRequest,
    ProviderError,
    ReasoningDelta,
    Stop,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from foldline.providers.openai_responses import OpenAIResponsesProvider

from .fake_http import FakeHTTPServer, SSEReply, collect, of_kind

PATH = "/v1/responses"


def provider(fake: FakeHTTPServer) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider("openai", "sk-test", f"{fake.url}/v1")


def request(model: str = "gpt-6.1-sol", **overrides: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": model,
        "system": "Be brief.",
        "messages": [user("Hi")],
        "tools": [ToolSpec(name="read_file", description="Read a file")],
        "max_output_tokens": 500,
        "cache_key": "conv-1",
        "reasoning_effort": "high",
    }
    values.update(overrides)
    return ModelRequest(**values)


def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"type": kind, "sequence_number": 0, **fields}


def response(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "m",
        "output": [],
        **fields,
    }


USAGE = {
    "input_tokens": 1000,
    "input_tokens_details": {"cached_tokens": 800},
    "output_tokens": 300,
    "output_tokens_details": {"reasoning_tokens": 250},
    "total_tokens": 1300,
}
REASONING_ITEM = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [
        {"type": "summary_text", "text": "First."},
        {"type": "summary_text", "text": "Then."},
    ],
    "encrypted_content": "gAAAAAenc",
}


async def test_reasoning_summary_parts_text_calls_and_usage(fake: FakeHTTPServer) -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "read_file",
        "arguments": '{"path":"a.txt"}',
    }
    fake.script(
        "POST",
        PATH,
        SSEReply(
            [
                event("response.created", response=response("in_progress")),
                event(
                    "response.reasoning_summary_text.delta",
                    item_id="rs_1",
                    output_index=0,
                    summary_index=0,
                    delta="First.",
                ),
                event(
                    "response.reasoning_summary_text.delta",
                    item_id="rs_1",
                    output_index=0,
                    summary_index=1,
                    delta="Then.",
                ),
                event("response.output_item.done", output_index=0, item=REASONING_ITEM),
                event(
                    "response.output_text.delta",
                    item_id="msg_1",
                    output_index=1,
                    content_index=0,
                    delta="Reading.",
                ),
                event("response.output_item.done", output_index=2, item=call),
                event("response.completed", response=response("completed", usage=USAGE)),
            ]
        ),
    )
    result = await collect(provider(fake).stream(request()))
    assert result.error is None
    assert of_kind(result.events, "reasoning-delta") == [
        ReasoningDelta("First."),
        ReasoningDelta("\n\n"),
        ReasoningDelta("Then."),
        ReasoningDelta("", item_id="rs_1", encrypted_content="gAAAAAenc"),
    ]
    assert of_kind(result.events, "text-delta") == [TextDelta("Reading.")]
    assert of_kind(result.events, "tool-call") == [
        ToolCallEvent("call_1", "read_file", {"path": "a.txt"})
    ]
    assert of_kind(result.events, "usage") == [
        Usage(input_tokens=200, output_tokens=300, cache_read_tokens=800, reasoning_tokens=250)
    ]
    assert result.events[-1] == Stop("tool_use", raw="completed")
    body = fake.requests_to(PATH)[-1].body
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["tools"][0]["name"] == "read_file" and "temperature" not in body


async def test_a_reasoning_item_without_streamed_summary_brings_its_summary(
    fake: FakeHTTPServer,
) -> None:
    fake.script(
        "POST",
        PATH,
        SSEReply(
            [
                event("response.output_item.done", output_index=0, item=REASONING_ITEM),
                event("response.completed", response=response("completed", usage=USAGE)),
            ]
        ),
    )
    result = await collect(provider(fake).stream(request()))
    assert of_kind(result.events, "reasoning-delta") == [
        ReasoningDelta("First.\n\nThen.", item_id="rs_1", encrypted_content="gAAAAAenc")
    ]
    assert result.events[-1] == Stop("end_turn", raw="completed")


async def test_cut_at_max_output_tokens_is_a_max_tokens_stop(fake: FakeHTTPServer) -> None:
    incomplete = response(
        "incomplete", incomplete_details={"reason": "max_output_tokens"}, usage=USAGE
    )
    fake.script(
        "POST",
        PATH,
        SSEReply(
            [
                event(
                    "response.output_text.delta",
                    item_id="m",
                    output_index=0,
                    content_index=0,
                    delta="Par",
                ),
                event("response.incomplete", response=incomplete),
            ]
        ),
    )
    result = await collect(provider(fake).stream(request()))
    assert result.events[-1] == Stop("max_tokens", raw="max_output_tokens")


async def test_failures_in_the_stream_are_provider_errors(fake: FakeHTTPServer) -> None:
    failed = response(
        "failed",
        error={
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.",
        },
    )
    fake.script("POST", PATH, SSEReply([event("response.failed", response=failed)]))
    result = await collect(provider(fake).stream(request()))
    assert isinstance(result.error, ProviderError)
    assert result.error.code == "context_overflow"

    fake.script(
        "POST", PATH, SSEReply([event("response.created", response=response("in_progress"))])
    )
    result = await collect(provider(fake).stream(request()))
    assert isinstance(result.error, ProviderError) and result.error.code == "unavailable"


async def test_a_model_that_does_not_reason_gets_no_reasoning_fields(fake: FakeHTTPServer) -> None:
    fake.script(
        "POST",
        PATH,
        SSEReply([event("response.completed", response=response("completed", usage=USAGE))]),
    )
    await collect(provider(fake).stream(request("gpt-4.1", temperature=0.2)))
    body = fake.requests_to(PATH)[-1].body
    assert "reasoning" not in body and "include" not in body
    assert body["temperature"] == 0.2 and body["prompt_cache_key"] == "conv-1"
