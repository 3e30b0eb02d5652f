"""The providers' real streaming events and error bodies, as the fake server sends them."""

from __future__ import annotations

import json
from typing import Any

Event = tuple[str | None, Any]

# --- Anthropic Messages ----------------------------------------------------------------


def anthropic_message_start(
    *, input_tokens: int = 10, cache_read: int = 0, cache_creation: int = 0
) -> Event:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-test",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_creation,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        },
    )


def anthropic_text_block(index: int, *pieces: str) -> list[Event]:
    events: list[Event] = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
    ]
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": piece},
            },
        )
        for piece in pieces
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def anthropic_tool_block(index: int, call_id: str, name: str, *json_pieces: str) -> list[Event]:
    events: list[Event] = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            },
        )
    ]
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            },
        )
        for piece in json_pieces
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def anthropic_thinking_block(index: int, thinking: list[str], signature: str) -> list[Event]:
    events: list[Event] = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
    ]
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "thinking_delta", "thinking": piece},
            },
        )
        for piece in thinking
    ]
    events.append(
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": signature},
            },
        )
    )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def anthropic_message_end(stop_reason: str = "end_turn", output_tokens: int = 5) -> list[Event]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def anthropic_text_reply(*pieces: str, stop_reason: str = "end_turn", **usage: int) -> list[Event]:
    output_tokens = usage.pop("output_tokens", 5)
    return [
        anthropic_message_start(**usage),
        ("ping", {"type": "ping"}),
        *anthropic_text_block(0, *pieces),
        *anthropic_message_end(stop_reason, output_tokens),
    ]


def anthropic_error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


# --- OpenAI Chat Completions -----------------------------------------------------------


def openai_chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> Event:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return (None, chunk)


def openai_usage_chunk(prompt: int, completion: int, cached: int | None = None) -> Event:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return openai_chunk(usage=usage, no_choices=True)


DONE: Event = (None, "[DONE]")


def openai_text_reply(
    *pieces: str, finish_reason: str = "stop", usage: tuple[int, int, int | None] | None = None
) -> list[Event]:
    events = [openai_chunk({"role": "assistant", "content": ""})]
    events += [openai_chunk({"content": piece}) for piece in pieces]
    events.append(openai_chunk({}, finish_reason))
    if usage is not None:
        events.append(openai_usage_chunk(*usage))
    events.append(DONE)
    return events


def openai_tool_fragment(
    index: int, *, call_id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        fragment["id"] = call_id
        fragment["type"] = "function"
    if name is not None:
        fragment["function"]["name"] = name
    return {"tool_calls": [fragment]}


def openai_error_body(
    message: str, error_type: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def arguments(value: dict[str, Any]) -> str:
    return json.dumps(value)
