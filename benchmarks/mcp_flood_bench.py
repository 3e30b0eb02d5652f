"""A stdio MCP server that never ends its line: what it costs the app.

A real hostile MCP server (`tests/mcp_host/hostile_mcp_server.py flood`, built with the
SDK) answers a tool call by writing `--megabytes` MiB of one JSON string with no newline.
This process connects to it through Foldline's `ServerConnection`, calls the tool, and
prints how long the call took to end, how it ended, the server's state afterwards, and
this process's peak resident memory (the high-water mark, before and after).

`--transport sdk` runs the same call through the SDK's own `stdio_client` (what Foldline
used before), with `--timeout` seconds for the call: it keeps the whole line, joining
every chunk to it.

Rerun: `PYTHONPATH=backend .venv/bin/python benchmarks/mcp_flood_bench.py` (2 GiB line,
a few seconds) and `... --transport sdk --megabytes 256 --timeout 60`.
Results: docs/benchmarks.md, "Hostile files and the sidebar's search".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from foldline.config_mcp import McpServerConfig
from foldline.mcp import stdio_transport
from foldline.mcp.connection import ServerCallError, ServerConnection

HOSTILE = Path(__file__).resolve().parent.parent / "tests" / "mcp_host" / "hostile_mcp_server.py"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.asynccontextmanager
async def sdk_transport(server: Any, errlog: Any, on_refused: Any) -> AsyncIterator[Any]:
    from mcp.client.stdio import stdio_client

    async with stdio_client(server, errlog=errlog) as streams:
        yield streams


async def run(megabytes: int, timeout: float) -> None:
    config = McpServerConfig(command=sys.executable, args=(str(HOSTILE), "flood"))
    connection = ServerConnection("flood", config)
    await connection.start()
    print(f"server {connection.state}; peak RSS before the call {peak_rss_mib():.0f} MiB")
    started = time.perf_counter()
    try:
        await connection.call("flood", {"megabytes": megabytes}, timeout)
        outcome = "answered"
    except ServerCallError as error:
        outcome = str(error)
    elapsed = time.perf_counter() - started
    print(f"call ended after {elapsed:.1f} s: {outcome}")
    print(f"server state {connection.state}: {connection.error}")
    print(f"peak RSS after the call {peak_rss_mib():.0f} MiB")
    stopping = time.perf_counter()
    await connection.stop()
    print(f"stopped in {time.perf_counter() - stopping:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=2048, help="MiB in the endless line")
    parser.add_argument("--transport", choices=["foldline", "sdk"], default="foldline")
    parser.add_argument("--timeout", type=float, default=60.0, help="the call's timeout, s")
    args = parser.parse_args()
    if args.transport == "sdk":
        stdio_transport.bounded_stdio_client = sdk_transport  # type: ignore[assignment]
    print(f"{args.transport} transport, a line of {args.megabytes} MiB")
    asyncio.run(run(args.megabytes, args.timeout))


if __name__ == "__main__":
    main()
