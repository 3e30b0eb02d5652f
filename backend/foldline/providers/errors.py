"""Helpers shared by the providers to turn HTTP failures into typed `ProviderError`s.

Every provider reports the same few situations in its own words. The turn loop only
needs to know which situation it is in (fold and retry, back off, stop and tell the
person), so the recognition of provider wording lives here, tested once.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

from foldline.providers.base import ErrorCode, ProviderError

# Phrases that mean "the prompt does not fit the model's window", as worded by
# Anthropic, OpenAI, vLLM, llama.cpp, LM Studio and Ollama. They are matched
# case-insensitively anywhere in the provider's message.
_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"prompt is too long",
        r"exceed(s|ed)? (the )?context (limit|window|size|length)",
        r"maximum context length",
        r"context length exceeded",
        r"context_length_exceeded",
        r"exceeds? (the )?available context size",
        r"too many tokens",
        r"context window (is )?(full|exceeded)",
        r"input is too long",
        # Ollama: "the input length exceeds the context length".
        r"input length exceeds (the )?(maximum )?context length",
        # LM Studio: "... the model is loaded with context length of only 4096 tokens,
        # which is not enough" (the context-overflow policy "stop at limit").
        r"loaded with (a )?context length of only",
        # llama-cpp-python's own ValueError, before its error formatter rewrites it:
        # "Requested tokens (2100) exceed context window of 2048".
        r"requested tokens \(\d+\) exceed",
    )
)

# Error types that mean an overflow whatever the message says: llama.cpp's server answers
# `{"error": {"type": "exceed_context_size_error", "n_prompt_tokens": .., "n_ctx": ..}}`
# (tools/server/server.cpp, ERROR_TYPE_EXCEED_CONTEXT_SIZE).
_OVERFLOW_TYPES = frozenset({"exceed_context_size_error"})

# "prompt is too long: 210000 tokens > 200000 maximum" (Anthropic).
_ANTHROPIC_SIZES = re.compile(r"(\d+)\s*tokens?\s*>\s*(\d+)\s*maximum", re.IGNORECASE)
# "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000" (Anthropic).
_ANTHROPIC_SUM = re.compile(r":\s*(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)")
# "maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens"
# (OpenAI) or "... you requested 9000 tokens" (OpenAI, vLLM).
_OPENAI_LIMIT = re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE)
_OPENAI_PROMPT = re.compile(r"(?:resulted in|you requested|requested) (\d+) tokens", re.IGNORECASE)
# "request (4476 tokens) exceeds the available context size (4096 tokens)" (llama.cpp).
_LLAMACPP_SIZES = re.compile(
    r"\((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", re.IGNORECASE
)
# "Requested tokens (2100) exceed context window of 2048" (llama-cpp-python).
_LLAMA_CPP_PYTHON_SIZES = re.compile(
    r"requested tokens \((\d+)\) exceed context window of (\d+)", re.IGNORECASE
)


def is_context_overflow_message(message: str) -> bool:
    """Whether a provider's error message says the prompt does not fit the window."""
    return any(pattern.search(message) for pattern in _OVERFLOW_PATTERNS)


