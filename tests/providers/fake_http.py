"""A minimal scripted HTTP server for the provider tests.

Each test scripts the replies of the routes it uses (a queue per method and path) and
reads back the requests the SDKs sent. It serves on 127.0.0.1 through uvicorn in a
thread, so the real SDKs go through their whole HTTP stack. Unscripted routes answer 404
like a server that does not have that endpoint.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass(frozen=True)
class JSONReply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class SSEReply:
    """A `text/event-stream` reply: `(event name or None, data)` pairs.

    `cut_after` closes the connection abruptly after that many events (the chunked body
    never terminates); `delay` waits before the first byte.
    """

    events: Sequence[tuple[str | None, Any]]
    cut_after: int | None = None
    delay: float = 0.0


Reply = JSONReply | SSEReply


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class _ConnectionCut(Exception):
    """Raised inside a streaming reply so uvicorn drops the connection mid-body."""


def _sse_bytes(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class FakeHTTPServer:
    def __init__(self) -> None:
        self._scripts: dict[tuple[str, str], deque[Reply]] = {}
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        app = Starlette(
            routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])],
        )
        self._server = uvicorn.Server(
            uvicorn.Config(app, log_level="critical", lifespan="off", access_log=False)
        )
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake HTTP server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._socket.close()

    def reset(self) -> None:
        with self._lock:
            self._scripts.clear()
            self.requests.clear()

    def script(self, method: str, path: str, *replies: Reply) -> None:
        with self._lock:
            self._scripts.setdefault((method.upper(), path), deque()).extend(replies)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    async def _handle(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        with self._lock:
            self.requests.append(RecordedRequest(request.method, path, dict(request.headers), body))
            queue = self._scripts.get((request.method, path))
            reply = queue.popleft() if queue else None
        if reply is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        if isinstance(reply, JSONReply):
            if reply.delay:
                await asyncio.sleep(reply.delay)
            return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)
        return StreamingResponse(self._stream(reply), media_type="text/event-stream")

    @staticmethod
    async def _stream(reply: SSEReply) -> AsyncIterator[bytes]:
        if reply.delay:
            await asyncio.sleep(reply.delay)
        for number, (event, data) in enumerate(reply.events):
            if reply.cut_after is not None and number >= reply.cut_after:
                raise _ConnectionCut
            yield _sse_bytes(event, data)
        if reply.cut_after is not None and reply.cut_after >= len(reply.events):
            raise _ConnectionCut


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclass
class Collected:
    events: list[Any]
    error: BaseException | None


async def collect(stream: AsyncIterator[Any]) -> Collected:
    """All events of a provider stream, and the error that ended it if any."""
    events: list[Any] = []
    try:
        async for event in stream:
            events.append(event)
    except Exception as error:  # the test inspects it
        return Collected(events, error)
    return Collected(events, None)


def of_kind(events: Sequence[Any], kind: str) -> list[Any]:
    return [event for event in events if event.kind == kind]


def iter_kinds(events: Sequence[Any]) -> Iterator[str]:
    return (event.kind for event in events)
