"""The fake server's OpenAI Chat Completions API, driven by the real `openai` SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionChunk

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

SMALL = "small-model"  # conftest: 1,000-token window, 200 output tokens
BIG = "big-model"  # conftest: 100,000-token window

HELLO: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hello, who are you?"},
]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def _words(n_chars: int) -> str:
    sentence = "The quick brown fox jumps over the lazy dog. "
    return (sentence * (n_chars // len(sentence) + 1))[:n_chars]


async def _collect(
    client: openai.AsyncOpenAI, *, include_usage: bool = True, **kwargs: Any
) -> list[ChatCompletionChunk]:
    kwargs.setdefault("model", BIG)
    kwargs.setdefault("messages", HELLO)
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    stream = await client.chat.completions.create(stream=True, **options, **kwargs)
    return [chunk async for chunk in stream]


async def test_streamed_text_and_final_usage_chunk(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI, tokenizer: FakeTokenizer
) -> None:
    answer = "I am a scripted model, answering in small pieces."
    fake.script.add(text_step(answer, chunk_chars=5))
    chunks = await _collect(gpt)

    *content_chunks, last = chunks
    text = "".join(c.choices[0].delta.content or "" for c in content_chunks)
    assert text == answer
    assert content_chunks[0].choices[0].delta.role == "assistant"
    assert content_chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in content_chunks)
    # include_usage: the last chunk has no choices and the usage of the whole call.
    assert last.choices == []
    assert last.usage is not None
    record = fake.requests[-1]
    assert record.body is not None
    expected = tokenizer.count_request(record.body, "openai")
    assert last.usage.prompt_tokens == expected == record.input_tokens
    assert last.usage.completion_tokens == tokenizer.count_output(Reply(text=answer))
    assert last.usage.total_tokens == expected + last.usage.completion_tokens
    assert last.usage.prompt_tokens_details is not None
    assert last.usage.prompt_tokens_details.cached_tokens == 0


async def test_without_include_usage_no_usage_chunk_is_sent(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    chunks = await _collect(gpt, include_usage=False)
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_parallel_tool_calls_stream_by_index_and_assemble(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    fake.script.add(
        tool_step(
            call("read_file", {"path": "notes/plan.md"}),
            call("read_file", {"path": "notes/todo.md"}),
        )
    )
    chunks = await _collect(gpt, tools=TOOLS)

    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                entry = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += delta.id or ""
                if delta.function is not None:
                    entry["name"] += delta.function.name or ""
                    entry["arguments"] += delta.function.arguments or ""
    assert sorted(calls) == [0, 1]
    assert [json.loads(calls[i]["arguments"]) for i in (0, 1)] == [
        {"path": "notes/plan.md"},
        {"path": "notes/todo.md"},
    ]
    assert {calls[0]["name"], calls[1]["name"]} == {"read_file"}
    assert calls[0]["id"].startswith("call_") and calls[0]["id"] != calls[1]["id"]
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == "tool_calls"
    # Argument fragments really are streamed, not sent in one piece.
    fragments = [
        d for c in chunks for ch in c.choices for d in ch.delta.tool_calls or [] if d.id is None
    ]
    assert len(fragments) > 2


async def test_non_streaming_completion(fake: FakeProviderServer, gpt: openai.AsyncOpenAI) -> None:
    fake.script.add(tool_step(call("read_file", {"path": "a.txt"}), text="Reading."))
    completion = await gpt.chat.completions.create(model=BIG, messages=HELLO, tools=TOOLS)
    (choice,) = completion.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Reading."
    assert choice.message.tool_calls is not None
    (tool_call,) = choice.message.tool_calls
    assert tool_call.type == "function"
    assert json.loads(tool_call.function.arguments) == {"path": "a.txt"}
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == fake.requests[-1].input_tokens


async def test_tool_messages_are_decoded_into_one_engine_tool_message(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "Read both"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{}"},
                },
                {"id": "c2", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
    ]
    await gpt.chat.completions.create(model=BIG, messages=messages)
    request = fake.script.calls[-1]
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert [(r.call_id, r.name, r.output) for r in request.messages[2].tool_results] == [
        ("c1", "read_file", "one"),
        ("c2", "grep", "two"),
    ]


# --- context window --------------------------------------------------------------------


async def test_messages_over_the_window_get_context_length_exceeded(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI, tokenizer: FakeTokenizer
) -> None:
    messages = [{"role": "user", "content": _words(4000)}]
    with pytest.raises(openai.BadRequestError) as caught:
        await gpt.chat.completions.create(model=SMALL, messages=messages)  # type: ignore[arg-type]
    record = fake.requests[-1]
    assert record.body is not None
    tokens = tokenizer.count_request(record.body, "openai")
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.body == {
        "message": (
            f"This model's maximum context length is 1000 tokens. However, your messages "
            f"resulted in {tokens} tokens. Please reduce the length of the messages."
        ),
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }


async def test_messages_plus_completion_over_the_window(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI, tokenizer: FakeTokenizer
) -> None:
    messages = [{"role": "user", "content": _words(2800)}]
    with pytest.raises(openai.BadRequestError) as caught:
        await gpt.chat.completions.create(
            model=SMALL,
            messages=messages,  # type: ignore[arg-type]
            max_completion_tokens=200,
        )
    record = fake.requests[-1]
    assert record.body is not None
    tokens = tokenizer.count_request(record.body, "openai")
    assert tokens <= 1000 < tokens + 200
    # The SDK prefixes `.message` with "Error code: 400 - "; the body holds the API's own.
    assert caught.value.body["message"] == (
        f"This model's maximum context length is 1000 tokens. However, you requested "
        f"{tokens + 200} tokens ({tokens} in the messages, 200 in the completion). Please "
        "reduce the length of the messages or completion."
    )
    assert caught.value.code == "context_length_exceeded"


async def test_max_tokens_above_the_output_limit(gpt: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await gpt.chat.completions.create(model=SMALL, messages=HELLO, max_tokens=500)
    assert caught.value.body["message"] == (
        "max_tokens is too large: 500. This model supports at most 200 completion tokens, "
        "whereas you provided 500."
    )


async def test_unknown_model(gpt: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await gpt.chat.completions.create(model="no-such-model", messages=HELLO)
    assert caught.value.code == "model_not_found"


# --- tool pairing ----------------------------------------------------------------------

_ASSISTANT_CALLS: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_X", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "call_Y", "type": "function", "function": {"name": "f", "arguments": "{}"}},
    ],
}


async def _assert_refused(
    gpt: openai.AsyncOpenAI, messages: list[Any], message: str, param: str, code: str | None
) -> None:
    """MESSAGES get a 400 whose body is the API's own invalid request error."""
    with pytest.raises(openai.BadRequestError) as caught:
        await gpt.chat.completions.create(model=BIG, messages=messages)
    assert caught.value.body == {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": code,
    }


