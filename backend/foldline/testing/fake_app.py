"""The ASGI app of `FakeProviderServer`: one request's path from body to answer.

For a generation request (`POST /v1/messages`, `POST /v1/chat/completions`):

1. parse and record the request (raw JSON, headers, the decoded `ModelRequest`);
2. check the API key, when the server was given one;
3. take the next injected failure that applies; an HTTP-status failure answers now,
   before validation, as a real rate limiter or gateway would;
4. validate structure and tool pairing; resolve the model's limits; count the prompt
   with the fake tokenizer; enforce the output limit and the context window;
5. ask the responder for a step; apply summary failures and the `max_tokens` cut;
6. compute usage (prompt cache included) and answer, streamed or not, with the delays,
   disconnects or in-stream errors that were injected or scripted.

The server object owns the state (limits, failure queue, records, cache); this module
only reads and updates it through `ServerState`, the protocol `FakeProviderServer`
satisfies, so it never imports the server module that builds on it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeAlias

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from foldline.providers.base import ModelRequest, ProviderError, Usage
from foldline.testing import wire_errors
from foldline.testing.codec import Wire, decode_request
from foldline.testing.failures import STATUS_KINDS, Failure, RecordedRequest
from foldline.testing.fake_models import ModelsServerState, handle_model, handle_models
from foldline.testing.fake_tokenizer import Element, FakeTokenizer
from foldline.testing.local_servers import EmptyStream, LocalPersonality
from foldline.testing.reasoning_rules import (
    anthropic_thinking_on,
    check_anthropic_thinking,
    check_openai_chat_reasoning,
    signed,
    with_reasoning,
)
from foldline.testing.scripted import ScriptedModel
from foldline.testing.steps import MALFORMED_SUMMARY, Reply, Step, resolve_step
from foldline.testing.validation import ModelLimits, check_limits, check_structure
from foldline.testing.wire_errors import WireError, openai_error
from foldline.testing.wire_replies import Frame, complete_body, stream_plan

Responder: TypeAlias = ScriptedModel | Callable[[dict[str, Any], Wire], Step]
"""Decides the answers: a script, or a function of the raw body and the wire."""


class ServerState(ModelsServerState, Protocol):
    """What a request reads and updates on the server that owns the app."""

    responder: Responder
    models: dict[str, ModelLimits]
    tokenizer: FakeTokenizer
    delta_delay: float
    is_summary: Callable[[ModelRequest], bool]
    errors: list[BaseException]
    personality: LocalPersonality | None

    def limits_for(self, model: str) -> ModelLimits | None: ...

    def record(self, record: RecordedRequest) -> None: ...

    def take_failure(self, wire: Wire, is_summary: bool) -> Failure | None: ...

    def usage(
        self, model: str, wire: Wire, fixed: int, elements: list[Element], output_tokens: int
    ) -> Usage: ...


ASGIResponse = Callable[[Scope, Receive, Send], Awaitable[None]]

_ids = itertools.count(1)


def _error_response(error: WireError, record: RecordedRequest) -> Response:
    record.status = error.status
    record.error = error
    record.completed = True
    return Response(
        error.encoded(),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


class _Delivery:
    """Sends a prepared answer, honouring delays and the point where it must break.

    `cut_index` is the frame before which the answer stops: with `cut_frame` (an
    in-stream error) the stream then ends cleanly after that frame; without it the
    connection is dropped, which uvicorn does when an app returns without finishing
    its response, and the client sees an incomplete body.
    """

    def __init__(
        self,
        frames: list[Frame],
        *,
        content_type: str,
        headers: dict[str, str],
        delay: float,
        cut_index: int | None,
        cut_frame: bytes | None,
        record: RecordedRequest,
        personality: LocalPersonality | None = None,
    ) -> None:
        self.record = record
        self.personality = personality
        self.frames = frames
        self.content_type = content_type
        self.headers = headers
        self.delay = delay
        self.cut_index = cut_index
        self.cut_frame = cut_frame

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.personality is None:
            await self._send_all(send, None)
            return
        cut = await self.personality.take_slot()
        try:
            await self._send_all(send, cut)
        finally:
            self.personality.free_slot(cut)

    async def _send_all(self, send: Send, interrupted: asyncio.Event | None) -> None:
        headers = [(b"content-type", self.content_type.encode()), (b"cache-control", b"no-cache")]
        headers += [(k.encode(), v.encode()) for k, v in self.headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        try:
            for i, frame in enumerate(self.frames):
                if i == self.cut_index:
                    if self.cut_frame is not None:
                        # An in-stream error: the stream then ends cleanly, unfinished.
                        await self._body(send, self.cut_frame, more=True)
                        await self._body(send, b"", more=False)
                    # Without an error frame, returning before the final empty body makes
                    # uvicorn drop the connection.
                    return
                if frame.delta and self.delay:
                    await asyncio.sleep(self.delay)
                if interrupted is not None and interrupted.is_set() and frame.delta:
                    # llama-cpp-python: a newer request is waiting, so this stream sends
                    # `[DONE]` now and stops, with no finish reason.
                    assert self.personality is not None
                    self.personality.interrupted += 1
                    await self._body(send, b"data: [DONE]\n\n", more=True)
                    await self._body(send, b"", more=False)
                    return
                await self._body(send, frame.data, more=True)
            # Marked before the last send: once the client holds the whole answer, a test
            # reading the record must already see it complete.
            self.record.completed = True
            await self._body(send, b"", more=False)
        except OSError:
            # The client went away first (it cancelled or closed its stream): nothing to do.
            return

    @staticmethod
    async def _body(send: Send, data: bytes, *, more: bool) -> None:
        await send({"type": "http.response.body", "body": data, "more_body": more})


def _cut_index(frames: list[Frame], after_deltas: int) -> int:
    """The frame index at which to break so that exactly `after_deltas` deltas went out
    (or all of them, when there are fewer), but never before the stream's first frame."""
    positions = [i for i, f in enumerate(frames) if f.delta]
    if after_deltas < len(positions):
        return max(positions[after_deltas], 1)
    if positions:
        return positions[-1] + 1
    return 1


