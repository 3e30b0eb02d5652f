"""OpenAI Chat Completions through the official `openai` SDK, streaming with usage."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2
import openai

from foldline.core.reasoning import (
    chat_refuses_tools_with_reasoning,
    compatible_effort,
    openai_effort,
    reasoning_support,
)
from foldline.core.wire import to_openai_messages, to_openai_tools
from foldline.providers.base import (
    DEFAULT_TIMEOUT_SECONDS,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    Stop,
    StopReason,
    StreamEndedEarly,
    TextDelta,
    ToolCallEvent,
    Usage,
    parse_tool_input,
)
from foldline.providers.sdk_errors import sdk_errors

OPENAI_BASE_URL = "https://api.openai.com/v1"

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}

# Fields in which OpenAI-compatible servers stream reasoning text: DeepSeek, vLLM and
# llama.cpp use `reasoning_content`, Ollama and OpenRouter use `reasoning`.
_REASONING_FIELDS = ("reasoning_content", "reasoning")


def openai_client(
    api_key: str | None,
    base_url: str | None,
    max_retries: int,
    timeout: float | httpx2.Timeout,
    *,
    compatible: bool,
    http_client: httpx2.AsyncClient | None,
) -> openai.AsyncOpenAI | None:
    """The SDK client both OpenAI wires use; None without a key (a compatible server gets
    a placeholder: the SDK insists on one and local servers ignore it). `base_url` is
    always passed so the SDK does not read OPENAI_BASE_URL on its own: the configuration
    has already applied the environment."""
    key = api_key or ("not-needed" if compatible else None)
    if not key:
        return None
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url or OPENAI_BASE_URL,
        max_retries=max_retries,
        timeout=timeout,
        http_client=http_client,
    )


@dataclass
class _PendingToolCall:
    """A tool call whose pieces arrive over several chunks, keyed by its `index`."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIProvider:
    """A `Provider` for OpenAI's Chat Completions API (and servers that copy it).

    `compatible=True` is for OpenAI-compatible servers: they get `max_tokens` instead of
    `max_completion_tokens` (many do not know the newer name) and a placeholder API key
    when none is configured (the SDK insists on one; local servers ignore it).
    """

    wire: Literal["anthropic", "openai"] = "openai"

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None = None,
        max_retries: int = 0,
        timeout: float | httpx2.Timeout = DEFAULT_TIMEOUT_SECONDS,
        *,
        compatible: bool = False,
        stream_usage: bool = True,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url
        self.compatible = compatible
        self.stream_usage = stream_usage
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
            _ = self._client.chat.completions  # 14 modules, imported on first use

    async def aclose(self) -> None:
        """Close the SDK's connection pool."""
        if self._client is not None:
            await self._client.close()

    def _request_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": to_openai_messages(
                request.system,
                request.messages,
                images=request.images,
                # OpenAI reads PDFs on models that take images; a compatible server gets
                # a PDF's extracted text instead.
                documents=request.images and not self.compatible,
            ),
            "stream": True,
        }
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        if self.compatible:
            params["max_tokens"] = request.max_output_tokens
        else:
            params["max_completion_tokens"] = request.max_output_tokens
        if request.tools:
            params["tools"] = to_openai_tools(request.tools)
        effort = (
            compatible_effort(request.reasoning_effort)
            if self.compatible
            else openai_effort(request.model, request.reasoning_effort)
        )
        if (
            effort is not None
            and request.tools
            and chat_refuses_tools_with_reasoning(request.model)
        ):
            # These families refuse function tools with any effort but `none` on this API;
            # the Responses API (`api = "responses"`, their default) takes both. Where the
            # model has no `none` the request goes as asked and the API's refusal says why.
            support = reasoning_support(request.model)
            if support.off == "none":
                effort = "none"
        if effort is not None:
            params["reasoning_effort"] = effort
        elif request.temperature is not None:
            params["temperature"] = request.temperature
        if request.server_options and self.compatible:
            params["extra_body"] = dict(request.server_options)
        if request.cache_key is not None and not self.compatible:
            # One key per conversation routes its requests to the same cache; OpenAI
            # caches the longest repeated prefix by itself. Compatible servers may
            # refuse a parameter they do not know, so they do not get it.
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
            chunks = await self._client.chat.completions.create(**self._request_params(request))
            try:
                async for event in _translate(chunks, compatible=self.compatible):
                    yield event
            finally:
                await chunks.close()


def _usage_event(usage: Any) -> Usage:
    """Chat Completions usage → `Usage`; cached prompt tokens count as cache reads."""
    prompt = usage.prompt_tokens or 0
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    cached = min(cached, prompt)
    return Usage(
        input_tokens=prompt - cached,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
    )


