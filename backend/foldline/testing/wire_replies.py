"""A scripted `Reply` spoken in the providers' response formats.

Streams are produced as a list of SSE frames, each marked when it is a *delta* (text,
reasoning or tool-argument fragment), so the server can slow a stream down, drop the
connection after the n-th delta, or inject an error event there.

Anthropic Messages stream: `message_start` (with input usage, cache fields included),
per content block `content_block_start` / `content_block_delta`... / `content_block_stop`
(thinking with its `signature_delta`, text, `tool_use` with `input_json_delta`s), one
`ping`, `message_delta` (stop reason and cumulative usage), `message_stop`.

OpenAI Chat Completions stream: `chat.completion.chunk`s, the first carrying the role,
tool calls as `tool_calls` deltas with their `index` (id and name first, then argument
fragments), a chunk with the `finish_reason`, then, when `stream_options.include_usage`
is set, a final chunk with `choices: []` and the usage, and `data: [DONE]`. Reasoning,
which OpenAI does not stream on this API, is sent as `reasoning_content` deltas the way
OpenAI-compatible servers (vLLM, DeepSeek) do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from foldline.core.wire import tool_arguments_json
from foldline.providers.base import StopReason, Usage
from foldline.testing.codec import Wire
from foldline.testing.steps import Reply, split_chunks

ANTHROPIC_STOP: dict[StopReason, str] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "context_window_exceeded": "model_context_window_exceeded",
    "other": "refusal",
}
OPENAI_FINISH: dict[StopReason, str] = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "context_window_exceeded": "length",
    "other": "content_filter",
}
SYSTEM_FINGERPRINT = "fp_foldline_fake"


@dataclass(frozen=True)
class Frame:
    """One SSE frame; `delta` marks frames that carry a fragment of the answer."""

    data: bytes
    delta: bool = False


@dataclass(frozen=True)
class StreamPlan:
    """The frames of a stream and where the reply's own scripted error (if any) strikes:
    after `error_after_deltas` delta frames."""

    frames: list[Frame]
    error_after_deltas: int


def _sse(event: str | None, payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload, separators=(",", ":"))
    return (f"event: {event}\n" if event else "").encode() + f"data: {data}\n\n".encode()


# --- Anthropic -------------------------------------------------------------------------


def anthropic_usage(usage: Usage, *, start: bool) -> dict[str, Any]:
    """Usage as Anthropic reports it; `start` is the `message_start` flavour."""
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
    }
    if start:
        out["cache_creation"] = {
            "ephemeral_5m_input_tokens": usage.cache_creation_tokens,
            "ephemeral_1h_input_tokens": 0,
        }
        # message_start reports the output so far, which is never zero on the real API.
        out["output_tokens"] = 1
        out["service_tier"] = "standard"
    else:
        out["output_tokens"] = usage.output_tokens
    return out


def anthropic_content(reply: Reply) -> list[dict[str, Any]]:
    """The reply's content blocks, as in a non-streaming response."""
    blocks: list[dict[str, Any]] = []
    if reply.reasoning:
        blocks.append(
            {
                "type": "thinking",
                "thinking": reply.reasoning,
                "signature": reply.reasoning_signature,
            }
        )
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for c in reply.tool_calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.input)})
    return blocks


def anthropic_message(reply: Reply, model: str, message_id: str, usage: Usage) -> dict[str, Any]:
    """A complete non-streaming Messages response body."""
    full_usage = anthropic_usage(usage, start=True) | {"output_tokens": usage.output_tokens}
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": anthropic_content(reply),
        "stop_reason": ANTHROPIC_STOP[reply.stop_reason],
        "stop_sequence": None,
        "usage": full_usage,
    }


