"""The local server's defences: token, Host allowlist, Origin check, headers, body limits.

A server on 127.0.0.1 is reachable by every local program and, through DNS rebinding
or cross-site requests, by any web page the person visits (Ollama's CVE-2024-28224,
MCP Inspector's CVE-2025-49596). So:

- every `/api` route but `GET /api/health` needs `Authorization: Bearer <token>`; the
  token is random per launch and compared in constant time;
- the `Host` header must name this server (127.0.0.1, localhost or [::1]): a rebinding
  page's requests carry the attacker's host name and are refused with 421;
- a request with an `Origin` other than the server's own is refused with 403, so a page
  from another site can neither read nor write, even by "simple" CORS requests that a
  browser sends without preflight;
- no CORS headers are ever sent;
- every response carries a strict Content-Security-Policy and friends.

These are pure ASGI middlewares rather than `BaseHTTPMiddleware`, which would buffer
and break the server-sent event streams.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from foldline.server.errors import error_response

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ]
)
"""No inline script or style, no eval, nothing loaded or sent anywhere but this server."""

SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)

LOOPBACK_HOSTNAMES: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")

PUBLIC_API_PATHS: frozenset[str] = frozenset({"/api/health"})
"""API paths answered without the token (only GET; see `SecurityMiddleware`)."""

DEFAULT_BODY_LIMIT = 1 * 1024 * 1024
IMPORT_BODY_LIMIT = 16 * 1024 * 1024 * 1024
"""An import is an export of any length, read as a stream (never whole into memory);
the limit only stops a runaway upload from filling the disk."""
STREAMED_ROUTES: frozenset[tuple[str, str]] = frozenset(
    {("POST", "/api/conversations/import"), ("POST", "/api/projects/import")}
)
"""Routes that read their body as a stream and enforce the limit themselves."""


def resolve_token(environ: dict[str, str] | None = None) -> str:
    """`FOLDLINE_TOKEN` when set (scripts and tests need a stable one), else a fresh
    random token with 256 bits of entropy, valid for this launch only."""
    env = os.environ if environ is None else environ
    fixed = env.get("FOLDLINE_TOKEN", "").strip()
    return fixed or secrets.token_urlsafe(32)


def loopback_hosts(port: int | None = None) -> list[str]:
    """The Host values a loopback server accepts; without a port, any port matches."""
    if port is None:
        return list(LOOPBACK_HOSTNAMES)
    return [f"{name}:{port}" for name in LOOPBACK_HOSTNAMES]


def split_host(host: str) -> tuple[str, str | None]:
    """`"[::1]:80"` → `("[::1]", "80")`, `"localhost"` → `("localhost", None)`."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end == -1:
            return host, None
        name, rest = host[: end + 1], host[end + 1 :]
        return name, rest[1:] if rest.startswith(":") else None
    if host.count(":") == 1:
        name, port = host.split(":")
        return name, port
    return host, None


class HostAllowlist:
    """Matches a request's Host header against `host` or `host:port` entries.

    An entry without a port accepts any port (useful when the app is built before the
    port is known); `"*"` accepts every host, which only `--allow-remote` uses.
    """

    def __init__(self, entries: Iterable[str]) -> None:
        self.any_host = False
        self.exact: set[str] = set()
        self.any_port: set[str] = set()
        for entry in entries:
            entry = entry.strip().lower()
            if entry == "*":
                self.any_host = True
                continue
            name, port = split_host(entry)
            if port is None:
                self.any_port.add(name)
            else:
                self.exact.add(f"{name}:{port}")

    def allows(self, host: str | None) -> bool:
        if not host:
            return False
        if self.any_host:
            return True
        name, port = split_host(host)
        if port is not None and f"{name}:{port}" in self.exact:
            return True
        return name in self.any_port


def origin_is_same(origin: str, host: str) -> bool:
    """True when `Origin` names the very server the request was sent to.

    The Host header has already passed the allowlist, so "same as Host" means "this
    server": a page of another site has another origin, and `null` (sandboxed frames,
    `file://` pages) never matches.
    """
    origin = origin.strip().lower()
    host = host.strip().lower()
    return origin in (f"http://{host}", f"https://{host}")


