"""`POST /v1/responses`: the OpenAI Responses API of the fake server.

The same path as the other generation endpoints (`fake_app.handle_generation`): record,
check the key, take an injected failure, validate (`responses_wire.check_responses`),
count the prompt as the Chat Completions body the model reads (`responses_as_chat`, so
the fake tokenizer, prompt cache and limits apply unchanged), ask the responder, answer.
Requests are recorded on the `openai` wire with this path.

When the request asks for reasoning (`reasoning.effort` other than none/minimal), the
fake model reasons: one reasoning item whose summary is the reply's reasoning, returned
with `encrypted_content` bound to its id; the calls it makes after it carry call ids
that name the item, so a later request that leaves it out is refused.

Stream: `response.created`, `response.in_progress`, then per output item
`response.output_item.added`, its deltas (`response.reasoning_summary_text.delta`,
`response.output_text.delta`, `response.function_call_arguments.delta`) with their
`.done` events, `response.output_item.done`; finally `response.completed` (or
`response.incomplete` when cut at `max_output_tokens`) with the usage: `input_tokens`
including `input_tokens_details.cached_tokens`, `output_tokens` including
`output_tokens_details.reasoning_tokens`.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

from starlette.requests import Request
from starlette.routing import Route

from foldline.core.wire import tool_arguments_json
from foldline.providers.base import Usage
from foldline.testing import wire_errors
from foldline.testing.failures import STATUS_KINDS, RecordedRequest
from foldline.testing.fake_app import (
    ASGIResponse,
    ServerState,
    _api_key_ok,
    _clip_to_max_tokens,
    _cut_index,
    _Delivery,
    _error_for,
    _error_response,
    _read_json,
    _respond,
    _summary_failure,
)
from foldline.testing.reasoning_rules import (
    encrypted_reasoning,
    openai_effort_asked,
    with_reasoning,
)
from foldline.testing.responses_wire import (
    check_responses,
    decode_responses,
    reasoning_call_id,
    responses_as_chat,
)
from foldline.testing.steps import Reply, split_chunks
from foldline.testing.validation import check_limits
from foldline.testing.wire_replies import Frame, StreamPlan

_ids = itertools.count(1)


def responses_route(server: ServerState) -> Route:
    """`POST /v1/responses` on `server`, for `fake_app.build_app`."""

    async def endpoint(request: Request) -> ASGIResponse:
        return await handle_responses(server, request)

    return Route("/v1/responses", endpoint, methods=["POST"])


async def handle_responses(server: ServerState, request: Request) -> ASGIResponse:
    headers = {k.lower(): v for k, v in request.headers.items()}
    record = RecordedRequest(wire="openai", path=request.url.path, headers=headers)
    server.record(record)
    record.raw = await request.body()
    parsed = await _read_json(request, "openai")
    if isinstance(parsed, wire_errors.WireError):
        return _error_response(parsed, record)
    body = parsed
    record.body = body
    if server.api_key is not None and not _api_key_ok(headers, "openai", server.api_key):
        return _error_response(wire_errors.unauthorized("openai"), record)
    decoded = decode_responses(body)
    record.model_request = decoded
    record.is_summary = server.is_summary(decoded)
    failure = server.take_failure("openai", record.is_summary)
    record.failure = failure.kind if failure else None
    if failure is not None and failure.kind in STATUS_KINDS and failure.after_deltas is None:
        return _error_response(failure.wire_error("openai"), record)
    error = check_responses(body)
    if error is not None:
        return _error_response(error, record)
    model = str(body["model"])
    limits = server.limits_for(model)
    if limits is None:
        return _error_response(wire_errors.unknown_model("openai", model), record)
    chat = responses_as_chat(body)
    fixed = server.tokenizer.fixed_tokens(chat, "openai")
    elements = server.tokenizer.elements(chat, "openai")
    input_tokens = fixed + sum(e.tokens for e in elements)
    record.input_tokens = input_tokens
    error = check_limits(chat, "openai", limits, input_tokens)
    if error is not None:
        return _error_response(error, record)

    outcome = _respond(server, chat, "openai", decoded)
    if isinstance(outcome, BaseException):
        error = _error_for(server, outcome, "openai", input_tokens, limits.context_window)
        return _error_response(error, record)
    reasoning = body.get("reasoning") or {}
    asked = openai_effort_asked(reasoning.get("effort"))
    reply = with_reasoning(_summary_failure(outcome, failure), asked)
    item_id = f"rs_fake{next(_ids):016d}" if reply.reasoning else None
    calls = tuple(
        c if c.id else c.model_copy(update={"id": _call_id(item_id, n)})
        for n, c in enumerate(reply.tool_calls)
    )
    reply = _clip_to_max_tokens(replace(reply, tool_calls=calls), decoded.max_output_tokens, server)
    streamed_text = bool(body.get("stream")) and bool(reply.text or reply.reasoning)
    if reply.error is not None and not streamed_text:
        error = _error_for(server, reply.error, "openai", input_tokens, limits.context_window)
        return _error_response(error, record)
    usage = reply.usage or server.usage(
        model, "openai", fixed, elements, server.tokenizer.count_output(reply)
    )
    if reply.reasoning and not usage.reasoning_tokens:
        usage = replace(usage, reasoning_tokens=server.tokenizer.count_text(reply.reasoning))
    record.usage = usage
    record.reply = reply
    record.status = 200
    plan = responses_stream(reply, model, item_id, usage)
    delay = max(server.delta_delay, reply.delay, failure.delay if failure else 0.0)
    extra = {"x-request-id": wire_errors.request_id("openai")}
    if not body.get("stream"):
        data = json.dumps(plan.response).encode()
        return _Delivery(
            [Frame(data)],
            content_type="application/json",
            headers=extra,
            delay=0.0,
            cut_index=1 if failure is not None and failure.kind == "disconnect" else None,
            cut_frame=None,
            record=record,
        )
    frames = plan.frames
    cut_index: int | None = None
    cut_frame: bytes | None = None
    if failure is not None and failure.kind == "disconnect":
        cut_index = _cut_index(frames, failure.after_deltas or 0)
    elif failure is not None and failure.kind in STATUS_KINDS and failure.after_deltas is not None:
        cut_index = _cut_index(frames, failure.after_deltas)
        cut_frame = failure.wire_error("openai").stream_frame("openai")
    elif reply.error is not None:
        cut_index = _cut_index(frames, plan.error_after_deltas)
        error = _error_for(server, reply.error, "openai", input_tokens, limits.context_window)
        cut_frame = error.stream_frame("openai")
    return _Delivery(
        frames,
        content_type="text/event-stream; charset=utf-8",
        headers=extra,
        delay=delay,
        cut_index=cut_index,
        cut_frame=cut_frame,
        record=record,
    )


def _call_id(item_id: str | None, n: int) -> str:
    if item_id is not None:
        return reasoning_call_id(item_id, n)
    return f"call_fake{next(_ids):014d}"


@dataclass(frozen=True)
class ResponsesPlan(StreamPlan):
    """The stream's frames, plus the final response object (the non-streamed body)."""

    response: dict[str, Any] = field(default_factory=dict)


def responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.total_input,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_creation_tokens,
        },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_input + usage.output_tokens,
    }


def responses_stream(reply: Reply, model: str, item_id: str | None, usage: Usage) -> ResponsesPlan:
    """The reply as Responses stream events (see the module docstring)."""
    response_id = f"resp_fake{next(_ids):020d}"
    sequence = itertools.count()
    frames: list[Frame] = []
    output: list[dict[str, Any]] = []

    def event(kind: str, is_delta: bool = False, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": next(sequence), **fields}
        data = json.dumps(payload, separators=(",", ":"))
        frames.append(Frame(f"event: {kind}\ndata: {data}\n\n".encode(), delta=is_delta))

    def response(status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": response_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": model,
            "output": list(output),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "store": False,
            "error": None,
            "incomplete_details": None,
            "usage": None,
            **fields,
        }

    event("response.created", response=response("in_progress"))
    event("response.in_progress", response=response("in_progress"))
    if item_id is not None:
        index = len(output)
        summary = [{"type": "summary_text", "text": reply.reasoning}]
        item = {"type": "reasoning", "id": item_id, "summary": summary}
        item["encrypted_content"] = encrypted_reasoning(item_id, reply.reasoning)
        event("response.output_item.added", output_index=index, item={**item, "summary": []})
        part = {"item_id": item_id, "output_index": index, "summary_index": 0}
        event(
            "response.reasoning_summary_part.added",
            **part,
            part={"type": "summary_text", "text": ""},
        )
        for piece in reply.reasoning_chunks():
            event("response.reasoning_summary_text.delta", True, **part, delta=piece)
        event("response.reasoning_summary_text.done", **part, text=reply.reasoning)
        event("response.reasoning_summary_part.done", **part, part=summary[0])
        output.append(item)
        event("response.output_item.done", output_index=index, item=item)
    if reply.text:
        index = len(output)
        message_id = f"msg_fake{next(_ids):020d}"
        shell = {
            "type": "message",
            "id": message_id,
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        event("response.output_item.added", output_index=index, item=shell)
        part = {"item_id": message_id, "output_index": index, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": []}
        event("response.content_part.added", **part, part=empty)
        for piece in reply.text_chunks():
            event("response.output_text.delta", True, **part, delta=piece, logprobs=[])
        event("response.output_text.done", **part, text=reply.text, logprobs=[])
        full = {"type": "output_text", "text": reply.text, "annotations": []}
        event("response.content_part.done", **part, part=full)
        item = {**shell, "status": "completed", "content": [full]}
        output.append(item)
        event("response.output_item.done", output_index=index, item=item)
    deltas_before_tools = sum(1 for f in frames if f.delta)
    for call in reply.tool_calls:
        index = len(output)
        arguments = tool_arguments_json(call)
        item = {
            "type": "function_call",
            "id": f"fc_fake{next(_ids):020d}",
            "call_id": call.id,
            "name": call.name,
            "arguments": "",
            "status": "in_progress",
        }
        event("response.output_item.added", output_index=index, item=item)
        for piece in split_chunks(arguments, reply.chunk_chars):
            event(
                "response.function_call_arguments.delta",
                True,
                item_id=item["id"],
                output_index=index,
                delta=piece,
            )
        event(
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=index,
            arguments=arguments,
        )
        done = {**item, "arguments": arguments, "status": "completed"}
        output.append(done)
        event("response.output_item.done", output_index=index, item=done)
    if reply.stop_reason == "max_tokens":
        final = response(
            "incomplete",
            incomplete_details={"reason": "max_output_tokens"},
            usage=responses_usage(usage),
        )
        event("response.incomplete", response=final)
    else:
        final = response("completed", usage=responses_usage(usage))
        event("response.completed", response=final)
    return ResponsesPlan(frames, deltas_before_tools, final)