def _clip_to_max_tokens(reply: Reply, limit: int, server: ServerState) -> Reply:
    """A reply longer than `max_tokens` is cut there, as a real model's would be."""
    if server.tokenizer.count_output(reply) <= limit:
        return reply
    chars = int(limit * server.tokenizer.chars_per_token)
    reasoning = reply.reasoning[:chars]
    text = reply.text[: max(chars - len(reasoning), 0)]
    return replace(
        reply, reasoning=reasoning, text=text, tool_calls=(), error=None, stop="max_tokens"
    )


def _api_key_ok(headers: dict[str, str], wire: Wire, expected: str) -> bool:
    # The Anthropic API takes `x-api-key` (and Bearer tokens); anthropic>=2 sends even a
    # plain API key as `Authorization: Bearer`, so both are accepted on that wire.
    bearer = headers.get("authorization") == f"Bearer {expected}"
    if wire == "anthropic":
        return bearer or headers.get("x-api-key") == expected
    return bearer


async def _read_json(request: Request, wire: Wire) -> dict[str, Any] | WireError:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        if wire == "anthropic":
            return wire_errors.bad_request(
                wire, "There was an error parsing the body of your request."
            )
        return wire_errors.openai_error(
            400,
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly.)",
        )
    return body


def _respond(
    server: ServerState, body: dict[str, Any], wire: Wire, request: ModelRequest
) -> Reply | BaseException:
    """The responder's step for this request; anything it raises is its answer too."""
    responder = server.responder
    try:
        if isinstance(responder, ScriptedModel):
            return responder.next_step(request)
        return resolve_step(responder(body, wire), request)
    except Exception as error:  # a raising responder answers with that error
        return error


def _summary_failure(reply: Reply, failure: Failure | None) -> Reply:
    if failure is None:
        return reply
    if failure.kind == "empty_summary":
        return Reply(text="", chunk_chars=reply.chunk_chars)
    if failure.kind == "malformed_summary":
        return Reply(text=failure.text or MALFORMED_SUMMARY, chunk_chars=reply.chunk_chars)
    return reply