def overflow_sizes(message: str) -> tuple[int | None, int | None]:
    """(prompt tokens, context limit) when the provider's message states them."""
    match = _ANTHROPIC_SIZES.search(message)
    if match:
        return int(match.group(1)), int(match.group(2))
    match = _ANTHROPIC_SUM.search(message)
    if match:
        return int(match.group(1)), int(match.group(3))
    match = _LLAMACPP_SIZES.search(message) or _LLAMA_CPP_PYTHON_SIZES.search(message)
    if match:
        return int(match.group(1)), int(match.group(2))
    limit_match = _OPENAI_LIMIT.search(message)
    prompt_match = _OPENAI_PROMPT.search(message)
    limit = int(limit_match.group(1)) if limit_match else None
    prompt = int(prompt_match.group(1)) if prompt_match else None
    return prompt, limit


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait, from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if not headers:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(float(milliseconds) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


def error_fields(body: object) -> tuple[str | None, str | None, str | None]:
    """(type, code, message) from an error body in either provider's shape.

    Anthropic: `{"type": "error", "error": {"type": ..., "message": ...}}`; OpenAI:
    `{"error": {"message", "type", "code"}}`, and the SDKs sometimes hand over only the
    inner object.
    """
    if not isinstance(body, Mapping):
        return None, None, None
    inner: Any = body.get("error", body)
    if not isinstance(inner, Mapping):
        # Some OpenAI-compatible servers send `{"error": "text"}`.
        return None, None, str(inner) if inner is not None else None
    error_type = inner.get("type")
    code = inner.get("code")
    message = inner.get("message")
    return (
        str(error_type) if error_type is not None else None,
        str(code) if code is not None else None,
        str(message) if message is not None else None,
    )


def classify_status(
    status: int | None,
    *,
    error_type: str | None,
    code: str | None,
    message: str,
) -> ErrorCode:
    """The error code for an HTTP failure (or an error event inside a stream).

    The body's own type wins over the status because errors sent inside a stream arrive
    with the stream's 200 status.
    """
    if code == "context_length_exceeded" or error_type in _OVERFLOW_TYPES:
        return "context_overflow"
    if error_type in ("authentication_error", "permission_error") or status in (401, 403):
        return "auth"
    if code == "insufficient_quota":
        # A 429 that no amount of waiting fixes: the account has no credit left.
        return "bad_request"
    if error_type in ("rate_limit_error", "rate_limit_exceeded") or status == 429:
        return "rate_limited"
    if error_type == "overloaded_error" or status == 529:
        return "overloaded"
    # Overflow wording is checked after the statuses above (a rate-limit message may
    # mention tokens) but before the 5xx rule: older llama.cpp servers answer an
    # overflow with a 500.
    if is_context_overflow_message(message):
        return "context_overflow"
    if error_type == "request_too_large" or status == 413:
        # The HTTP body itself is too large (usually many attachments); folding shrinks it.
        return "context_overflow"
    if status is not None and (status >= 500 or status in (408, 409)):
        return "unavailable"
    if error_type in ("api_error", "server_error", "timeout_error"):
        return "unavailable"
    if status is None:
        # An error event in the middle of a stream without a recognisable type: the
        # server failed while answering, which a later attempt may not.
        return "unavailable"
    return "bad_request"


def provider_error(
    status: int | None,
    body: object,
    headers: Mapping[str, str] | None,
    fallback_message: str,
) -> ProviderError:
    """A `ProviderError` for an HTTP error response or an in-stream error event."""
    error_type, code, message = error_fields(body)
    text = message or fallback_message
    kind = classify_status(status, error_type=error_type, code=code, message=text)
    prompt_tokens, context_limit = (
        overflow_sizes(text) if kind == "context_overflow" else (None, None)
    )
    if kind == "context_overflow":
        # llama.cpp states both numbers as fields of its error object.
        prompt_tokens = prompt_tokens or _body_int(body, "n_prompt_tokens")
        context_limit = context_limit or _body_int(body, "n_ctx")
    return ProviderError(
        kind,
        text,
        retry_after=parse_retry_after(headers),
        status=status,
        prompt_tokens=prompt_tokens,
        context_limit=context_limit,
    )


def _body_int(body: object, name: str) -> int | None:
    """An integer field of the error object (`{"error": {name: ..}}`), if there is one."""
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error", body)
    value = inner.get(name) if isinstance(inner, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def connection_error(name: str, base_url: str, reason: str) -> ProviderError:
    """The server could not be reached (refused, no route, no DNS, timed out): one
    sentence that says what failed and the next step, instead of the SDK's bare
    "Connection error." The SDK's own words follow for whoever needs them."""
    return ProviderError(
        "unavailable",
        f"{name}: could not reach {base_url}. Check your network connection, or the "
        f"server address in Settings → Providers. ({reason.rstrip('.')})",
    )
