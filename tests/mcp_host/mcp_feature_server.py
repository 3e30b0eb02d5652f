"""A small MCP server (the SDK's `MCPServer`, over stdio) for what the reference server
cannot show a test: who the client says it is, a tool list that changes, a call that is
cancelled, and resources.

`CANCEL_LOG` (an environment variable) names a file the `wait` tool appends to when the
client cancels it, so a test can see the `notifications/cancelled` arrive.
"""

from __future__ import annotations

import asyncio
import json
import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("features")


@server.tool()
def whoami(ctx: Context) -> str:
    """The client's name, version and declared capabilities."""
    params = ctx.session.client_params
    capabilities = ctx.client_capabilities
    return json.dumps(
        {
            "name": params.client_info.name if params else None,
            "version": params.client_info.version if params else None,
            "capabilities": capabilities.model_dump(exclude_none=True, by_alias=True)
            if capabilities
            else {},
        }
    )


def late() -> str:
    """A tool that appears only after `grow` ran."""
    return "the late tool ran"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the `late` tool and tell the client the list changed."""
    server.add_tool(late)
    await ctx.session.send_tool_list_changed()
    return "a tool was added"


@server.tool()
async def wait(seconds: float, ctx: Context) -> str:
    """Sleep; a cancelled call is written to CANCEL_LOG."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        with open(os.environ["CANCEL_LOG"], "a", encoding="utf-8") as log:
            log.write(f"cancelled {ctx.request_id}\n")
        raise
    return "waited"


if __name__ == "__main__":
    server.run()
