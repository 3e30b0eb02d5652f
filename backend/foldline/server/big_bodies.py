"""JSON request bodies too large to parse on the event loop.

A message with files, an edit, or a project's file carries up to 48 MB of JSON (the
files in base64). FastAPI parses a body with `json.loads` on the event loop before the
route runs: for a 21 MB body that held every other request and stream for a tenth of a
second or more on a busy machine. Routes built with `OffLoopJsonRoute` parse a body past
`INLINE_JSON_BYTES` in a worker thread instead, with its long strings decoded a slice
at a time (`json_slices.loads`), so the thread never holds the GIL, and with it the
loop, for long; the result, the errors for invalid JSON and the validation that
follows are FastAPI's own. Small bodies are parsed in place: a thread hop costs more
than they do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from foldline.server import json_slices

INLINE_JSON_BYTES = 64 * 1024
"""A body up to this size is parsed on the loop (well under a millisecond)."""


class OffLoopJsonRequest(Request):
    """A request whose large JSON body is parsed in a worker thread."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            if len(body) > INLINE_JSON_BYTES:
                self._json = await asyncio.to_thread(json_slices.loads, body)
            else:
                self._json = json.loads(body)
        return self._json


class OffLoopJsonRoute(APIRoute):
    """A route whose request body, when large, is parsed off the event loop."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(OffLoopJsonRequest(request.scope, request.receive))

        return handle
