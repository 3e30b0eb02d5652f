"""OpenAIProvider (and the OpenAI-compatible variant) through the real `openai` SDK."""

from __future__ import annotations

import pytest

from foldline.core.messages import (
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.wire import to_openai_messages, to_openai_tools
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
from foldline.providers.compat import OpenAICompatibleProvider
from foldline.providers.openai import OpenAIProvider

from .fake_http import FakeHTTPServer, JSONReply, SSEReply, closed_port_url, collect, of_kind
from .wire_events import (
    DONE,
    arguments,
    openai_chunk,
    openai_error_body,
    openai_text_reply,
    openai_tool_fragment,
    openai_usage_chunk,
)

PATH = "/v1/chat/completions"
TOOLS = [ToolSpec(name="read_file", description="Read a file")]


def request(**overrides: object) -> ModelRequest:
    values: dict[str, object] = {
        "model": "gpt-test",
        "system": "Be brief.",
        "messages": [user("Hello")],
        "max_output_tokens": 555,
    }
    values.update(overrides)
    return ModelRequest(**values)  # type: ignore[arg-type]


def provider(fake: FakeHTTPServer, **options: object) -> OpenAIProvider:
    return OpenAIProvider("openai", "sk-test-key", f"{fake.url}/v1", **options)  # type: ignore[arg-type]


def test_is_a_provider() -> None:
    for instance in (
        OpenAIProvider("openai", "key"),
        OpenAICompatibleProvider("local", None, "http://127.0.0.1:1/v1"),
    ):
        assert isinstance(instance, Provider)
        assert instance.wire == "openai"


async def test_text_usage_with_cache_and_the_request_sent(fake: FakeHTTPServer) -> None:
    fake.script("POST", PATH, SSEReply(openai_text_reply("Hi ", "there", usage=(1000, 12, 768))))
    messages = [
        user("Read it"),
        assistant("", ToolCallPart(id="call_1", name="read_file", input={"path": "a"})),
        tool_results(ToolResultPart(call_id="call_1", name="read_file", output="text")),
    ]
    result = await collect(provider(fake).stream(request(messages=messages, tools=TOOLS)))

    assert result.error is None
    assert result.events == [
        TextDelta("Hi "),
        TextDelta("there"),
        Usage(input_tokens=232, output_tokens=12, cache_read_tokens=768),
        Stop("end_turn", raw="stop"),
    ]
    assert result.events[2].total_input == 1000
    (sent,) = fake.requests_to(PATH)
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["max_completion_tokens"] == 555
    assert "max_tokens" not in sent.body
    assert sent.body["messages"] == to_openai_messages("Be brief.", messages)
    assert sent.body["tools"] == to_openai_tools(TOOLS)


async def test_compatible_servers_get_max_tokens(fake: FakeHTTPServer) -> None:
    fake.script("POST", PATH, SSEReply(openai_text_reply("ok")))
    local = OpenAICompatibleProvider("local", None, f"{fake.url}/v1")
    result = await collect(local.stream(request(temperature=0.0)))

    assert result.error is None
    (sent,) = fake.requests_to(PATH)
    assert sent.body["max_tokens"] == 555
    assert "max_completion_tokens" not in sent.body
    assert sent.body["temperature"] == 0.0


async def test_tool_call_fragments_are_assembled_by_index(fake: FakeHTTPServer) -> None:
    events = [
        openai_chunk({"role": "assistant", "content": None}),
        openai_chunk(openai_tool_fragment(0, call_id="call_a", name="read_file")),
        openai_chunk(openai_tool_fragment(1, call_id="call_b", name="read_file")),
        openai_chunk(openai_tool_fragment(0, arguments='{"pa')),
        openai_chunk(openai_tool_fragment(1, arguments=arguments({"path": "b"}))),
        openai_chunk(openai_tool_fragment(0, arguments='th": "a"}')),
        openai_chunk(openai_tool_fragment(2, call_id="call_c", name="list_files")),
        openai_chunk({}, "tool_calls"),
        openai_usage_chunk(50, 30),
        DONE,
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request(tools=TOOLS)))

    assert result.error is None
    assert of_kind(result.events, "tool-call") == [
        ToolCallEvent("call_a", "read_file", {"path": "a"}),
        ToolCallEvent("call_b", "read_file", {"path": "b"}),
        ToolCallEvent("call_c", "list_files", {}),
    ]
    assert result.events[-2:] == [
        Usage(input_tokens=50, output_tokens=30),
        Stop("tool_use", raw="tool_calls"),
    ]


