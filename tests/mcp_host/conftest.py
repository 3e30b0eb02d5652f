"""Real MCP servers for the tests: `mcp_test_server.py` (built with the SDK's `MCPServer`)
started over stdio by Foldline itself, or over streamable HTTP on loopback by a fixture."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_host_helpers import SERVER_SCRIPT, free_port

# The long MCP session runs on the same fake server and config as the chat sessions;
# `fake_sessions` lives with those, so it must be importable when only this folder runs.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chat"))


@pytest.fixture
def http_mcp_url() -> Iterator[str]:
    """The test server over streamable HTTP on a loopback port."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER_SCRIPT, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP MCP test server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
