"""The OpenAI Responses API through the official `openai` SDK, streamed, stateless.

OpenAI's reasoning models take function tools together with reasoning only here (Chat
Completions refuses the pair on the newer families), and only here do they hand their
reasoning back for the tool loop. Foldline keeps no state on OpenAI's side:

- `store: false`, and never `previous_response_id` (which needs stored responses): every
  request carries the model's whole view, as on the other wires;
- `include: ["reasoning.encrypted_content"]` for a reasoning model, so each reasoning
  item comes back encrypted and can be handed back with the calls it preceded;
- `prompt_cache_key` = the conversation's id, so its requests share a prompt cache.

Streamed events: reasoning summary and text deltas stream as they come; a finished
reasoning item (`response.output_item.done`) closes the reasoning with its id and
encrypted content; finished function calls become tool calls; `response.completed` (or
`response.incomplete`) carries the usage, with cached and reasoning tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx2
import openai

from foldline.core.reasoning import openai_effort, reasoning_support
from foldline.core.wire import to_responses_input, to_responses_tools
from foldline.providers.base import (
    DEFAULT_TIMEOUT_SECONDS,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    Stop,
    TextDelta,
    ToolCallEvent,
    Usage,
    parse_tool_input,
)
from foldline.providers.errors import provider_error
from foldline.providers.openai import OPENAI_BASE_URL, openai_client
from foldline.providers.sdk_errors import sdk_errors

ENCRYPTED_REASONING = "reasoning.encrypted_content"


class OpenAIResponsesProvider:
    """A `Provider` for the OpenAI Responses API (`POST /v1/responses`).

    `compatible=True` is for an OpenAI-compatible server configured with `api =
    "responses"`: it gets a placeholder key when none is set and no `prompt_cache_key`.
    """

    wire: Literal["openai-responses"] = "openai-responses"

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None = None,
        max_retries: int = 0,
        timeout: float | httpx2.Timeout = DEFAULT_TIMEOUT_SECONDS,
        *,
        compatible: bool = False,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url
        self.compatible = compatible
        self._client = openai_client(
            api_key,
            base_url,
            max_retries,
            timeout,
            compatible=compatible,
            http_client=http_client,
        )

    def warm_up(self) -> None:
        if self._client is not None:
            _ = self._client.responses  # imported on first use

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    def _request_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "input": to_responses_input(
                request.messages,
                images=request.images,
                # As on Chat Completions: OpenAI reads PDFs on models that take images; a
                # compatible server gets a PDF's extracted text instead.
                documents=request.images and not self.compatible,
            ),
            "stream": True,
            "store": False,
            "max_output_tokens": request.max_output_tokens,
        }
        if request.system:
            params["instructions"] = request.system
        if request.tools:
            params["tools"] = to_responses_tools(request.tools)
        effort = openai_effort(request.model, request.reasoning_effort)
        if effort is not None:
            # A summary of the reasoning is what the person is shown ("auto": the most
            # detailed summary the model offers); the full reasoning stays encrypted.
            reasoning: dict[str, Any] = {"effort": effort}
            if effort != "none":
                reasoning["summary"] = "auto"
            params["reasoning"] = reasoning
            params["include"] = [ENCRYPTED_REASONING]
        if request.temperature is not None and not reasoning_support(request.model).reasons:
            # Reasoning models refuse a temperature other than the default.
            params["temperature"] = request.temperature
        if request.cache_key is not None and not self.compatible:
            params["prompt_cache_key"] = request.cache_key
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self._client is None:
            raise ProviderError(
                "auth",
                f"No API key for provider '{self.name}': add one in Settings or set "
                "OPENAI_API_KEY.",
            )
        with sdk_errors(self.name, openai, self.base_url or OPENAI_BASE_URL):
            events = await self._client.responses.create(**self._request_params(request))
            try:
                async for event in _translate(events):
                    yield event
            finally:
                await events.close()


def responses_usage(usage: Any) -> Usage:
    """Responses usage → `Usage`: `input_tokens` includes the cached ones (reads, and the
    writes on the families that bill them); `output_tokens` includes the reasoning."""
    total = usage.input_tokens or 0
    details = getattr(usage, "input_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    written = (getattr(details, "cache_write_tokens", 0) or 0) if details is not None else 0
    cached = min(cached, total)
    written = min(written, total - cached)
    output_details = getattr(usage, "output_tokens_details", None)
    reasoning = getattr(output_details, "reasoning_tokens", 0) or 0 if output_details else 0
    return Usage(
        input_tokens=total - cached - written,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=cached,
        cache_creation_tokens=written,
        reasoning_tokens=reasoning,
    )


def _reasoning_close(item: Any, streamed: bool) -> ReasoningDelta:
    """The delta that closes a finished reasoning item: its summary when none streamed,
    its id and its encrypted content."""
    text = ""
    if not streamed:
        text = "\n\n".join(s.text for s in getattr(item, "summary", None) or () if s.text)
    return ReasoningDelta(
        text=text, item_id=item.id, encrypted_content=getattr(item, "encrypted_content", None)
    )


def _final_stop(kind: str, response: Any, calls: int) -> Stop:
    """The stop of a response that completed (or ended incomplete: its reason)."""
    if kind == "response.incomplete":
        details = response.incomplete_details
        reason = getattr(details, "reason", None) or "incomplete"
        return Stop(reason="max_tokens" if reason == "max_output_tokens" else "other", raw=reason)
    return Stop(reason="tool_use" if calls else "end_turn", raw="completed")


def _stream_failure(event: Any) -> ProviderError:
    """The error a `response.failed` or `error` event of the stream stands for."""
    if event.type == "response.failed":
        error = event.response.error
        message = getattr(error, "message", None) or "the response failed"
        code = getattr(error, "code", None)
        return provider_error(None, {"error": {"message": message, "code": code}}, None, message)
    body = {"error": {"message": event.message, "code": event.code, "param": event.param}}
    return provider_error(None, body, None, event.message)


async def _translate(events: AsyncIterator[Any]) -> AsyncIterator[ProviderEvent]:
    """Responses stream events → provider events (see the module docstring).

    Summary parts of one reasoning item are separated by a blank line. A stream that ends
    without `response.completed` / `response.incomplete` was interrupted: `unavailable`.
    """
    usage: Usage | None = None
    stop: Stop | None = None
    calls = 0
    streamed_summary: set[str] = set()
    last_part: tuple[str, int] | None = None
    async for event in events:
        kind = event.type
        if kind == "response.reasoning_summary_text.delta":
            part = (event.item_id, event.summary_index)
            if last_part is not None and last_part[0] == part[0] and last_part != part:
                yield ReasoningDelta(text="\n\n")
            last_part = part
            streamed_summary.add(event.item_id)
            if event.delta:
                yield ReasoningDelta(text=event.delta)
        elif kind == "response.output_text.delta":
            if event.delta:
                yield TextDelta(text=event.delta)
        elif kind == "response.output_item.done":
            item = event.item
            if item.type == "reasoning":
                yield _reasoning_close(item, item.id in streamed_summary)
            elif item.type == "function_call":
                calls += 1
                yield ToolCallEvent(
                    id=item.call_id, name=item.name, input=parse_tool_input(item.arguments)
                )
        elif kind in ("response.completed", "response.incomplete"):
            response = event.response
            if response.usage is not None:
                usage = responses_usage(response.usage)
            stop = _final_stop(kind, response, calls)
        elif kind in ("response.failed", "error"):
            raise _stream_failure(event)
    if stop is None:
        raise ProviderError("unavailable", "the stream ended before the response completed")
    if usage is not None:
        yield usage
    yield stop
