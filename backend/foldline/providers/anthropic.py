"""Anthropic Messages API through the official `anthropic` SDK (`messages.stream`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

import anthropic
import httpx2

from foldline.core.reasoning import anthropic_thinking_fields
from foldline.providers.base import (
    DEFAULT_TIMEOUT_SECONDS,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    Stop,
    StopReason,
    TextDelta,
    ToolCallEvent,
    Usage,
    parse_tool_input,
)
from foldline.providers.caching import anthropic_prompt_fields
from foldline.providers.image_fit import fit_anthropic_images
from foldline.providers.sdk_errors import sdk_errors

# Where the SDK sends requests when no base URL is configured (named when it cannot be
# reached).
ANTHROPIC_BASE_URL = "https://api.anthropic.com"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    # We never send stop sequences, but a stop on one is still a natural end of the answer.
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "context_window_exceeded",
}


class AnthropicProvider:
    """A `Provider` for Anthropic's Messages API.

    The SDK's own retries are off (`max_retries=0` by default): the turn loop retries,
    and it must see every failure to fold on overflow and to honour `retry-after`.
    """

    wire: Literal["anthropic", "openai"] = "anthropic"

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None = None,
        max_retries: int = 0,
        timeout: float | httpx2.Timeout = DEFAULT_TIMEOUT_SECONDS,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url
        self._api_key = api_key
        self._client: anthropic.AsyncAnthropic | None = None
        if api_key:
            # `base_url` is passed even when None: the SDK would otherwise read
            # ANTHROPIC_BASE_URL itself, and the configuration has already decided.
            self._client = anthropic.AsyncAnthropic(
                api_key=api_key,
                base_url=base_url or "https://api.anthropic.com",
                max_retries=max_retries,
                timeout=timeout,
                http_client=http_client,
            )

    def warm_up(self) -> None:
        if self._client is not None:
            _ = self._client.messages  # imported and built on first use

    async def aclose(self) -> None:
        """Close the SDK's connection pool."""
        if self._client is not None:
            await self._client.close()

    def _request_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_output_tokens,
            **anthropic_prompt_fields(request),
        }
        # No image over 2000 px goes out: the API refuses them in many-image requests.
        fit_anthropic_images(params["messages"])
        thinking = anthropic_thinking_fields(
            request.model, request.reasoning_effort, request.max_output_tokens, request.thinking
        )
        if thinking and not _loop_keeps_thinking(params["messages"]):
            # A tool loop begun without thinking (the effort was off, or changed mid-loop)
            # cannot go on with it: the API wants the last assistant turn to start with
            # a thinking block and refuses otherwise. It finishes without; the next
            # person's message starts thinking again.
            thinking = {}
        if thinking:
            # `thinking` (and `output_config.effort`): the SDK's own parameters. With
            # thinking on, the API takes no temperature but 1, so none is sent.
            params.update(thinking)
        elif request.temperature is not None:
            # Recent SDKs no longer list `temperature` as a parameter of `stream`; sent in
            # the body it still reaches the API, which decides whether the model takes it.
            params["extra_body"] = {"temperature": request.temperature}
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self._client is None:
            raise ProviderError(
                "auth",
                f"No API key for provider '{self.name}': add one in Settings or set "
                "ANTHROPIC_API_KEY.",
            )
        try:
            with sdk_errors(self.name, anthropic, self.base_url or ANTHROPIC_BASE_URL):
                # Built off the event loop: fitting large images decodes and encodes them.
                params = await asyncio.to_thread(self._request_params, request)
                async with self._client.messages.stream(**params) as stream:
                    async for event in _translate(stream):
                        yield event
        except ValueError as error:
            # The SDK parses streamed tool input as it arrives and raises ValueError on
            # JSON it cannot read; the answer is unusable but a new attempt may not be.
            raise ProviderError("unavailable", f"{self.name}: malformed stream: {error}") from error


