"""A real MCP server for the tests, built with the SDK's `MCPServer`.

Run as `python mcp_test_server.py stdio` or `python mcp_test_server.py http PORT`
(streamable HTTP on 127.0.0.1). Its tools cover what Foldline must handle: text, long
outputs, structured content, images, errors, slowness and a crash.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

# A 1×1 transparent PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]

server = MCPServer("foldline-test")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return f"echo: {text}"


@server.tool()
def report(lines: int, seed: int = 0) -> str:
    """A long report of numbered lines (about 12 tokens a line)."""
    out = []
    for i in range(lines):
        words = " ".join(WORDS[(seed + i * 7 + k) % len(WORDS)] for k in range(8))
        out.append(f"{seed}-{i:05d} {words}")
    return "\n".join(out)


@server.tool()
def measure(n: int) -> dict[str, int]:
    """Structured content: n and its square."""
    return {"n": n, "square": n * n}


@server.tool()
def picture() -> Image:
    """A tiny PNG image."""
    return Image(data=PIXEL_PNG, format="png")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """The server process dies mid-call."""
    os._exit(1)


@server.tool()
def secret_env(name: str) -> str:
    """Whether an environment variable is set (never its value)."""
    return "set" if os.environ.get(name) else "unset"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
