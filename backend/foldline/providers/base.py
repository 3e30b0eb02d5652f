"""The small interface every model provider implements: one streaming method.

A provider turns a `ModelRequest` (engine messages, system prompt, tool specs) into its
own wire format, streams the answer and yields `ProviderEvent`s. Failures are raised as
`ProviderError` with a `code` the turn loop can act on (fold and retry on
`context_overflow`, back off on `rate_limited`/`overloaded`, stop on `auth`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from foldline.core.messages import Message, ToolSpec
from foldline.core.reasoning import Effort, ThinkingForm

DEFAULT_TIMEOUT_SECONDS = 600.0
"""Long answers from large models can take minutes; the SDK's own default is the same."""


def parse_tool_input(raw: str) -> dict[str, Any]:
    """A tool call's streamed JSON arguments as a dict.

    An empty string means no arguments. Arguments that are not a JSON object (a model
    cut off by `max_tokens` mid-call, or a local model writing broken JSON) are kept
    verbatim under `_invalid_arguments` rather than dropped: the call must still get a
    result so the pair stays whole, and the tool can tell the model what went wrong.
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # nested past the parser's limit, too
        return {"_invalid_arguments": raw}
    if not isinstance(value, dict):
        return {"_invalid_arguments": raw}
    return value


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_output_tokens: int = 4096
    temperature: float | None = None
    cache_key: str | None = None
    """Set on a conversation's chat calls: the prompt is worth caching and this key
    (the conversation's id) groups its requests (OpenAI's `prompt_cache_key`). None for
    one-off requests such as summaries, which a cache write would only make dearer."""
    images: bool = False
    """The model accepts image input: images tools returned are sent to it (on the
    OpenAI wire as a user message after the results; Anthropic always gets them)."""
    stable_prefix: int = 0
    """How many leading messages are the fold's prefix (its summary): they change only
    when the conversation folds, so the prefix up to them is cached on its own."""
    reasoning_effort: Effort = "off"
    """How much the model reasons first; each provider maps it to its own form
    (`foldline.core.reasoning`). Summaries and titles send `[compaction]`'s effort."""
    thinking: ThinkingForm | None = None
    """`[models."x"] thinking`: the Anthropic form of reasoning the model takes, for a
    name Foldline does not know (None: told by the name)."""
    server_options: dict[str, Any] = field(default_factory=dict)
    """Fields only a local server understands (llama.cpp's `cache_prompt`, `id_slot`),
    sent as they are in the body by an OpenAI-compatible provider; others ignore them."""


@dataclass(frozen=True)
class TextDelta:
    text: str
    kind: Literal["text-delta"] = "text-delta"


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning. Text pieces stream as they come; the provider's
    proof that the reasoning is its own comes last and closes the block: a `signature`
    (Anthropic thinking), `redacted` data (Anthropic redacted_thinking, no text), or an
    `item_id` with its `encrypted_content` (an OpenAI Responses reasoning item)."""

    text: str
    signature: str | None = None
    redacted: str | None = None
    item_id: str | None = None
    encrypted_content: str | None = None
    kind: Literal["reasoning-delta"] = "reasoning-delta"

    @property
    def closes(self) -> bool:
        return bool(self.signature or self.redacted or self.item_id)


@dataclass(frozen=True)
class ToolCallEvent:
    """A complete tool call (providers assemble streamed argument fragments first)."""

    id: str
    name: str
    input: dict
    kind: Literal["tool-call"] = "tool-call"


@dataclass(frozen=True)
class Usage:
    """Token usage of ONE call. `total_input` is what the model actually received."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    reasoning_tokens: int = 0
    """Of `output_tokens`, those the model spent reasoning (billed as output; OpenAI
    reports them, Anthropic counts thinking in `output_tokens` without a split)."""
    kind: Literal["usage"] = "usage"

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens


StopReason = Literal["end_turn", "tool_use", "max_tokens", "context_window_exceeded", "other"]


@dataclass(frozen=True)
class Stop:
    reason: StopReason
    raw: str | None = None
    kind: Literal["stop"] = "stop"


ProviderEvent = TextDelta | ReasoningDelta | ToolCallEvent | Usage | Stop

ErrorCode = Literal[
    "context_overflow", "rate_limited", "overloaded", "auth", "unavailable", "bad_request"
]


class ProviderError(Exception):
    """A typed provider failure. `retryable` errors may be retried after `retry_after` s."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = None,
        prompt_tokens: int | None = None,
        context_limit: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.retry_after = retry_after
        self.status = status
        # On `context_overflow` the providers often say how large the prompt was and what
        # the limit is ("prompt is too long: 210000 tokens > 200000 maximum"); both are
        # exact numbers from the provider's own tokenizer, worth more than any estimate.
        self.prompt_tokens = prompt_tokens
        self.context_limit = context_limit

    @property
    def retryable(self) -> bool:
        return self.code in ("rate_limited", "overloaded", "unavailable")


class StreamEndedEarly(ProviderError):
    """A stream that ended without a finish reason. `empty` when not one piece of the
    answer came first: an OpenAI-compatible local server answers a streamed prompt over
    its window that way (HTTP 200, then nothing), so there it is an overflow."""

    def __init__(self, code: ErrorCode, message: str, *, empty: bool) -> None:
        super().__init__(code, message)
        self.empty = empty


@runtime_checkable
class Provider(Protocol):
    """Anything that can stream a model's answer."""

    name: str
    """The provider's configured name (`anthropic`, `openai`, `local`, ...)."""

    @property
    def wire(self) -> Literal["anthropic", "openai", "openai-responses"]:
        """Which wire format the provider speaks; decides how tokens are counted (read
        only here, so a provider may declare the one wire it speaks)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Yield events for one model call; raise ProviderError on failure."""
        ...

    def warm_up(self) -> None:
        """Build now what the first request would otherwise build (the SDK client's
        request resources, imported on first use); blocking, so called in a thread."""
        ...

    async def aclose(self) -> None:
        """Close the provider's connections (its SDK client's pool)."""
        ...
        ...