def anthropic_stream(reply: Reply, model: str, message_id: str, usage: Usage) -> StreamPlan:
    frames: list[Frame] = []
    start_message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": anthropic_usage(usage, start=True),
    }
    frames.append(Frame(_sse("message_start", {"type": "message_start", "message": start_message})))
    index = 0
    deltas_before_tools = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        frames.append(
            Frame(
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
        )
        if index == 0:
            frames.append(Frame(_sse("ping", {"type": "ping"})))
        for delta in deltas:
            payload = {"type": "content_block_delta", "index": index, "delta": delta}
            frames.append(Frame(_sse("content_block_delta", payload), delta=True))
        frames.append(
            Frame(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        )
        index += 1

    if reply.reasoning:
        deltas = [{"type": "thinking_delta", "thinking": c} for c in reply.reasoning_chunks()]
        deltas.append({"type": "signature_delta", "signature": reply.reasoning_signature})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        deltas_before_tools += len(deltas)
    if reply.text:
        deltas = [{"type": "text_delta", "text": c} for c in reply.text_chunks()]
        block({"type": "text", "text": ""}, deltas)
        deltas_before_tools += len(deltas)
    for c in reply.tool_calls:
        arguments = tool_arguments_json(c)
        deltas = [{"type": "input_json_delta", "partial_json": ""}]
        deltas += [
            {"type": "input_json_delta", "partial_json": piece}
            for piece in split_chunks(arguments, reply.chunk_chars)
        ]
        block({"type": "tool_use", "id": c.id, "name": c.name, "input": {}}, deltas)
    frames.append(
        Frame(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": ANTHROPIC_STOP[reply.stop_reason],
                        "stop_sequence": None,
                    },
                    "usage": anthropic_usage(usage, start=False),
                },
            )
        )
    )
    frames.append(Frame(_sse("message_stop", {"type": "message_stop"})))
    return StreamPlan(frames, deltas_before_tools)


# --- OpenAI ----------------------------------------------------------------------------


def openai_usage(usage: Usage) -> dict[str, Any]:
    """Usage as Chat Completions reports it: `prompt_tokens` includes cached tokens."""
    prompt = usage.total_input
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def openai_completion(
    reply: Reply, model: str, completion_id: str, created: int, usage: Usage
) -> dict[str, Any]:
    """A complete non-streaming Chat Completions response body."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if reply.text or not reply.tool_calls else None,
        "refusal": None,
        "annotations": [],
    }
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": tool_arguments_json(c)},
            }
            for c in reply.tool_calls
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": OPENAI_FINISH[reply.stop_reason],
            }
        ],
        "usage": openai_usage(usage),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def openai_stream(
    reply: Reply,
    model: str,
    completion_id: str,
    created: int,
    usage: Usage,
    *,
    include_usage: bool,
) -> StreamPlan:
    def chunk(choices: list[dict[str, Any]], usage_value: dict[str, Any] | None = None) -> bytes:
        payload: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": choices,
        }
        # With include_usage every chunk carries `"usage": null` until the last one.
        if include_usage:
            payload["usage"] = usage_value
        return _sse(None, payload)

    def delta(content: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
        return [{"index": 0, "delta": content, "logprobs": None, "finish_reason": finish}]

    frames = [Frame(chunk(delta({"role": "assistant", "content": "", "refusal": None})))]
    for piece in reply.reasoning_chunks():
        frames.append(Frame(chunk(delta({"reasoning_content": piece})), delta=True))
    for piece in reply.text_chunks():
        frames.append(Frame(chunk(delta({"content": piece})), delta=True))
    deltas_before_tools = sum(1 for f in frames if f.delta)
    for i, c in enumerate(reply.tool_calls):
        opening = {
            "index": i,
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": ""},
        }
        frames.append(Frame(chunk(delta({"tool_calls": [opening]})), delta=True))
        for piece in split_chunks(tool_arguments_json(c), reply.chunk_chars):
            fragment = {"index": i, "function": {"arguments": piece}}
            frames.append(Frame(chunk(delta({"tool_calls": [fragment]})), delta=True))
    frames.append(Frame(chunk(delta({}, OPENAI_FINISH[reply.stop_reason]))))
    if include_usage:
        frames.append(Frame(chunk([], openai_usage(usage))))
    frames.append(Frame(b"data: [DONE]\n\n"))
    return StreamPlan(frames, deltas_before_tools)


def stream_plan(
    wire: Wire,
    reply: Reply,
    *,
    model: str,
    response_id: str,
    created: int,
    usage: Usage,
    include_usage: bool,
) -> StreamPlan:
    if wire == "anthropic":
        return anthropic_stream(reply, model, response_id, usage)
    return openai_stream(reply, model, response_id, created, usage, include_usage=include_usage)


def complete_body(
    wire: Wire, reply: Reply, *, model: str, response_id: str, created: int, usage: Usage
) -> dict[str, Any]:
    if wire == "anthropic":
        return anthropic_message(reply, model, response_id, usage)
    return openai_completion(reply, model, response_id, created, usage)
