"""The last requests the window's page made, kept in memory for `foldline`'s status.

uvicorn's access log is off on purpose (nothing about requests goes to disk by default),
but "did the page load, and did its scripts reach the API?" is the first question when
the window shows something odd. This wrapper keeps the method, path and status of the
last few hundred requests in memory only; query strings are left out because a search
query is the user's text.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_REMEMBERED_REQUESTS = 300


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    status: int


class RequestLog:
    """ASGI middleware: passes every request through and remembers how it ended."""

    def __init__(self, app: ASGIApp, size: int = MAX_REMEMBERED_REQUESTS) -> None:
        self.app = app
        self._seen: deque[SeenRequest] = deque(maxlen=size)
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status_holder: list[int] = []

        async def remember_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, remember_status)
        finally:
            with self._lock:
                self._seen.append(
                    SeenRequest(
                        method=str(scope["method"]),
                        path=str(scope["path"]),
                        status=status_holder[0] if status_holder else 0,
                    )
                )

    def recent(self) -> list[SeenRequest]:
        with self._lock:
            return list(self._seen)
