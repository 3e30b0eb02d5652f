"""Injected failures and request records of the fake provider server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from foldline.providers.base import ModelRequest, Usage
from foldline.testing import wire_errors
from foldline.testing.codec import Wire
from foldline.testing.steps import Reply
from foldline.testing.wire_errors import WireError

FailureKind: TypeAlias = Literal[
    "rate_limit",
    "server_error",
    "overloaded",
    "auth",
    "disconnect",
    "slow",
    "empty_summary",
    "malformed_summary",
]
"""What `FakeProviderServer.fail_next` can inject:

- `rate_limit`: 429 with a `retry-after` header (Anthropic `rate_limit_error`, OpenAI
  `rate_limit_exceeded`);
- `server_error`: 500 (`api_error` / `server_error`);
- `overloaded`: Anthropic 529 `overloaded_error` (OpenAI: 503);
- `auth`: 401;
- `disconnect`: the connection is dropped after `after_deltas` deltas;
- `slow`: `delay` seconds before every delta;
- `empty_summary`, `malformed_summary`: the next summarization request is answered with
  an empty text, or with a text missing the required headings.

The four HTTP-status kinds are sent before the stream starts, unless `after_deltas` is
given: then the stream starts and the error arrives as an in-stream error event after
that many deltas (Anthropic's `event: error`, an OpenAI `{"error": ...}` chunk)."""

STATUS_KINDS: frozenset[str] = frozenset({"rate_limit", "server_error", "overloaded", "auth"})
SUMMARY_KINDS: frozenset[str] = frozenset({"empty_summary", "malformed_summary"})

Target: TypeAlias = Literal["any", "summary", "chat"]
"""Which requests a failure applies to: any, summarization requests only, or others only."""


@dataclass
class Failure:
    """One queued failure; `times` counts down as requests consume it."""

    kind: FailureKind
    on: Target = "any"
    wire: Wire | None = None
    times: int = 1
    retry_after: float | None = 1.0
    after_deltas: int | None = None
    delay: float = 0.0
    text: str = ""

    def applies_to(self, wire: Wire, is_summary: bool) -> bool:
        if self.wire is not None and self.wire != wire:
            return False
        if self.on == "summary":
            return is_summary
        if self.on == "chat":
            return not is_summary
        return True

    def wire_error(self, wire: Wire) -> WireError:
        """The HTTP error of a status kind, in `wire`'s shape."""
        if self.kind == "rate_limit":
            return wire_errors.rate_limited(wire, self.retry_after)
        if self.kind == "overloaded":
            return wire_errors.overloaded(wire)
        if self.kind == "auth":
            return wire_errors.unauthorized(wire)
        if self.kind == "server_error":
            return wire_errors.server_error(wire)
        raise ValueError(f"{self.kind} is not answered with an HTTP error")


@dataclass
class RecordedRequest:
    """What the fake server received and what it did with it.

    Filled as the request is handled: `body` once the JSON parsed, `model_request` once
    decoded, `input_tokens` once counted, `reply` and `usage` when answered; `status` is
    the HTTP status sent (200 for a stream, even one that was later cut), `error` the
    error body when one was sent, `failure` the injected failure it consumed, and
    `completed` whether the answer was sent to its end (False while a slow stream is
    still going, and for good when the connection was dropped on purpose).
    """

    wire: Wire
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None = None
    raw: bytes = b""
    """The request body exactly as sent (to compare consecutive requests byte by byte)."""
    model_request: ModelRequest | None = None
    is_summary: bool = False
    input_tokens: int | None = None
    prompt_evaluated: int | None = None
    """A local server with a prompt cache: the prompt tokens it evaluated, those after
    the prefix it still held from the request before (`LocalPersonality.evaluate`)."""
    failure: FailureKind | None = None
    status: int | None = None
    error: WireError | None = None
    reply: Reply | None = None
    usage: Usage | None = None
    completed: bool = False
