"""AnthropicProvider through the real `anthropic` SDK against a local fake Messages API."""

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
from foldline.core.wire import to_anthropic_messages, to_anthropic_tools
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

from .fake_http import FakeHTTPServer, JSONReply, SSEReply, closed_port_url, collect, of_kind
from .wire_events import (
    anthropic_error_body,
    anthropic_message_end,
    anthropic_message_start,
    anthropic_text_block,
    anthropic_text_reply,
    anthropic_thinking_block,
    anthropic_tool_block,
)

PATH = "/v1/messages"
TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    )
]


def request(**overrides: object) -> ModelRequest:
    values: dict[str, object] = {
        "model": "claude-test",
        "system": "Be brief.",
        "messages": [user("Hello")],
        "max_output_tokens": 321,
    }
    values.update(overrides)
    return ModelRequest(**values)  # type: ignore[arg-type]


def provider(fake: FakeHTTPServer, **options: object) -> AnthropicProvider:
    return AnthropicProvider("anthropic", "sk-ant-test-key", fake.url, **options)  # type: ignore[arg-type]


def test_is_a_provider() -> None:
    instance = AnthropicProvider("anthropic", "key")
    assert isinstance(instance, Provider)
    assert instance.wire == "anthropic"


async def test_text_stream_usage_and_the_request_sent(fake: FakeHTTPServer) -> None:
    fake.script(
        "POST",
        PATH,
        SSEReply(
            anthropic_text_reply(
                "Hel", "lo", input_tokens=120, cache_read=900, cache_creation=40, output_tokens=7
            )
        ),
    )
    messages = [
        user("Read it"),
        assistant("", ToolCallPart(id="toolu_1", name="read_file", input={"path": "a.txt"})),
        tool_results(ToolResultPart(call_id="toolu_1", name="read_file", output="contents")),
        user("Thanks"),
    ]
    result = await collect(provider(fake).stream(request(messages=messages, tools=TOOLS)))

    assert result.error is None
    assert result.events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        Usage(input_tokens=120, output_tokens=7, cache_read_tokens=900, cache_creation_tokens=40),
        Stop("end_turn", raw="end_turn"),
    ]
    (sent,) = fake.requests_to(PATH)
    # Older SDKs send `x-api-key`, newer ones `Authorization: Bearer`; either carries it.
    credentials = sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert "sk-ant-test-key" in credentials
    assert sent.body["model"] == "claude-test"
    assert sent.body["max_tokens"] == 321
    assert sent.body["system"] == "Be brief."
    assert sent.body["stream"] is True
    assert sent.body["messages"] == to_anthropic_messages(messages)
    assert sent.body["tools"] == to_anthropic_tools(TOOLS)


async def test_parallel_tool_calls_are_assembled_from_fragments(fake: FakeHTTPServer) -> None:
    events = [
        anthropic_message_start(),
        *anthropic_text_block(0, "Reading both."),
        *anthropic_tool_block(1, "toolu_a", "read_file", '{"pa', 'th": "a.', 'txt"}'),
        *anthropic_tool_block(2, "toolu_b", "read_file", "", '{"path": "b.txt", "n": [1, 2]}'),
        *anthropic_tool_block(3, "toolu_c", "list_files"),
        *anthropic_message_end("tool_use"),
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request(tools=TOOLS)))

    assert result.error is None
    assert of_kind(result.events, "tool-call") == [
        ToolCallEvent("toolu_a", "read_file", {"path": "a.txt"}),
        ToolCallEvent("toolu_b", "read_file", {"path": "b.txt", "n": [1, 2]}),
        ToolCallEvent("toolu_c", "list_files", {}),
    ]
    assert result.events[-1] == Stop("tool_use", raw="tool_use")