@pytest.mark.parametrize(
    ("messages", "message", "param"),
    [
        (
            [
                {"role": "user", "content": "go"},
                _ASSISTANT_CALLS,
                {"role": "tool", "tool_call_id": "call_X", "content": "done"},
                {"role": "user", "content": "and?"},
            ],
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            "response messages: call_Y",
            "messages.[1].role",
        ),
        (
            [
                {"role": "user", "content": "go"},
                {"role": "tool", "tool_call_id": "call_X", "content": "orphan"},
            ],
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
            "message with 'tool_calls'.",
            "messages.[1].role",
        ),
        (
            [
                {"role": "user", "content": "go"},
                _ASSISTANT_CALLS,
                {"role": "tool", "tool_call_id": "call_Z", "content": "wrong id"},
            ],
            "Invalid parameter: 'tool_call_id' of 'call_Z' not found in 'tool_calls' of "
            "previous message.",
            "messages.[2].tool_call_id",
        ),
    ],
)
async def test_tool_pairing_is_enforced(
    gpt: openai.AsyncOpenAI, messages: list[Any], message: str, param: str
) -> None:
    await _assert_refused(gpt, messages, message, param, code=None)


# --- injected failures -----------------------------------------------------------------


async def test_rate_limit_carries_retry_after(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    fake.fail_next("rate_limit", retry_after=3)
    with pytest.raises(openai.RateLimitError) as caught:
        await _collect(gpt)
    assert caught.value.response.headers["retry-after"] == "3"
    assert caught.value.code == "rate_limit_exceeded"
    assert "Please try again in 3s." in caught.value.message


@pytest.mark.parametrize(
    ("kind", "error_class", "status"),
    [
        ("overloaded", openai.InternalServerError, 503),
        ("server_error", openai.InternalServerError, 500),
        ("auth", openai.AuthenticationError, 401),
    ],
)
async def test_status_failures(
    fake: FakeProviderServer,
    gpt: openai.AsyncOpenAI,
    kind: str,
    error_class: type[openai.APIStatusError],
    status: int,
) -> None:
    fake.fail_next(kind)  # type: ignore[arg-type]
    with pytest.raises(error_class) as caught:
        await _collect(gpt)
    assert caught.value.status_code == status


async def test_disconnect_mid_stream_never_sends_the_usage_chunk(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    fake.script.add(text_step("one two three four five six", chunk_chars=4))
    fake.fail_next("disconnect", after_deltas=2)
    received: list[ChatCompletionChunk] = []
    stream = await gpt.chat.completions.create(
        model=BIG, messages=HELLO, stream=True, stream_options={"include_usage": True}
    )
    with pytest.raises(openai.APIConnectionError):
        async for chunk in stream:
            received.append(chunk)
    assert "".join(c.choices[0].delta.content or "" for c in received) == "one two "
    assert all(c.usage is None for c in received)


async def test_error_chunk_in_the_middle_of_a_stream(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    fake.script.add(error_step(ProviderError("rate_limited", "slow down"), after_text="Partial"))
    received: list[str] = []
    stream = await gpt.chat.completions.create(model=BIG, messages=HELLO, stream=True)
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")
    assert "".join(received) == "Partial"
    assert caught.value.code == "rate_limit_exceeded"


async def test_slow_stream_delivers_while_the_server_is_still_sending(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    fake.script.add(text_step("a slow and steady answer", chunk_chars=6))
    fake.fail_next("slow", delay=0.15)
    stream = await gpt.chat.completions.create(model=BIG, messages=HELLO, stream=True)
    text = ""
    async for chunk in stream:
        piece = chunk.choices[0].delta.content or ""
        if piece and not text:
            assert fake.requests[-1].completed is False
        text += piece
    assert text == "a slow and steady answer"
    assert fake.requests[-1].completed is True


# --- prompt cache and discovery --------------------------------------------------------


async def test_repeated_long_prefix_reports_cached_tokens(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    history: list[Any] = [
        {"role": "system", "content": _words(5000)},
        {"role": "user", "content": "first question"},
    ]
    first = (await _collect(gpt, messages=history))[-1].usage
    follow_up = [
        *history,
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "more"},
    ]
    second = (await _collect(gpt, messages=follow_up))[-1].usage
    assert first is not None and second is not None
    assert first.prompt_tokens_details is not None and second.prompt_tokens_details is not None
    assert first.prompt_tokens_details.cached_tokens == 0
    cached = second.prompt_tokens_details.cached_tokens
    assert cached is not None
    assert cached >= 1024 and cached % 128 == 0
    # The cached part is the shared prefix: never more than the first prompt.
    assert cached <= first.prompt_tokens
    assert second.prompt_tokens == fake.requests[-1].input_tokens


async def test_models_list(gpt: openai.AsyncOpenAI) -> None:
    page = await gpt.models.list()
    assert sorted(m.id for m in page.data) == [BIG, SMALL]


# --- content parts: images -----------------------------------------------------------

PIXEL_URL = "data:image/png;base64,iVBORw0KGgo="
CALL_TURN: list[Any] = [
    {"role": "user", "content": "look"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
        ],
    },
]


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


async def test_images_in_a_user_message_after_tool_messages_are_accepted(
    fake: FakeProviderServer, gpt: openai.AsyncOpenAI
) -> None:
    fake.script.add(text_step("A pixel."))
    images = {"role": "user", "content": [{"type": "text", "text": "Images:"}, _image(PIXEL_URL)]}
    messages = [*CALL_TURN, {"role": "tool", "tool_call_id": "call_1", "content": "[img]"}, images]
    await _collect(gpt, messages=messages)
    remote = [*CALL_TURN[:1], {"role": "user", "content": [_image("https://x.test/a.png")]}]
    fake.script.add(text_step("ok"))
    await _collect(gpt, messages=remote)
    fake.assert_no_errors()


# The refusal (message and param) of an image URL that is neither base64 image data nor
# http(s).
_NOT_AN_IMAGE_URL = (
    "Invalid 'messages[0].content[0].image_url.url'. Expected a base64-encoded data URL "
    "with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), or "
    "an http(s) URL.",
    "messages[0].content[0].image_url.url",
)


@pytest.mark.parametrize(
    ("messages", "message", "param"),
    [
        (
            [
                *CALL_TURN,
                {"role": "tool", "tool_call_id": "call_1", "content": [_image(PIXEL_URL)]},
            ],
            "Invalid 'messages[2].content[0]'. Image URLs are only allowed for messages with "
            "role 'user', but this message with role 'tool' contains an image URL.",
            "messages[2].content[0]",
        ),
        (
            [{"role": "user", "content": [_image("file:///etc/a.png")]}],
            *_NOT_AN_IMAGE_URL,
        ),
        (
            [{"role": "user", "content": [_image("data:text/plain;base64,aGk=")]}],
            *_NOT_AN_IMAGE_URL,
        ),
        (
            [{"role": "user", "content": [_image("data:image/png;base64,not base64!")]}],
            *_NOT_AN_IMAGE_URL,
        ),
        (
            [{"role": "user", "content": [{"type": "image", "source": {}}]}],
            "Invalid value: 'image'. Supported values are: 'text', 'image_url', 'input_audio', "
            "'refusal', and 'file'.",
            "messages[0].content[0].type",
        ),
    ],
)
async def test_misplaced_or_malformed_images_are_refused(
    gpt: openai.AsyncOpenAI, messages: list[Any], message: str, param: str
) -> None:
    await _assert_refused(gpt, messages, message, param, code="invalid_value")