def _reasoning_text(delta: Any) -> str | None:
    extra = delta.model_extra or {}
    for name in _REASONING_FIELDS:
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _add_fragment(pending: dict[int, _PendingToolCall], fragment: Any) -> None:
    """A streamed piece of a tool call, added to the call it belongs to."""
    # Servers that send each call whole in one chunk sometimes omit its `index`; such a
    # fragment is a call of its own.
    index = getattr(fragment, "index", None)
    if not isinstance(index, int):
        index = max(pending, default=-1) + 1
    call = pending.setdefault(index, _PendingToolCall())
    if fragment.id:
        call.id = fragment.id
    if fragment.function is not None:
        piece = fragment.function.name
        # The name normally arrives once; a few servers repeat it in every chunk, which
        # must not double it.
        if piece and piece != call.name:
            call.name += piece
        if fragment.function.arguments:
            call.arguments.append(fragment.function.arguments)


EMPTY_STREAM_MESSAGE = (
    "The local server sent an empty answer, which it does when the conversation does not "
    "fit its context window; if this repeats, set `context_window` for this model in "
    "config.toml to the context size the server was started with."
)
CUT_STREAM_MESSAGE = (
    "The server ended this answer before it finished; a local server with a single slot "
    "does this when another request reaches it. Send the message again to retry."
)


def _timings_usage(chunk: Any) -> Usage | None:
    """Usage from llama.cpp's `timings` (`prompt_n` tokens evaluated, `cache_n` reused
    from its prompt cache, `predicted_n` written), for servers that send timings but no
    `usage` (tools/server/server.cpp, `result_timings`)."""
    timings = (getattr(chunk, "model_extra", None) or {}).get("timings")
    if not isinstance(timings, dict):
        return None
    prompt, cached, written = (timings.get(k) for k in ("prompt_n", "cache_n", "predicted_n"))
    if not isinstance(prompt, int) or not isinstance(written, int):
        return None
    return Usage(
        input_tokens=max(prompt, 0),
        output_tokens=max(written, 0),
        cache_read_tokens=cached if isinstance(cached, int) and cached > 0 else 0,
    )


def _ended_early(*, compatible: bool, anything: bool) -> StreamEndedEarly:
    """Why a stream ended with no `finish_reason`: on a local server an empty stream is
    its answer to a prompt over its window, a cut one another request's interruption."""
    if compatible and not anything:
        return StreamEndedEarly("context_overflow", EMPTY_STREAM_MESSAGE, empty=True)
    if compatible:
        # llama-cpp-python ends the running stream with `[DONE]` and no finish reason
        # when another request arrives (`interrupt_requests`, on by default).
        return StreamEndedEarly("unavailable", CUT_STREAM_MESSAGE, empty=False)
    return StreamEndedEarly(
        "unavailable", "the stream ended before the model finished", empty=not anything
    )


async def _translate(
    chunks: AsyncIterator[Any], *, compatible: bool = False
) -> AsyncIterator[ProviderEvent]:
    """Chat Completions chunks → provider events.

    Text and reasoning stream as they come. Tool calls are assembled by `index` and
    emitted, complete, once the stream has ended; then the usage (from the final chunk
    whose `choices` is empty; some servers attach it to the last choice chunk instead)
    and the stop. A stream that ends without a `finish_reason` was interrupted: it
    raises `unavailable` and reports no usage, as OpenAI itself sends none.
    """
    pending: dict[int, _PendingToolCall] = {}
    finish_reason: str | None = None
    usage: Usage | None = None
    timed: Usage | None = None
    anything = False
    async for chunk in chunks:
        if chunk.usage is not None:
            usage = _usage_event(chunk.usage)
        timed = _timings_usage(chunk) or timed
        for choice in chunk.choices or ():
            # The SDK builds chunks without validation, so a field a server left out is
            # missing rather than None; `getattr` keeps such servers working.
            if getattr(choice, "index", 0) != 0:
                continue
            delta = getattr(choice, "delta", None)
            if delta is not None:
                reasoning = _reasoning_text(delta)
                if reasoning:
                    anything = True
                    yield ReasoningDelta(text=reasoning)
                if delta.content:
                    anything = True
                    yield TextDelta(text=delta.content)
                for fragment in delta.tool_calls or ():
                    anything = True
                    _add_fragment(pending, fragment)
            if getattr(choice, "finish_reason", None):
                finish_reason = choice.finish_reason
    if finish_reason is None:
        raise _ended_early(compatible=compatible, anything=anything)
    usage = usage or timed
    for index in sorted(pending):
        call = pending[index]
        yield ToolCallEvent(
            # A few local servers omit call ids; the pairing of call and result needs
            # one that is unique in the whole conversation.
            id=call.id or f"call_{uuid.uuid4().hex[:24]}",
            name=call.name,
            input=parse_tool_input("".join(call.arguments)),
        )
    if usage is not None:
        yield usage
    reason = _FINISH_REASONS.get(finish_reason, "other")
    if pending and reason == "end_turn":
        # Some OpenAI-compatible servers finish a tool-calling answer with "stop".
        reason = "tool_use"
    yield Stop(reason=reason, raw=finish_reason)
