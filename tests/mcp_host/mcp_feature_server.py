"""A small MCP server (the SDK's `MCPServer`, over stdio) for what the reference server
cannot show a test: who the client says it is, a tool list that changes, a call that is
cancelled, and resources: an image and a PDF (binary), a text note, and a tool that
returns the image embedded and links the PDF.

`CANCEL_LOG` (an environment variable) names a file the `wait` tool appends to when the
client cancels it, so a test can see the `notifications/cancelled` arrive.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import BlobResourceContents, EmbeddedResource, ResourceLink, TextContent

from foldline.testing import sample_files

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


CHART = sample_files.png(300, 200, rgb=(220, 80, 40))
REPORT = sample_files.pdf(["Quarterly report: revenue rose 12%.", "Outlook: calm."])
CHART_URI = "file:///charts/chart.png"
REPORT_URI = "file:///reports/report.pdf"


@server.resource(CHART_URI, name="chart.png", title="Sales chart", mime_type="image/png")
def chart() -> bytes:
    return CHART


@server.resource(
    REPORT_URI, name="report.pdf", title="Quarterly report", mime_type="application/pdf"
)
def report() -> bytes:
    return REPORT


@server.resource(
    "file:///notes/note.txt", name="note.txt", title="Team note", mime_type="text/plain"
)
def note() -> str:
    return "Remember the offsite."


@server.tool()
def snapshot() -> list[TextContent | EmbeddedResource | ResourceLink]:
    """The chart, embedded, and a link to the report."""
    blob = BlobResourceContents(
        uri=CHART_URI, mime_type="image/png", blob=base64.b64encode(CHART).decode("ascii")
    )
    return [
        TextContent(text="Here is the chart and the report."),
        EmbeddedResource(resource=blob),
        ResourceLink(uri=REPORT_URI, name="report.pdf", mime_type="application/pdf"),
    ]


if __name__ == "__main__":
    server.run()
