"""The fake server's Anthropic Messages API, driven by the real `anthropic` SDK."""

from __future__ import annotations

import anthropic
import httpx2
import pytest
from anthropic.types import TextBlock, ThinkingBlock, ToolUseBlock

from foldline.providers.base import ProviderError
from foldline.testing import (
    FakeProviderServer,
    FakeTokenizer,
    Reply,
    call,
    error_step,
    text_step,
    tool_step,
)
from foldline.testing.reasoning_rules import thinking_signature

SMALL = "small-model"  # conftest: 1,000-token window, 200 output tokens
BIG = "big-model"  # conftest: 100,000-token window

HELLO = [{"role": "user", "content": "Hello, who are you?"}]


def _words(n_chars: int) -> str:
    """Plain prose of about `n_chars` characters (valid, non-whitespace text)."""
    sentence = "The quick brown fox jumps over the lazy dog. "
    return (sentence * (n_chars // len(sentence) + 1))[:n_chars]


async def test_streamed_text_arrives_in_deltas_with_the_fake_tokenizers_usage(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic, tokenizer: FakeTokenizer
) -> None:
    answer = "I am a scripted model, answering in small pieces."
    fake.script.add(text_step(answer, chunk_chars=5))
    async with claude.messages.stream(
        model=BIG, max_tokens=500, system="Be brief.", messages=HELLO
    ) as stream:
        pieces = [piece async for piece in stream.text_stream]
        message = await stream.get_final_message()

    assert "".join(pieces) == answer
    assert len(pieces) == -(-len(answer) // 5)
    assert message.stop_reason == "end_turn"
    assert isinstance(message.content[0], TextBlock)
    record = fake.requests[-1]
    assert record.body is not None
    expected_input = tokenizer.count_request(record.body, "anthropic")
    assert message.usage.input_tokens == expected_input == record.input_tokens
    assert message.usage.cache_read_input_tokens == 0
    assert message.usage.cache_creation_input_tokens == 0
    assert message.usage.output_tokens == tokenizer.count_output(Reply(text=answer))


async def test_tool_use_streams_as_input_json_deltas_and_parses(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.script.add(
        tool_step(
            call("read_file", {"path": "notes/plan.md", "limit": 20}),
            call("list_dir", {"path": "."}),
            text="Let me look.",
        )
    )
    tools = [
        {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}},
        {"name": "list_dir", "description": "List a folder", "input_schema": {"type": "object"}},
    ]
    event_types: list[str] = []
    async with claude.messages.stream(
        model=BIG, max_tokens=500, messages=HELLO, tools=tools
    ) as stream:
        async for event in stream:
            if event.type == "content_block_delta":
                event_types.append(event.delta.type)
        message = await stream.get_final_message()

    assert message.stop_reason == "tool_use"
    text, first, second = message.content
    assert isinstance(text, TextBlock) and text.text == "Let me look."
    assert isinstance(first, ToolUseBlock) and isinstance(second, ToolUseBlock)
    assert (first.name, first.input) == ("read_file", {"path": "notes/plan.md", "limit": 20})
    assert (second.name, second.input) == ("list_dir", {"path": "."})
    assert first.id.startswith("toolu_") and first.id != second.id
    assert event_types.count("input_json_delta") > 2
    # The tools were offered, so the prompt count includes the hidden tool preamble.
    record = fake.requests[-1]
    assert record.body is not None
    assert message.usage.input_tokens == FakeTokenizer().count_request(record.body, "anthropic")


async def test_thinking_block_carries_its_signature(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.script.add(Reply(reasoning="Weigh both options first.", text="Option B."))
    async with claude.messages.stream(model=BIG, max_tokens=500, messages=HELLO) as stream:
        message = await stream.get_final_message()
    thinking, text = message.content
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.thinking == "Weigh both options first."
    # Signed by the fake model over its text, so a tampered block can be refused.
    assert thinking.signature == thinking_signature("Weigh both options first.")
    assert isinstance(text, TextBlock) and text.text == "Option B."


async def test_non_streaming_create_returns_a_complete_message(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.script.add(tool_step(call("read_file", {"path": "a.txt"})))
    message = await claude.messages.create(model=BIG, max_tokens=500, messages=HELLO)
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    assert isinstance(block, ToolUseBlock) and block.input == {"path": "a.txt"}
    assert message.usage.input_tokens == fake.requests[-1].input_tokens


async def test_a_full_tool_round_trip_is_decoded_into_engine_messages(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    messages = [
        {"role": "user", "content": "Read a.txt"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"p": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file body"},
                {"type": "text", "text": "Now summarize it."},
            ],
        },
    ]
    await claude.messages.create(model=BIG, max_tokens=100, messages=messages)
    request = fake.script.calls[-1]
    assert [m.role for m in request.messages] == ["user", "assistant", "tool", "user"]
    (result,) = request.messages[2].tool_results
    assert (result.call_id, result.name, result.output) == ("toolu_1", "read_file", "file body")


# --- context window --------------------------------------------------------------------


async def test_prompt_over_the_window_is_rejected_with_the_real_message(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic, tokenizer: FakeTokenizer
) -> None:
    messages = [{"role": "user", "content": _words(4000)}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(model=SMALL, max_tokens=100, messages=messages)
    record = fake.requests[-1]
    assert record.body is not None
    tokens = tokenizer.count_request(record.body, "anthropic")
    assert tokens > 1000
    assert caught.value.body["error"] == {
        "type": "invalid_request_error",
        "message": f"prompt is too long: {tokens} tokens > 1000 maximum",
    }
    assert fake.script.calls == []


async def test_prompt_plus_max_tokens_over_the_window_gets_the_second_message(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic, tokenizer: FakeTokenizer
) -> None:
    messages = [{"role": "user", "content": _words(2800)}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(model=SMALL, max_tokens=200, messages=messages)
    record = fake.requests[-1]
    assert record.body is not None
    tokens = tokenizer.count_request(record.body, "anthropic")
    assert tokens <= 1000 < tokens + 200
    assert caught.value.body["error"]["message"] == (
        f"input length and `max_tokens` exceed context limit: {tokens} + 200 > 1000, "
        "decrease input length or `max_tokens` and try again"
    )


async def test_max_tokens_above_the_models_output_limit_is_rejected(
    claude: anthropic.AsyncAnthropic,
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(model=SMALL, max_tokens=500, messages=HELLO)
    assert caught.value.body["error"]["message"] == (
        f"max_tokens: 500 > 200, which is the maximum allowed number of output tokens for {SMALL}"
    )


async def test_unknown_model_is_not_found(claude: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        await claude.messages.create(model="no-such-model", max_tokens=10, messages=HELLO)
    assert caught.value.body["error"] == {
        "type": "not_found_error",
        "message": "model: no-such-model",
    }


# --- message rules ---------------------------------------------------------------------

_CALL = {"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {}}


async def test_tool_use_without_its_result_is_rejected(claude: anthropic.AsyncAnthropic) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_CALL]},
        {"role": "user", "content": "never mind"},
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(model=BIG, max_tokens=10, messages=messages)
    assert caught.value.body["error"]["message"] == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: toolu_A. Each `tool_use` block must have a corresponding `tool_result` block "
        "in the next message."
    )


async def test_tool_result_without_its_tool_use_is_rejected(
    claude: anthropic.AsyncAnthropic,
) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_B", "content": "x"}],
        },
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(model=BIG, max_tokens=10, messages=messages)
    assert caught.value.body["error"]["message"] == (
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
        "toolu_B. Each `tool_result` block must have a corresponding `tool_use` block in the "
        "previous message."
    )


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "hi"}],
            'messages: first message must use the "user" role',
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            'messages: roles must alternate between "user" and "assistant", but found '
            'multiple "user" roles in a row',
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": ""}]}],
            "messages: text content blocks must be non-empty",
        ),
        (
            [{"role": "user", "content": []}],
            "messages.0: all messages must have non-empty content except for the optional "
            "final assistant message",
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "The ans"}],
            "This model does not support assistant message prefill. The conversation must "
            "end with a user message.",
        ),
    ],
)
async def test_message_rules_are_enforced(
    claude: anthropic.AsyncAnthropic, messages: list[dict[str, object]], expected: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(model=BIG, max_tokens=10, messages=messages)  # type: ignore[arg-type]
    assert caught.value.body["error"]["message"] == expected


# --- injected failures -----------------------------------------------------------------


async def test_rate_limit_carries_retry_after(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.fail_next("rate_limit", retry_after=7)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await claude.messages.create(model=BIG, max_tokens=10, messages=HELLO)
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    # The failure was consumed: the next call succeeds.
    message = await claude.messages.create(model=BIG, max_tokens=10, messages=HELLO)
    assert message.stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("kind", "error_class", "status", "error_type"),
    [
        ("overloaded", anthropic.OverloadedError, 529, "overloaded_error"),
        ("server_error", anthropic.InternalServerError, 500, "api_error"),
        ("auth", anthropic.AuthenticationError, 401, "authentication_error"),
    ],
)
async def test_status_failures(
    fake: FakeProviderServer,
    claude: anthropic.AsyncAnthropic,
    kind: str,
    error_class: type[anthropic.APIStatusError],
    status: int,
    error_type: str,
) -> None:
    fake.fail_next(kind)  # type: ignore[arg-type]
    with pytest.raises(error_class) as caught:
        async with claude.messages.stream(model=BIG, max_tokens=10, messages=HELLO) as stream:
            await stream.get_final_message()
    assert caught.value.status_code == status
    assert caught.value.body["error"]["type"] == error_type


async def test_disconnect_mid_stream_raises_after_the_first_deltas(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.script.add(text_step("one two three four five six", chunk_chars=4))
    fake.fail_next("disconnect", after_deltas=2)
    received: list[str] = []
    with pytest.raises(httpx2.RemoteProtocolError):
        async with claude.messages.stream(model=BIG, max_tokens=100, messages=HELLO) as stream:
            async for piece in stream.text_stream:
                received.append(piece)
    assert received == ["one ", "two "]
    assert fake.requests[-1].completed is False


async def test_overloaded_in_the_middle_of_a_stream_is_an_error_event(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.script.add(text_step("partial answer that never ends", chunk_chars=8))
    fake.fail_next("overloaded", after_deltas=1)
    received: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with claude.messages.stream(model=BIG, max_tokens=100, messages=HELLO) as stream:
            async for piece in stream.text_stream:
                received.append(piece)
    assert received == ["partial "]
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


async def test_scripted_provider_error_after_text_becomes_an_in_stream_error(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.script.add(error_step(ProviderError("overloaded", "busy"), after_text="Starting"))
    received: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with claude.messages.stream(model=BIG, max_tokens=100, messages=HELLO) as stream:
            async for piece in stream.text_stream:
                received.append(piece)
    assert caught.value.body["error"]["type"] == "overloaded_error"
    assert received == ["Starting"]


async def test_slow_stream_delivers_while_the_server_is_still_sending(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    fake.script.add(text_step("a slow and steady answer", chunk_chars=6))
    fake.fail_next("slow", delay=0.15)
    pieces: list[str] = []
    async with claude.messages.stream(model=BIG, max_tokens=100, messages=HELLO) as stream:
        async for piece in stream.text_stream:
            if not pieces:
                # The first delta is in our hands while the server still sleeps before
                # the next ones: the answer really is streamed, not sent at the end.
                assert fake.requests[-1].completed is False
            pieces.append(piece)
    assert "".join(pieces) == "a slow and steady answer"
    assert fake.requests[-1].failure == "slow"


# --- prompt cache and token counting -----------------------------------------------------


async def test_prompt_cache_writes_then_reads_a_marked_prefix(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    system = [{"type": "text", "text": _words(6000), "cache_control": {"type": "ephemeral"}}]
    first = await claude.messages.create(model=BIG, max_tokens=50, system=system, messages=HELLO)
    second = await claude.messages.create(model=BIG, max_tokens=50, system=system, messages=HELLO)

    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens is not None
    assert first.usage.cache_creation_input_tokens > 1024
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    for message, record in zip((first, second), fake.requests, strict=True):
        usage = message.usage
        total = (
            usage.input_tokens
            + (usage.cache_read_input_tokens or 0)
            + (usage.cache_creation_input_tokens or 0)
        )
        assert total == record.input_tokens


async def test_a_fifth_breakpoint_is_refused_as_the_api_does(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    mark = {"type": "ephemeral"}
    system = [{"type": "text", "text": f"part {i}", "cache_control": mark} for i in range(3)]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": mark}]}
    ]
    # Three system markers, one on the message: four, accepted.
    await claude.messages.create(model=BIG, max_tokens=5, system=system, messages=messages)
    # The SDK's top-level automatic marker is the fifth.
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(
            model=BIG, max_tokens=5, system=system, messages=messages, cache_control=mark
        )
    assert caught.value.status_code == 400
    assert "A maximum of 4 blocks with cache_control may be provided. Found 5." in str(caught.value)


async def test_top_level_cache_control_caches_up_to_the_last_block(
    fake: FakeProviderServer, claude: anthropic.AsyncAnthropic
) -> None:
    messages = [{"role": "user", "content": _words(6000)}]
    mark = {"type": "ephemeral"}
    first = await claude.messages.create(
        model=BIG, max_tokens=5, messages=messages, cache_control=mark
    )
    assert first.usage.cache_creation_input_tokens == fake.requests[-1].input_tokens
    longer = [
        *messages,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    second = await claude.messages.create(
        model=BIG, max_tokens=5, messages=longer, cache_control=mark
    )
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens > 0  # the new blocks are written


async def test_count_tokens_endpoint_uses_the_fake_tokenizer(
    claude: anthropic.AsyncAnthropic, tokenizer: FakeTokenizer
) -> None:
    counted = await claude.messages.count_tokens(model=BIG, system="Be brief.", messages=HELLO)
    body = {"model": BIG, "system": "Be brief.", "messages": HELLO}
    assert counted.input_tokens == tokenizer.count_request(body, "anthropic")


async def test_api_key_is_checked_when_configured() -> None:
    with FakeProviderServer(api_key="right") as keyed:
        wrong = anthropic.AsyncAnthropic(
            base_url=keyed.anthropic_url, api_key="wrong", max_retries=0
        )
        right = anthropic.AsyncAnthropic(
            base_url=keyed.anthropic_url, api_key="right", max_retries=0
        )
        with pytest.raises(anthropic.AuthenticationError):
            await wrong.messages.create(model="any", max_tokens=10, messages=HELLO)
        message = await right.messages.create(model="any", max_tokens=10, messages=HELLO)
        await wrong.close()
        await right.close()
    assert isinstance(message.content[0], TextBlock)
    assert message.content[0].text == "echo: Hello, who are you?"
