from __future__ import annotations

import email.utils

import pytest

from foldline.providers.errors import (
    classify_status,
    error_fields,
    is_context_overflow_message,
    overflow_sizes,
    parse_retry_after,
    provider_error,
)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "12"}, 12.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "whenever"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_retry_after_as_an_http_date() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30.0)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0


@pytest.mark.parametrize(
    ("message", "sizes"),
    [
        ("prompt is too long: 210000 tokens > 200000 maximum", (210_000, 200_000)),
        (
            "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, "
            "decrease input length or `max_tokens` and try again",
            (197_000, 200_000),
        ),
        (
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens.",
            (9000, 8192),
        ),
        (
            "This model's maximum context length is 4096 tokens. However, you requested "
            "5000 tokens (4000 in the messages, 1000 in the completion).",
            (5000, 4096),
        ),
        ("the request exceeds the available context size, try increasing it", (None, None)),
    ],
)
def test_overflow_messages_and_sizes(message: str, sizes: tuple[int | None, int | None]) -> None:
    assert is_context_overflow_message(message)
    assert overflow_sizes(message) == sizes


@pytest.mark.parametrize(
    "message",
    ["Overloaded", "invalid x-api-key", "messages.0.content: Field required", "Rate limit reached"],
)
def test_other_messages_are_not_overflow(message: str) -> None:
    assert not is_context_overflow_message(message)


def test_rate_limit_wording_about_tokens_stays_a_rate_limit() -> None:
    message = "Rate limit: too many tokens per minute"
    assert is_context_overflow_message(message)
    assert classify_status(429, error_type=None, code=None, message=message) == "rate_limited"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ("overloaded_error", None, "Overloaded"),
        ),
        (
            {"error": {"message": "m", "type": "invalid_request_error", "code": "c"}},
            ("invalid_request_error", "c", "m"),
        ),
        ({"message": "m", "type": "t", "code": 400}, ("t", "400", "m")),
        ({"error": "plain text"}, (None, None, "plain text")),
        ("not json", (None, None, None)),
    ],
)
def test_error_fields(body: object, fields: tuple[str | None, ...]) -> None:
    assert error_fields(body) == fields


def test_in_stream_error_without_a_known_type_is_retryable() -> None:
    error = provider_error(None, {"error": {"message": "boom"}}, None, "fallback")
    assert error.code == "unavailable"
    assert error.retryable
    assert error.message == "boom"


def test_fallback_message_when_the_body_has_none() -> None:
    error = provider_error(502, "<html>Bad gateway</html>", {"retry-after": "4"}, "Error code: 502")
    assert (error.code, error.message, error.retry_after, error.status) == (
        "unavailable",
        "Error code: 502",
        4.0,
        502,
    )
