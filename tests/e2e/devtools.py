"""A minimal Chrome DevTools Protocol client, for pages Playwright cannot attach to.

Qt WebEngine opens Chromium's DevTools port when `QTWEBENGINE_REMOTE_DEBUGGING` is set,
but Playwright's `connect_over_cdp` needs browser-context commands Qt does not support.
Evaluating JavaScript in the page needs only `Runtime.evaluate` over the page target's
WebSocket, which this speaks with the standard library (RFC 6455 text frames).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time
import urllib.request
from typing import Any
from urllib.parse import urlparse


class DevToolsPage:
    """The first page target of a DevTools port; `evaluate` runs an expression in it."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{port}/json", timeout=timeout) as reply:
            targets = json.loads(reply.read())
        target = next(t for t in targets if t["type"] == "page")
        url = urlparse(target["webSocketDebuggerUrl"])
        self._socket = socket.create_connection((url.hostname, url.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self._socket.sendall(
            f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self._socket.recv(1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(head.decode(errors="replace"))
        self._next_id = 0

    def close(self) -> None:
        self._socket.close()

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if a promise)."""
        self._next_id += 1
        self._send(
            {
                "id": self._next_id,
                "method": "Runtime.evaluate",
                "params": {"expression": expression, "returnByValue": True, "awaitPromise": True},
            }
        )
        while True:
            message = self._receive()
            if message.get("id") == self._next_id:
                result = message["result"]
                if "exceptionDetails" in result:
                    raise RuntimeError(result["exceptionDetails"])
                return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Evaluate until the expression is truthy; its value."""
        deadline = time.monotonic() + timeout
        while not (value := self.evaluate(expression)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} stayed falsy for {timeout} s")
            time.sleep(0.1)
        return value

    def _send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        if len(payload) < 126:
            header = struct.pack("!BB", 0x81, 0x80 | len(payload))
        elif len(payload) < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, len(payload))
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, len(payload))
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self._socket.sendall(header + mask + masked)

    def _receive(self) -> dict[str, Any]:
        data = b""
        while True:
            first, second = self._exactly(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", self._exactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", self._exactly(8))
            data += self._exactly(length)
            if first & 0x80:  # the final fragment
                return json.loads(data)

    def _exactly(self, count: int) -> bytes:
        chunks = b""
        while len(chunks) < count:
            chunk = self._socket.recv(count - len(chunks))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            chunks += chunk
        return chunks
