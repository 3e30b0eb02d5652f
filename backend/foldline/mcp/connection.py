"""One MCP server's session, kept open by a task of its own, through the official SDK.

The SDK's transports and `ClientSession` are async context managers whose task groups
must be entered and left by the same task, so each server gets a supervisor task that
opens the transport (stdio: spawn the process; streamable HTTP: an HTTP client with the
configured headers), initializes the session, lists the tools, and then holds the
session open until it is told to stop. Calls from the turn loop's tasks go through the
open session; a call whose connection closes under it (the process died) learns so from
the SDK as `CONNECTION_CLOSED`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

from foldline.config_mcp import McpServerConfig

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 30.0
"""A server that has not listed its tools by then is reported as failed."""
STDERR_TAIL_CHARS = 600

ConnectionState = Literal["stopped", "starting", "running", "failed"]


@dataclass(frozen=True)
class ServerTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class ServerCallError(Exception):
    """A call did not produce a result: timeout, closed connection, protocol error."""

    def __init__(self, message: str, *, crashed: bool = False, timed_out: bool = False) -> None:
        super().__init__(message)
        self.crashed = crashed
        self.timed_out = timed_out


@dataclass
class ServerConnection:
    """The live session with one server, or the reason there is none."""

    name: str
    config: McpServerConfig
    state: ConnectionState = "stopped"
    error: str | None = None
    tools: list[ServerTool] = field(default_factory=list)
    _session: Any = None
    _task: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Start the server unless it runs; returns once it runs or has failed."""
        if self.state == "running":
            return
        if self._task is None or self._task.done():
            self.state, self.error, self.tools = "starting", None, []
            self._ready, self._stop = asyncio.Event(), asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._supervise())
        try:
            await asyncio.wait_for(asyncio.shield(self._ready.wait()), timeout)
        except TimeoutError:
            await self.stop()
            self.state = "failed"
            self.error = f"did not answer within {timeout:g} seconds"

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            self._stop.set()
            try:
                await asyncio.wait_for(asyncio.shield(task), 5)
            except TimeoutError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.state in ("running", "starting"):
            self.state = "stopped"
        self._session = None

    async def call(
        self, tool: str, arguments: dict[str, Any], timeout: float
    ) -> Any:  # mcp_types.CallToolResult
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        session = self._session
        if self.state != "running" or session is None:
            raise ServerCallError(f"the server is not running ({self.error or self.state})")
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as error:
            if error.code == REQUEST_TIMEOUT:
                raise ServerCallError(
                    f"no answer within {timeout:g} seconds", timed_out=True
                ) from error
            if error.code == CONNECTION_CLOSED:
                self._crashed("the connection closed during a call")
                raise ServerCallError("the server stopped during the call", crashed=True) from error
            raise ServerCallError(error.message) from error
        except (OSError, EOFError) as error:
            self._crashed(str(error))
            raise ServerCallError(
                f"the server stopped during the call: {error}", crashed=True
            ) from error

    def _crashed(self, reason: str) -> None:
        self.state, self.error, self._session = "failed", reason, None
        self._stop.set()

    async def _supervise(self) -> None:
        from mcp import ClientSession

        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await self._open_transport(stack, errlog)
                    session = await stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                    self.tools = await _list_tools(session)
                    self._session, self.state = session, "running"
                    self._ready.set()
                    await self._stop.wait()
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # the SDK raises exception groups from task groups
                if self.state != "failed":
                    self.state = "failed"
                    self.error = _reason(error, errlog)
                log.warning("MCP server %s stopped: %s", self.name, self.error)
            finally:
                self._session = None
                if self.state == "running":
                    self.state = "stopped"
                self._ready.set()

    async def _open_transport(self, stack: AsyncExitStack, errlog: Any) -> tuple[Any, Any]:
        config = self.config
        if config.command:
            from mcp import StdioServerParameters, stdio_client

            parameters = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            return await stack.enter_async_context(stdio_client(parameters, errlog=errlog))
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert config.url is not None
        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            )
        )
        return await stack.enter_async_context(
            streamable_http_client(config.url, http_client=client)
        )


async def _list_tools(session: Any) -> list[ServerTool]:
    tools: list[ServerTool] = []
    cursor: str | None = None
    for _page in range(100):  # a server that pages forever must not hang the start
        from mcp_types import PaginatedRequestParams

        result = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools.extend(
            ServerTool(tool.name, tool.description or "", dict(tool.input_schema or {}))
            for tool in result.tools
        )
        cursor = result.next_cursor
        if not cursor:
            break
    return tools


def _reason(error: BaseException, errlog: Any) -> str:
    """The first real cause inside exception groups, plus the tail of the server's stderr."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    reason = str(error) or type(error).__name__
    if reason == "Connection closed":
        reason = "the server closed the connection before it was ready (it may have exited)"
    with contextlib.suppress(OSError, ValueError):
        errlog.flush()
        errlog.seek(0)
        tail = errlog.read()[-STDERR_TAIL_CHARS:].strip()
        if tail:
            reason += f" (server output: {tail})"
    return reason
