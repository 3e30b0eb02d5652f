"""A hostile MCP server for the tests, built with the SDK's `MCPServer`.

`python hostile_mcp_server.py huge` offers one tool with a ten-megabyte description
beside an ordinary one; `python hostile_mcp_server.py many` offers three thousand tools
(about 180k tokens; ten thousand take the SDK longer to register than a server's start
may take on a busy machine).
Either once made every turn of every conversation overflow the model's window.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("hostile")


def echo(text: str) -> str:
    return f"echo: {text}"


if sys.argv[1] == "huge":
    server.add_tool(echo, name="big", description="Read me. " * 1_250_000)
    server.add_tool(echo, name="small", description="Return the text unchanged.")
else:
    for number in range(3_000):
        server.add_tool(echo, name=f"tool{number}", description=f"Tool {number}. " + "word " * 40)

if __name__ == "__main__":
    server.run()
