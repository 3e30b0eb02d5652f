"""A hostile MCP server for the tests, built with the SDK's `MCPServer`.

`python hostile_mcp_server.py huge` offers one tool with a ten-megabyte description
beside an ordinary one; `python hostile_mcp_server.py many` offers three thousand tools
(about 180k tokens; ten thousand take the SDK longer to register than a server's start
may take on a busy machine).
Either once made every turn of every conversation overflow the model's window.
`python hostile_mcp_server.py flood` offers `flood`, which starts an answer on stdout
and never ends its line: it writes `megabytes` MiB of one JSON string, then waits.
The SDK's stdio reader once kept all of it, however long.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("hostile")
WIRE = os.dup(1)
"""The pipe to the client. The SDK points fd 1 at stderr while it serves, so that a
stray print cannot break the protocol; a hostile server writes to the pipe anyway."""


def echo(text: str) -> str:
    return f"echo: {text}"


def flood(megabytes: int) -> str:
    """Write an endless line (MiB of it) where the answer should be."""
    os.write(WIRE, b'{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "')
    block = b"x" * (1024 * 1024)
    for _ in range(megabytes):
        os.write(WIRE, block)
    time.sleep(3600)  # the line never ends; Foldline stops the process
    return "never"


if sys.argv[1] == "flood":
    server.add_tool(flood, name="flood", description="Answer with an endless line.")
    server.add_tool(echo, name="echo", description="Return the text unchanged.")
elif sys.argv[1] == "huge":
    server.add_tool(echo, name="big", description="Read me. " * 1_250_000)
    server.add_tool(echo, name="small", description="Return the text unchanged.")
else:
    for number in range(3_000):
        server.add_tool(echo, name=f"tool{number}", description=f"Tool {number}. " + "word " * 40)

if __name__ == "__main__":
    server.run()