def _loop_keeps_thinking(messages: list[dict[str, Any]]) -> bool:
    """False when the request continues a tool loop (it ends with tool results) whose
    last assistant turn has no thinking block to start with."""
    last = messages[-1] if messages else None
    if last is None or not any(
        isinstance(block, dict) and block.get("type") == "tool_result"
        for block in last.get("content") or ()
    ):
        return True
    previous = messages[-2] if len(messages) > 1 else None
    if previous is None or previous.get("role") != "assistant":
        return True
    blocks = previous.get("content") or []
    first = blocks[0] if blocks and isinstance(blocks[0], dict) else {}
    return first.get("type") in ("thinking", "redacted_thinking")


@dataclass
class _CallUsage:
    """One call's usage as the stream reports it: `message_start` carries the input side
    (input, cache read, cache creation); `message_delta.usage` is cumulative, so its
    values replace, never add to, what came before."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0

    def started(self, usage: Any) -> None:
        self.input_tokens = usage.input_tokens or 0
        self.output_tokens = usage.output_tokens or 0
        self.cache_read = usage.cache_read_input_tokens or 0
        self.cache_creation = usage.cache_creation_input_tokens or 0

    def updated(self, usage: Any) -> None:
        self.output_tokens = usage.output_tokens or self.output_tokens
        if usage.input_tokens is not None:
            self.input_tokens = usage.input_tokens
        if usage.cache_read_input_tokens is not None:
            self.cache_read = usage.cache_read_input_tokens
        if usage.cache_creation_input_tokens is not None:
            self.cache_creation = usage.cache_creation_input_tokens

    def event(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read,
            cache_creation_tokens=self.cache_creation,
        )


def _delta_event(delta: Any) -> ProviderEvent | None:
    """A content block's text, thinking or signature delta as a provider event."""
    if delta.type == "text_delta":
        return TextDelta(text=delta.text) if delta.text else None
    if delta.type == "thinking_delta":
        return ReasoningDelta(text=delta.thinking)
    if delta.type == "signature_delta":
        return ReasoningDelta(text="", signature=delta.signature)
    return None


async def _translate(stream: AsyncIterator[Any]) -> AsyncIterator[ProviderEvent]:
    """Raw Messages stream events → provider events.

    One `Usage` is emitted for the call (see `_CallUsage`), just before `Stop`.
    """
    usage = _CallUsage()
    stop_reason: str | None = None
    tool_blocks: dict[int, tuple[str, str]] = {}
    tool_json: dict[int, list[str]] = {}
    finished = False
    async for event in stream:
        event_type = event.type
        if event_type == "message_start":
            usage.started(event.message.usage)
        elif event_type == "content_block_start":
            block = event.content_block
            if block.type == "redacted_thinking":
                # Thinking the safety systems encrypted: nothing to show, but it must go
                # back unchanged inside the tool loop.
                yield ReasoningDelta(text="", redacted=block.data)
            elif block.type == "tool_use":
                tool_blocks[event.index] = (block.id, block.name)
                tool_json[event.index] = []
        elif event_type == "content_block_delta":
            delta = event.delta
            if delta.type == "input_json_delta" and event.index in tool_json:
                tool_json[event.index].append(delta.partial_json)
            elif (translated := _delta_event(delta)) is not None:
                yield translated
        elif event_type == "content_block_stop":
            if event.index in tool_blocks:
                call_id, name = tool_blocks.pop(event.index)
                raw = "".join(tool_json.pop(event.index))
                yield ToolCallEvent(id=call_id, name=name, input=parse_tool_input(raw))
        elif event_type == "message_delta":
            stop_reason = event.delta.stop_reason or stop_reason
            usage.updated(event.usage)
        elif event_type == "message_stop":
            finished = True
    if not finished:
        # The connection closed cleanly but the message never ended: a proxy cut it.
        # No usage is reported for an interrupted call.
        raise ProviderError("unavailable", "the stream ended before message_stop")
    yield usage.event()
    raw_reason = stop_reason or "end_turn"
    yield Stop(reason=_STOP_REASONS.get(raw_reason, "other"), raw=raw_reason)