async def handle_generation(server: ServerState, request: Request, wire: Wire) -> ASGIResponse:
    headers = {k.lower(): v for k, v in request.headers.items()}
    record = RecordedRequest(wire=wire, path=request.url.path, headers=headers)
    server.record(record)
    record.raw = await request.body()
    parsed = await _read_json(request, wire)
    if isinstance(parsed, WireError):
        return _error_response(parsed, record)
    body = parsed
    record.body = body
    if server.api_key is not None and not _api_key_ok(headers, wire, server.api_key):
        return _error_response(wire_errors.unauthorized(wire), record)
    try:
        decoded = decode_request(body, wire)
    except (TypeError, ValueError, AttributeError) as error:
        return _error_response(wire_errors.bad_request(wire, f"invalid request: {error}"), record)
    record.model_request = decoded
    record.is_summary = server.is_summary(decoded)
    failure = server.take_failure(wire, record.is_summary)
    record.failure = failure.kind if failure else None
    if failure is not None and failure.kind in STATUS_KINDS and failure.after_deltas is None:
        return _error_response(failure.wire_error(wire), record)

    structure_error = check_structure(body, wire) or (
        check_anthropic_thinking(body) if wire == "anthropic" else check_openai_chat_reasoning(body)
    )
    if structure_error is not None:
        return _error_response(structure_error, record)
    model = str(body["model"])
    limits = server.limits_for(model)
    if limits is None:
        return _error_response(wire_errors.unknown_model(wire, model), record)
    fixed = server.tokenizer.fixed_tokens(body, wire)
    elements = server.tokenizer.elements(body, wire)
    input_tokens = fixed + sum(e.tokens for e in elements)
    personality = server.personality
    if personality is not None:
        # A local server counts its own way and answers an overflow its own way.
        input_tokens = personality.prompt_tokens(body, server.tokenizer, input_tokens)
        verdict = personality.overflow(body, input_tokens)
        record.input_tokens = input_tokens
        if isinstance(verdict, WireError):
            return _error_response(verdict, record)
        if verdict == "empty":
            record.status = 200
            record.completed = True
            return EmptyStream()
        if verdict == "in-stream":
            record.status = 200
            error = openai_error(400, personality.lm_studio_overflow(input_tokens))
            return _Delivery(
                [Frame(b"")],
                content_type="text/event-stream; charset=utf-8",
                headers={},
                delay=0.0,
                cut_index=0,
                cut_frame=error.stream_frame(wire),
                record=record,
            )
        record.prompt_evaluated = personality.evaluate(body, server.tokenizer)
        limits = replace(limits, context_window=0)
    record.input_tokens = input_tokens
    limit_error = check_limits(body, wire, limits, input_tokens)
    if limit_error is not None:
        return _error_response(limit_error, record)

    outcome = _respond(server, body, wire, decoded)
    if isinstance(outcome, BaseException):
        return _error_response(
            _error_for(server, outcome, wire, input_tokens, limits.context_window), record
        )
    reply = outcome.with_call_ids(lambda: _call_id(wire))
    reply = _summary_failure(reply, failure)
    # Chat Completions streams no reasoning from OpenAI's own models; Anthropic thinks
    # when asked and signs what it thought.
    reply = with_reasoning(reply, wire == "anthropic" and anthropic_thinking_on(body))
    reply = signed(_clip_to_max_tokens(reply, decoded.max_output_tokens, server))
    streamed_text = bool(body.get("stream")) and bool(reply.text or reply.reasoning)
    if reply.error is not None and not streamed_text:
        # A failure before any text (or in a non-streamed call) is an HTTP error.
        error = _error_for(server, reply.error, wire, input_tokens, limits.context_window)
        return _error_response(error, record)

    usage = reply.usage or server.usage(
        model, wire, fixed, elements, server.tokenizer.count_output(reply)
    )
    if personality is not None and personality.counts_template:
        usage = Usage(input_tokens=input_tokens, output_tokens=usage.output_tokens)
    record.usage = usage
    record.reply = reply
    record.status = 200
    return _deliver(
        server, record, body, wire, reply, usage, failure, input_tokens, limits.context_window
    )


def _error_for(
    server: ServerState, error: BaseException, wire: Wire, input_tokens: int, window: int
) -> WireError:
    if isinstance(error, ProviderError):
        return wire_errors.from_provider_error(
            error, wire, input_tokens=input_tokens, window=window
        )
    # Anything else is a bug in the test's responder: keep it for the test to inspect and
    # answer with a 500 that names it, rather than hiding it.
    server.errors.append(error)
    return wire_errors.server_error(wire, f"responder raised {error!r}")


def _call_id(wire: Wire) -> str:
    n = next(_ids)
    return f"toolu_fake{n:014d}" if wire == "anthropic" else f"call_fake{n:014d}"