async def test_broken_tool_arguments_are_kept_not_dropped(fake: FakeHTTPServer) -> None:
    events = [
        openai_chunk(openai_tool_fragment(0, call_id="call_x", name="read_file")),
        openai_chunk(openai_tool_fragment(0, arguments='{"path": "a"')),
        openai_chunk({}, "length"),
        DONE,
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert of_kind(result.events, "tool-call") == [
        ToolCallEvent("call_x", "read_file", {"_invalid_arguments": '{"path": "a"'})
    ]
    assert result.events[-1] == Stop("max_tokens", raw="length")


async def test_stop_with_tool_calls_counts_as_tool_use(fake: FakeHTTPServer) -> None:
    # Some local servers end a tool-calling answer with "stop", and omit the call id.
    events = [
        openai_chunk(openai_tool_fragment(0, name="read_file", arguments="{}")),
        openai_chunk({}, "stop"),
        DONE,
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    (call,) = of_kind(result.events, "tool-call")
    assert call.name == "read_file"
    assert call.id.startswith("call_")
    assert result.events[-1] == Stop("tool_use", raw="stop")


async def test_reasoning_fields_of_compatible_servers(fake: FakeHTTPServer) -> None:
    events = [
        openai_chunk({"role": "assistant", "reasoning_content": "think "}),
        openai_chunk({"reasoning": "more"}),
        openai_chunk({"content": "Answer"}),
        openai_chunk({}, "stop"),
        DONE,
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert result.events[:3] == [
        ReasoningDelta("think "),
        ReasoningDelta("more"),
        TextDelta("Answer"),
    ]


async def test_no_usage_when_the_server_sends_none(fake: FakeHTTPServer) -> None:
    fake.script("POST", PATH, SSEReply(openai_text_reply("ok", usage=None)))
    result = await collect(provider(fake, stream_usage=False).stream(request()))

    assert result.error is None
    assert of_kind(result.events, "usage") == []
    assert result.events[-1] == Stop("end_turn", raw="stop")
    assert "stream_options" not in fake.requests_to(PATH)[0].body


async def test_interrupted_stream_yields_no_usage(fake: FakeHTTPServer) -> None:
    fake.script(
        "POST", PATH, SSEReply(openai_text_reply("a", "b", "c", usage=(10, 3, None)), cut_after=2)
    )
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == "unavailable"
    assert of_kind(result.events, "usage") == []
    assert of_kind(result.events, "text-delta") == [TextDelta("a")]


async def test_stream_ending_without_finish_reason_is_unavailable(fake: FakeHTTPServer) -> None:
    events = [openai_chunk({"content": "half"})]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == "unavailable"
    assert "before the model finished" in result.error.message


@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "retry_after"),
    [
        (
            400,
            openai_error_body(
                "This model's maximum context length is 8192 tokens. However, your messages "
                "resulted in 9000 tokens. Please reduce the length of the messages.",
                code="context_length_exceeded",
            ),
            {},
            "context_overflow",
            None,
        ),
        (
            400,
            # llama.cpp's wording, without OpenAI's code.
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            },
            {},
            "context_overflow",
            None,
        ),
        (
            429,
            openai_error_body("Rate limit reached", "requests", "rate_limit_exceeded"),
            {"retry-after-ms": "1500", "retry-after": "2"},
            "rate_limited",
            1.5,
        ),
        (
            429,
            openai_error_body(
                "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
            ),
            {},
            "bad_request",
            None,
        ),
        (
            401,
            openai_error_body("Incorrect API key provided", code="invalid_api_key"),
            {},
            "auth",
            None,
        ),
        (
            500,
            openai_error_body("The server had an error", "server_error"),
            {},
            "unavailable",
            None,
        ),
        (
            503,
            openai_error_body("Slow down", "server_error"),
            {"retry-after": "3"},
            "unavailable",
            3.0,
        ),
        (
            400,
            openai_error_body("Invalid value for 'model'", code="invalid_value"),
            {},
            "bad_request",
            None,
        ),
    ],
)
async def test_http_errors_are_typed(
    fake: FakeHTTPServer,
    status: int,
    body: dict[str, object],
    headers: dict[str, str],
    code: str,
    retry_after: float | None,
) -> None:
    fake.script("POST", PATH, JSONReply(status, body, headers))
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == code
    assert result.error.status == status
    assert result.error.retry_after == retry_after
    assert len(fake.requests_to(PATH)) == 1


async def test_overflow_error_carries_the_token_counts(fake: FakeHTTPServer) -> None:
    body = openai_error_body(
        "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9000 tokens.",
        code="context_length_exceeded",
    )
    fake.script("POST", PATH, JSONReply(400, body))
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert (result.error.prompt_tokens, result.error.context_limit) == (9000, 8192)


async def test_error_object_inside_the_stream(fake: FakeHTTPServer) -> None:
    events = [
        openai_chunk({"content": "par"}),
        (None, {"error": {"message": "The server had an error", "type": "server_error"}}),
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert result.events == [TextDelta("par")]
    assert isinstance(result.error, ProviderError)
    assert result.error.code == "unavailable"


async def test_connection_refused_and_missing_key() -> None:
    url = closed_port_url()
    refused = await collect(OpenAIProvider("openai", "k", url).stream(request()))
    keyless = await collect(OpenAIProvider("openai", None).stream(request()))

    assert isinstance(refused.error, ProviderError)
    assert refused.error.code == "unavailable"
    assert str(refused.error).startswith(f"openai: could not reach {url}. Check your network")
    assert isinstance(keyless.error, ProviderError)
    assert keyless.error.code == "auth"


async def test_servers_that_omit_indices_and_deltas(fake: FakeHTTPServer) -> None:
    # Older Ollama versions sent each tool call whole, without `index`, and some servers
    # leave `delta` out of the final chunk.
    whole_call = {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    other_call = {
        "id": "call_2",
        "type": "function",
        "function": {"name": "b", "arguments": '{"x": 1}'},
    }
    final = openai_chunk()
    del final[1]["choices"][0]["delta"]
    final[1]["choices"][0]["finish_reason"] = "tool_calls"
    events = [
        openai_chunk({"tool_calls": [whole_call]}),
        openai_chunk({"tool_calls": [other_call]}),
        final,
        DONE,
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert result.error is None
    assert of_kind(result.events, "tool-call") == [
        ToolCallEvent("call_1", "a", {}),
        ToolCallEvent("call_2", "b", {"x": 1}),
    ]
    assert result.events[-1] == Stop("tool_use", raw="tool_calls")