async def test_thinking_streams_as_reasoning_with_its_signature(fake: FakeHTTPServer) -> None:
    events = [
        anthropic_message_start(),
        *anthropic_thinking_block(0, ["Let me ", "think."], "EqQBCkgIARABGAIiQL"),
        *anthropic_text_block(1, "Answer."),
        *anthropic_message_end(),
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert result.error is None
    assert of_kind(result.events, "reasoning-delta") == [
        ReasoningDelta("Let me "),
        ReasoningDelta("think."),
        ReasoningDelta("", signature="EqQBCkgIARABGAIiQL"),
    ]
    assert of_kind(result.events, "text-delta") == [TextDelta("Answer.")]


async def test_redacted_thinking_is_kept_as_opaque_reasoning(fake: FakeHTTPServer) -> None:
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    events = [
        anthropic_message_start(),
        *anthropic_thinking_block(0, ["Plan."], "sig-1"),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": redacted},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        *anthropic_text_block(2, "Answer."),
        *anthropic_message_end(),
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert of_kind(result.events, "reasoning-delta") == [
        ReasoningDelta("Plan."),
        ReasoningDelta("", signature="sig-1"),
        ReasoningDelta("", redacted="EmwKAhgBEgy3va3pzix/LafPsn4a"),
    ]


async def test_message_delta_usage_is_cumulative_not_added(fake: FakeHTTPServer) -> None:
    events = [
        anthropic_message_start(input_tokens=50),
        *anthropic_text_block(0, "x"),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": None, "stop_sequence": None},
                "usage": {"output_tokens": 4},
            },
        ),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 9, "input_tokens": 50, "cache_read_input_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert of_kind(result.events, "usage") == [
        Usage(input_tokens=50, output_tokens=9, cache_read_tokens=3)
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("max_tokens", "max_tokens"),
        ("model_context_window_exceeded", "context_window_exceeded"),
        ("tool_use", "tool_use"),
        ("stop_sequence", "end_turn"),
        ("refusal", "other"),
        ("pause_turn", "other"),
    ],
)
async def test_stop_reasons(fake: FakeHTTPServer, raw: str, expected: str) -> None:
    fake.script("POST", PATH, SSEReply(anthropic_text_reply("x", stop_reason=raw)))
    result = await collect(provider(fake).stream(request()))
    assert result.events[-1] == Stop(expected, raw=raw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "error_type", "message", "headers", "code", "retry_after"),
    [
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            {},
            "context_overflow",
            None,
        ),
        (
            400,
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, "
            "decrease input length or `max_tokens` and try again",
            {},
            "context_overflow",
            None,
        ),
        (
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            {"retry-after": "7"},
            "rate_limited",
            7.0,
        ),
        (529, "overloaded_error", "Overloaded", {}, "overloaded", None),
        (401, "authentication_error", "invalid x-api-key", {}, "auth", None),
        (403, "permission_error", "Your API key does not have permission", {}, "auth", None),
        (500, "api_error", "Internal server error", {}, "unavailable", None),
        (
            400,
            "invalid_request_error",
            "messages.1.content: Field required",
            {},
            "bad_request",
            None,
        ),
        (404, "not_found_error", "model: claude-nope", {}, "bad_request", None),
    ],
)
async def test_http_errors_are_typed(
    fake: FakeHTTPServer,
    status: int,
    error_type: str,
    message: str,
    headers: dict[str, str],
    code: str,
    retry_after: float | None,
) -> None:
    fake.script("POST", PATH, JSONReply(status, anthropic_error_body(error_type, message), headers))
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == code
    assert result.error.status == status
    assert result.error.message == message
    assert result.error.retry_after == retry_after
    # The SDK's own retries are off: the turn loop must see every failure once.
    assert len(fake.requests_to(PATH)) == 1
    assert result.events == []


async def test_overflow_error_carries_the_providers_token_counts(fake: FakeHTTPServer) -> None:
    body = anthropic_error_body(
        "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
    )
    fake.script("POST", PATH, JSONReply(400, body))
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert (result.error.prompt_tokens, result.error.context_limit) == (210_000, 200_000)
    assert not result.error.retryable


async def test_error_event_inside_the_stream(fake: FakeHTTPServer) -> None:
    events = [
        anthropic_message_start(),
        *anthropic_text_block(0, "partial"),
        ("error", anthropic_error_body("overloaded_error", "Overloaded")),
    ]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert result.events == [TextDelta("partial")]
    assert isinstance(result.error, ProviderError)
    assert result.error.code == "overloaded"
    assert result.error.retryable


async def test_connection_cut_mid_stream_is_unavailable_without_usage(
    fake: FakeHTTPServer,
) -> None:
    fake.script("POST", PATH, SSEReply(anthropic_text_reply("one", "two", "three"), cut_after=4))
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == "unavailable"
    assert "interrupted" in result.error.message
    assert of_kind(result.events, "usage") == []
    assert of_kind(result.events, "stop") == []
    assert of_kind(result.events, "text-delta") == [TextDelta("one")]


async def test_clean_end_without_message_stop_is_unavailable(fake: FakeHTTPServer) -> None:
    events = [anthropic_message_start(), *anthropic_text_block(0, "cut short")]
    fake.script("POST", PATH, SSEReply(events))
    result = await collect(provider(fake).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == "unavailable"
    assert of_kind(result.events, "usage") == []


async def test_timeout_is_unavailable(fake: FakeHTTPServer) -> None:
    fake.script("POST", PATH, SSEReply(anthropic_text_reply("late"), delay=2.0))
    result = await collect(provider(fake, timeout=0.2).stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == "unavailable"


async def test_connection_refused_is_unavailable_and_says_what_to_check() -> None:
    url = closed_port_url()
    refused = AnthropicProvider("anthropic", "key", url)
    result = await collect(refused.stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == "unavailable"
    # Not the SDK's bare "Connection error.": where, and the next step.
    assert str(result.error).startswith(f"anthropic: could not reach {url}. Check your network")
    assert "Settings → Providers" in str(result.error)


async def test_missing_key_is_an_auth_error_without_a_request(fake: FakeHTTPServer) -> None:
    keyless = AnthropicProvider("anthropic", None, fake.url)
    result = await collect(keyless.stream(request()))

    assert isinstance(result.error, ProviderError)
    assert result.error.code == "auth"
    assert fake.requests == []


async def test_temperature_is_sent_only_when_set(fake: FakeHTTPServer) -> None:
    fake.script(
        "POST", PATH, SSEReply(anthropic_text_reply("a")), SSEReply(anthropic_text_reply("b"))
    )
    chosen = provider(fake)
    await collect(chosen.stream(request(temperature=0.3)))
    await collect(chosen.stream(request(system="", tools=[])))

    first, second = fake.requests_to(PATH)
    assert first.body["temperature"] == 0.3
    assert "temperature" not in second.body
    assert "system" not in second.body
    assert "tools" not in second.body