def bearer_token_matches(authorization: str | None, token: str) -> bool:
    """Constant-time comparison, so the token cannot be guessed byte by byte from timing."""
    if not authorization:
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8"))


def is_api_path(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


class SecurityMiddleware:
    """Host allowlist, Origin check and token check, then security headers on every answer."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        allowed_hosts: Iterable[str],
        public_paths: frozenset[str] = PUBLIC_API_PATHS,
    ) -> None:
        if not token:
            raise ValueError("the API token must not be empty")
        self.app = app
        self.token = token
        self.hosts = HostAllowlist(allowed_hosts)
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            # No websocket routes exist; lifespan events pass through untouched.
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return

        send_with_headers = _with_security_headers(send, api=is_api_path(scope["path"]))
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope) -> Callable[..., Any] | None:
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not self.hosts.allows(host):
            return error_response(
                421,
                "host_not_allowed",
                "This server only answers requests addressed to it by its loopback name.",
            )
        origin = headers.get("origin")
        if origin is not None and not origin_is_same(origin, host or ""):
            return error_response(
                403, "origin_not_allowed", "Requests from other origins are not allowed."
            )
        path: str = scope["path"]
        if is_api_path(path):
            public = path in self.public_paths and scope["method"] in ("GET", "HEAD")
            if not public and not bearer_token_matches(headers.get("authorization"), self.token):
                return error_response(
                    401,
                    "unauthorized",
                    "Missing or wrong token: send 'Authorization: Bearer <token>'.",
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return None


def _with_security_headers(send: Send, *, api: bool) -> Send:
    async def send_wrapper(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS:
                headers[name] = value
            # API answers hold private data: never keep them in a browser or proxy cache.
            if api and "cache-control" not in headers:
                headers["cache-control"] = "no-store"
        await send(message)

    return send_wrapper


MESSAGE_BODY_LIMIT = 48 * 1024 * 1024
"""A message with files: 32 MB of files (the most a provider request carries) in base64,
plus the text. A project file is checked by the same rules, so it has the same limit."""


def default_body_limit(method: str, path: str) -> int:
    """Import takes whole exported conversations (or projects); a message or a project
    file its files; everything else is small."""
    if (method, path) in STREAMED_ROUTES:
        return IMPORT_BODY_LIMIT
    if method == "POST" and path.startswith("/api/projects/") and path.endswith("/files"):
        return MESSAGE_BODY_LIMIT
    message_route = path.endswith("/messages") or path.endswith("/edit")
    if method == "POST" and path.startswith("/api/conversations/") and message_route:
        return MESSAGE_BODY_LIMIT
    return DEFAULT_BODY_LIMIT


JOIN_OFF_LOOP_BYTES = 1 << 20
"""A body larger than this is joined from its chunks in a worker thread."""


class BodyLimitMiddleware:
    """Refuses bodies over the limit with 413 before any route sees them.

    The body is read here (up to the limit) and replayed to the app, which covers both a
    declared `Content-Length` and a chunked body that never declared one. After the
    replay, `receive` is the client's again, so streaming responses still notice a
    disconnect.
    """

    def __init__(self, app: ASGIApp, *, limit_for: Callable[[str, str], int] = default_body_limit):
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["method"], scope["path"])
        too_large = error_response(
            413,
            "payload_too_large",
            f"The request body is larger than the limit of {limit} bytes.",
        )
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            try:
                declared_size = int(declared)
            except ValueError:
                await error_response(400, "bad_request", "Invalid Content-Length.")(
                    scope, receive, send
                )
                return
            if declared_size > limit:
                await too_large(scope, receive, send)
                return
        if (scope["method"], scope["path"]) in STREAMED_ROUTES:
            await self.app(scope, receive, send)
            return

        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break

        # Joining a large body in a worker thread: `bytes.join` copies a large result
        # without the GIL there, where on the loop 21 MB held every request for 15 ms.
        body = (
            await asyncio.to_thread(b"".join, chunks)
            if size > JOIN_OFF_LOOP_BYTES
            else b"".join(chunks)
        )
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
