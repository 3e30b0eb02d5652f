"""The providers' real error responses, as the fake server sends them.

Bodies and status codes follow what the Anthropic Messages API and the OpenAI Chat
Completions API return, so Foldline's error mapping is tested against the shapes it
will meet: Anthropic `{"type": "error", "error": {"type", "message"}, "request_id"}`,
OpenAI `{"error": {"message", "type", "param", "code"}}`. The SDKs turn these into
`BadRequestError`, `RateLimitError`, `InternalServerError`, ... with `.body` holding the
decoded JSON.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from foldline.providers.base import ProviderError
from foldline.testing.codec import Wire

_request_ids = itertools.count(1)


def request_id(wire: Wire) -> str:
    """A fresh request id in the provider's style."""
    n = next(_request_ids)
    return f"req_fake{n:018d}" if wire == "anthropic" else f"req_fake{n:024x}"


@dataclass(frozen=True)
class WireError:
    """An HTTP error response: status, JSON body and extra headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return str(self.body["error"]["message"])

    def encoded(self) -> bytes:
        return json.dumps(self.body).encode()

    def stream_frame(self, wire: Wire) -> bytes:
        """The same error sent inside an already started stream.

        Anthropic sends an `error` event (the SDK raises an APIStatusError from it);
        OpenAI sends a data line whose JSON has an `error` key (the SDK raises APIError).
        """
        if wire == "anthropic":
            payload = {"type": "error", "error": self.body["error"]}
            return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()
        return f"data: {json.dumps({'error': self.body['error']})}\n\n".encode()


def anthropic_error(status: int, error_type: str, message: str, **headers: str) -> WireError:
    rid = request_id("anthropic")
    body = {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": rid,
    }
    return WireError(status, body, {"request-id": rid, **headers})


def openai_error(
    status: int,
    message: str,
    error_type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    **headers: str,
) -> WireError:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return WireError(status, body, {"x-request-id": request_id("openai"), **headers})


def bad_request(wire: Wire, message: str, *, param: str | None = None) -> WireError:
    """A 400 invalid_request_error with `message`, in `wire`'s shape."""
    if wire == "anthropic":
        return anthropic_error(400, "invalid_request_error", message)
    return openai_error(400, message, param=param)


# --- context window ----------------------------------------------------------------


def prompt_too_long(wire: Wire, input_tokens: int, window: int) -> WireError:
    """The prompt alone does not fit the context window."""
    if wire == "anthropic":
        return bad_request(wire, f"prompt is too long: {input_tokens} tokens > {window} maximum")
    return openai_error(
        400,
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {input_tokens} tokens. Please reduce the length of the messages.",
        param="messages",
        code="context_length_exceeded",
    )


def prompt_and_output_too_long(
    wire: Wire, input_tokens: int, max_output: int, window: int
) -> WireError:
    """The prompt fits, but not together with the requested output tokens."""
    if wire == "anthropic":
        return bad_request(
            wire,
            f"input length and `max_tokens` exceed context limit: {input_tokens} + "
            f"{max_output} > {window}, decrease input length or `max_tokens` and try again",
        )
    return openai_error(
        400,
        f"This model's maximum context length is {window} tokens. However, you requested "
        f"{input_tokens + max_output} tokens ({input_tokens} in the messages, {max_output} "
        f"in the completion). Please reduce the length of the messages or completion.",
        param="messages",
        code="context_length_exceeded",
    )


def output_limit_exceeded(wire: Wire, model: str, requested: int, maximum: int) -> WireError:
    """`max_tokens` above what the model can produce."""
    if wire == "anthropic":
        return bad_request(
            wire,
            f"max_tokens: {requested} > {maximum}, which is the maximum allowed number of "
            f"output tokens for {model}",
        )
    return openai_error(
        400,
        f"max_tokens is too large: {requested}. This model supports at most {maximum} "
        f"completion tokens, whereas you provided {requested}.",
        param="max_tokens",
        code="invalid_value",
    )


def unknown_model(wire: Wire, model: str) -> WireError:
    if wire == "anthropic":
        return anthropic_error(404, "not_found_error", f"model: {model}")
    return openai_error(
        404,
        f"The model `{model}` does not exist or you do not have access to it.",
        code="model_not_found",
    )


# --- injected and scripted failures --------------------------------------------------


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def rate_limited(wire: Wire, retry_after: float | None) -> WireError:
    headers = {"retry-after": _seconds(retry_after)} if retry_after is not None else {}
    if wire == "anthropic":
        return anthropic_error(
            429,
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50,000 "
            "input tokens per minute. Please reduce the prompt length or the maximum "
            "tokens requested, or try again later.",
            **headers,
        )
    wait = _seconds(retry_after) if retry_after is not None else "1"
    return openai_error(
        429,
        "Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. "
        f"Please try again in {wait}s. "
        "Visit https://platform.openai.com/account/rate-limits to learn more.",
        error_type="requests",
        code="rate_limit_exceeded",
        **headers,
    )


def server_error(wire: Wire, detail: str = "") -> WireError:
    if wire == "anthropic":
        return anthropic_error(500, "api_error", detail or "Internal server error")
    return openai_error(
        500,
        detail or "The server had an error while processing your request. Sorry about that!",
        error_type="server_error",
    )


def overloaded(wire: Wire, retry_after: float | None = None) -> WireError:
    """Anthropic's 529 `overloaded_error`; OpenAI says the same with a 503."""
    headers = {"retry-after": _seconds(retry_after)} if retry_after is not None else {}
    if wire == "anthropic":
        return anthropic_error(529, "overloaded_error", "Overloaded", **headers)
    return openai_error(
        503,
        "The engine is currently overloaded, please try again later.",
        error_type="server_error",
        **headers,
    )


def unauthorized(wire: Wire) -> WireError:
    if wire == "anthropic":
        return anthropic_error(401, "authentication_error", "invalid x-api-key")
    return openai_error(
        401,
        "Incorrect API key provided. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        code="invalid_api_key",
    )


def from_provider_error(
    error: ProviderError, wire: Wire, *, input_tokens: int, window: int
) -> WireError:
    """The wire error a scripted `ProviderError` stands for.

    A scripted `context_overflow` is reported with the request's real token count, so the
    code under test parses the same message it would get from the provider; when the
    request actually fits, the count is raised to just over the window so the message
    stays self-consistent ("N tokens > M maximum" with N > M).
    """
    if error.code == "context_overflow":
        return prompt_too_long(wire, max(input_tokens, window + 1), window)
    if error.code == "rate_limited":
        return rate_limited(wire, error.retry_after)
    if error.code == "overloaded":
        return overloaded(wire, error.retry_after)
    if error.code == "auth":
        return unauthorized(wire)
    if error.code == "bad_request":
        return bad_request(wire, error.message)
    return server_error(wire, error.message)
