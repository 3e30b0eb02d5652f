"""One error shape for every failure: `{"error": {"code", "message"}}`.

FastAPI's own handlers answer `{"detail": ...}`; the UI and scripts would then need two
parsers. These handlers replace them, and map the store's and the chat service's
exceptions to HTTP statuses in one place instead of in every route.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from foldline.store.records import DISK_FULL_MESSAGE, is_disk_full

log = logging.getLogger("foldline.server")

_CODE_FOR_STATUS: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    422: "invalid_request",
    500: "internal_error",
    507: "disk_full",
}


class ApiError(Exception):
    """Raised by routes for a failure the client should see with a specific code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return {"error": error}


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(error_body(code, message, details), status_code=status, headers=headers)


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Where and what, without echoing the input back (it may be large or a secret)."""
    details = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error.get("loc", ()))
        details.append({"location": location, "message": str(error.get("msg", "invalid"))})
    return details


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(error.get("type") == "json_invalid" for error in errors):
        return error_response(400, "invalid_json", "The request body is not valid JSON.")
    details = _validation_details(exc)
    first = details[0] if details else {"location": "request", "message": "invalid"}
    message = f"Invalid request: {first['location']}: {first['message']}"
    return error_response(422, "invalid_request", message, details=details)


async def _on_http_exception(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _CODE_FOR_STATUS.get(exc.status_code, f"http_{exc.status_code}")
    message = exc.detail if isinstance(exc.detail, str) else "Request failed."
    headers = dict(exc.headers) if exc.headers is not None else None
    return error_response(exc.status_code, code, message, headers=headers)


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message)


def _mapped_handler(status: int, code: str, default_message: str):  # type: ignore[no-untyped-def]
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        return error_response(status, code, str(exc) or default_message)

    return handler


class UnexpectedErrorMiddleware:
    """Turns an exception no handler claimed into a 500 in the error shape.

    Starlette answers those from its outermost middleware, outside the security
    middleware, so the answer would lack the security headers; catching them here,
    inside, keeps one shape and one set of headers for every answer. The traceback goes
    to the log, never to the client: it can hold paths and data.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response_started = False

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            full = is_disk_full(exc)
            if full:
                log.error("disk full on %s %s: %s", scope["method"], scope["path"], exc)
            else:
                log.error("unhandled error on %s %s", scope["method"], scope["path"], exc_info=exc)
            if response_started:
                raise  # too late for another answer; the server closes the connection
            if full:
                response = error_response(507, "disk_full", DISK_FULL_MESSAGE)
            else:
                response = error_response(500, "internal_error", "Internal error; see the log.")
            await response(scope, receive, send)


ExceptionMapping = dict[type[Exception], tuple[int, str, str]]
"""An exception class → (HTTP status, error code, message used when the exception has none)."""


def install_error_handlers(app: FastAPI, mapping: ExceptionMapping | None = None) -> None:
    """Register the handlers. The exceptions of the store and the chat service come in
    `mapping`, so their HTTP meaning is decided in one place (`app.py`)."""
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(ApiError, _on_api_error)
    for exc_type, (status, code, default_message) in (mapping or {}).items():
        app.add_exception_handler(exc_type, _mapped_handler(status, code, default_message))