def _deliver(
    server: ServerState,
    record: RecordedRequest,
    body: dict[str, Any],
    wire: Wire,
    reply: Reply,
    usage: Usage,
    failure: Failure | None,
    input_tokens: int,
    window: int,
) -> ASGIResponse:
    model = str(body["model"])
    response_id = (
        f"msg_fake{next(_ids):018d}" if wire == "anthropic" else f"chatcmpl-fake{next(_ids):016d}"
    )
    created = int(time.time())
    delay = max(server.delta_delay, reply.delay, failure.delay if failure else 0.0)
    extra = (
        {"request-id": wire_errors.request_id(wire)}
        if wire == "anthropic"
        else {"x-request-id": wire_errors.request_id(wire)}
    )
    stream = bool(body.get("stream"))
    error_after_deltas = 0
    """Where a scripted error strikes in a stream (a stream alone gets one after text)."""
    personality = server.personality
    if stream:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if personality is not None and not personality.streams_usage:
            include_usage = False
        plan = stream_plan(
            wire,
            reply,
            model=model,
            response_id=response_id,
            created=created,
            usage=usage,
            include_usage=include_usage,
        )
        frames = plan.frames
        error_after_deltas = plan.error_after_deltas
        content_type = "text/event-stream; charset=utf-8"
    else:
        data = json.dumps(
            complete_body(
                wire, reply, model=model, response_id=response_id, created=created, usage=usage
            )
        )
        # A non-streamed body is cut in the middle when a disconnect is injected.
        frames = [
            Frame(data.encode()[: len(data) // 2], delta=True),
            Frame(data.encode()[len(data) // 2 :]),
        ]
        content_type = "application/json"
    cut_index: int | None = None
    cut_frame: bytes | None = None
    if failure is not None and failure.kind == "disconnect":
        cut_index = _cut_index(frames, failure.after_deltas or 0) if stream else 1
    elif failure is not None and failure.kind in STATUS_KINDS and failure.after_deltas is not None:
        cut_index = _cut_index(frames, failure.after_deltas)
        cut_frame = failure.wire_error(wire).stream_frame(wire)
    elif reply.error is not None:
        # Only streams with text get here: the error strikes after that text. A
        # ProviderError becomes the wire's in-stream error; anything else a dropped
        # connection, which is what a crashing server looks like to a client.
        cut_index = _cut_index(frames, error_after_deltas)
        if isinstance(reply.error, ProviderError):
            cut_frame = _error_for(server, reply.error, wire, input_tokens, window).stream_frame(
                wire
            )
    return _Delivery(
        frames,
        content_type=content_type,
        headers=extra,
        delay=delay,
        cut_index=cut_index,
        cut_frame=cut_frame,
        record=record,
        personality=personality,
    )


def _error_response_app(error: WireError) -> Response:
    return Response(
        error.encoded(),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


async def handle_count_tokens(server: ServerState, request: Request) -> Response:
    """Anthropic's `POST /v1/messages/count_tokens`, answered with the fake tokenizer."""
    parsed = await _read_json(request, "anthropic")
    if isinstance(parsed, WireError):
        return _error_response_app(parsed)
    error = check_structure({"max_tokens": 1, **parsed}, "anthropic")
    if error is not None:
        return _error_response_app(error)
    return JSONResponse({"input_tokens": server.tokenizer.count_request(parsed, "anthropic")})


def build_app(server: ServerState, extra_routes: Sequence[Route] = ()) -> Starlette:
    """The fake providers' routes; `extra_routes` adds endpoints built on this module
    (the OpenAI Responses API: `responses_app.responses_route`)."""

    async def anthropic_messages(request: Request) -> ASGIResponse:
        return await handle_generation(server, request, "anthropic")

    async def openai_chat(request: Request) -> ASGIResponse:
        return await handle_generation(server, request, "openai")

    async def count_tokens(request: Request) -> Response:
        return await handle_count_tokens(server, request)

    async def models(request: Request) -> Response:
        return await handle_models(server, request)

    async def model(request: Request) -> Response:
        return await handle_model(server, request)

    return Starlette(
        routes=[
            Route("/v1/messages", anthropic_messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
            Route("/v1/chat/completions", openai_chat, methods=["POST"]),
            *extra_routes,
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", model, methods=["GET"]),
        ]
    )
