"""One MCP server's session, kept open by a task of its own, through the official SDK.

The SDK's transports and `ClientSession` are async context managers whose task groups
must be entered and left by the same task, so each server gets a supervisor task that
opens the transport (stdio: spawn the process; streamable HTTP: an HTTP client with the
configured headers), initializes the session, lists the tools, and then holds the
session open until it is told to stop. Calls from the turn loop's tasks go through the
open session; a call whose connection closes under it (the process died) learns so from
the SDK as `CONNECTION_CLOSED`.

The session introduces itself as Foldline with its version and declares what Foldline
does with a server's requests: elicitation (a form or a link shown to the person) when
the app can ask the person, and roots (the folders the person listed for this server,
none by default). A tool that can only run as a task is not listed: Foldline does not
run tasks, so the model would only ever see it fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from foldline import __version__
from foldline.config_mcp import McpServerConfig

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 30.0
"""A server that has not listed its tools by then is reported as failed."""
STDERR_TAIL_CHARS = 600

ConnectionState = Literal["stopped", "starting", "running", "failed", "signin_required"]

Elicit = Callable[[str, Any], Awaitable[Any]]
"""(server name, `ElicitRequestParams`) -> `ElicitResult`: asks the person."""
Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""(progress, total, message) of a running call."""


@dataclass
class ConnectionHooks:
    """What the app lends every connection: the person, the keychain, the browser."""

    elicit: Elicit | None = None
    """Asks the person for a server's elicitation; None: elicitation is not declared."""
    data_dir: Path | None = None
    """Where sign-in tokens are kept (the keychain, else a file there); None: in memory."""
    open_url: Callable[[str], Any] | None = None
    """Opens a sign-in page in the system browser; None: sign-in is not possible."""


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
    hooks: ConnectionHooks = field(default_factory=ConnectionHooks)
    state: ConnectionState = "stopped"
    error: str | None = None
    tools: list[ServerTool] = field(default_factory=list)
    changed_tools: list[ServerTool] | None = None
    """The list after `notifications/tools/list_changed`, offered from the next turn on."""
    hidden_tools: list[str] = field(default_factory=list)
    """Listed tools Foldline cannot call (task-only), with the reason in Settings."""
    interactive: bool = False
    """The person pressed Sign in: this start may open the browser."""
    capabilities: Any = None
    """The server's declared capabilities (`mcp_types.ServerCapabilities`) once running."""
    refused: str | None = None
    """Why the transport refused the server's output (a message over the limit), if it did."""
    _session: Any = None
    _task: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Start the server unless it runs; returns once it runs or has failed."""
        if self.state == "running":
            return
        if self._task is None or self._task.done():
            self.state, self.error, self.tools, self.changed_tools = "starting", None, [], None
            self.refused = None
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
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        progress: Progress | None = None,
    ) -> Any:  # mcp_types.CallToolResult
        """One tools/call. With `progress`, the request carries a progress token and the
        server's progress notifications reach it. A timeout, or the caller's task being
        cancelled (Stop), sends `notifications/cancelled` for the request (the SDK does)."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        session = self._session
        if self.state != "running" or session is None:
            raise ServerCallError(f"the server is not running ({self.error or self.state})")
        try:
            return await session.call_tool(
                tool, arguments, read_timeout_seconds=timeout, progress_callback=progress
            )
        except MCPError as error:
            if error.code == REQUEST_TIMEOUT:
                raise ServerCallError(
                    f"no answer within {timeout:g} seconds", timed_out=True
                ) from error
            if error.code == CONNECTION_CLOSED and self.refused is not None:
                raise ServerCallError(f"the server was stopped: {self.refused}") from error
            if error.code == CONNECTION_CLOSED:
                self._crashed("the connection closed during a call")
                raise ServerCallError("the server stopped during the call", crashed=True) from error
            raise ServerCallError(error.message) from error
        except (OSError, EOFError) as error:
            self._crashed(str(error))
            raise ServerCallError(
                f"the server stopped during the call: {error}", crashed=True
            ) from error

    def offers(self, feature: Literal["resources", "prompts"]) -> bool:
        return self.state == "running" and getattr(self.capabilities, feature, None) is not None

    async def request(self, what: str, *arguments: Any, timeout: float = 60, **options: Any) -> Any:
        """One of the session's other requests (`read_resource`, `list_resources`,
        `list_prompts`, `get_prompt`), with the same errors as a call."""
        from mcp import MCPError

        session = self._session
        if self.state != "running" or session is None:
            raise ServerCallError(f"the server is not running ({self.error or self.state})")
        try:
            return await asyncio.wait_for(getattr(session, what)(*arguments, **options), timeout)
        except TimeoutError as error:
            raise ServerCallError(
                f"no answer within {timeout:g} seconds", timed_out=True
            ) from error
        except MCPError as error:
            if self.refused is not None:
                raise ServerCallError(f"the server was stopped: {self.refused}") from error
            raise ServerCallError(error.message) from error

    def _crashed(self, reason: str) -> None:
        if self.refused is None:  # a refusal's reason is the one the person needs
            self.state, self.error = "failed", reason
        self._session = None
        self._stop.set()

    def _refused(self, reason: str) -> None:
        """The transport refused what the server sent (a message over the limit): the
        server is stopped and stays failed, with the reason; it is not restarted."""
        log.warning("MCP server %s: %s", self.name, reason)
        self.refused = reason
        self.state, self.error, self._session = "failed", reason, None
        self._stop.set()

    async def _supervise(self) -> None:
        from mcp import ClientSession

        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await self._open_transport(stack, errlog)
                    session = await stack.enter_async_context(
                        ClientSession(read, write, **self._session_options())
                    )
                    await session.initialize()
                    self.tools, self.hidden_tools = await _list_tools(session)
                    self.capabilities = session.server_capabilities
                    self._session, self.state = session, "running"
                    self._ready.set()
                    await self._stop.wait()
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # the SDK raises exception groups from task groups
                from foldline.mcp.oauth import find_sign_in_required

                needs_sign_in = find_sign_in_required(error)
                if needs_sign_in is not None:
                    self.state, self.error = "signin_required", str(needs_sign_in)
                elif self.refused is not None:
                    self.state, self.error = "failed", self.refused
                elif self.state != "failed":
                    self.state = "failed"
                    self.error = _reason(error, errlog)
                log.warning("MCP server %s stopped: %s", self.name, self.error)
            finally:
                self._session = None
                if self.state == "running":
                    self.state = "stopped"
                self._ready.set()

    def _session_options(self) -> dict[str, Any]:
        """The SDK session's identity and callbacks: what Foldline declares it can do."""
        import mcp_types

        options: dict[str, Any] = {
            "client_info": mcp_types.Implementation(
                name="Foldline", title="Foldline", version=__version__
            ),
            "list_roots_callback": self._list_roots,
            "message_handler": self._on_message,
        }
        if self.hooks.elicit is not None:
            options["elicitation_callback"] = self._elicit
        return options

    async def _elicit(self, context: Any, params: Any) -> Any:
        assert self.hooks.elicit is not None
        return await self.hooks.elicit(self.name, params)

    async def _list_roots(self, context: Any) -> Any:
        import mcp_types

        roots = [
            mcp_types.Root.model_validate(
                {"uri": Path(path).expanduser().resolve().as_uri(), "name": Path(path).name}
            )
            for path in self.config.roots
        ]
        return mcp_types.ListRootsResult(roots=roots)

    async def _on_message(self, message: Any) -> None:
        """`notifications/tools/list_changed`: the list is fetched again now and offered
        from the next turn (a changed tool list is a prompt-cache break, so it never
        changes in the middle of a turn)."""
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            session = self._session
            if session is None:
                return
            asyncio.get_running_loop().create_task(self._refresh_tools(session))

    async def _refresh_tools(self, session: Any) -> None:
        try:
            tools, hidden = await _list_tools(session)
        except Exception as error:  # a failed refresh keeps the list it had
            log.warning("MCP server %s: its changed tool list failed: %s", self.name, error)
            return
        if session is self._session:
            self.changed_tools, self.hidden_tools = tools, hidden

    def take_changed_tools(self) -> bool:
        """Adopt a tool list changed since the last turn; True if there was one."""
        if self.changed_tools is None:
            return False
        self.tools, self.changed_tools = self.changed_tools, None
        return True

    async def _open_transport(self, stack: AsyncExitStack, errlog: Any) -> tuple[Any, Any]:
        config = self.config
        if config.command:
            from mcp import StdioServerParameters

            from foldline.mcp.stdio_transport import bounded_stdio_client

            parameters = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            return await stack.enter_async_context(
                bounded_stdio_client(parameters, errlog, self._refused)
            )
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        from foldline.mcp.oauth import SignIn

        assert config.url is not None
        sign_in = SignIn(
            self.name, config, self.hooks.data_dir, self.hooks.open_url, self.interactive
        )
        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=httpx2.Timeout(30.0, read=300.0),
                auth=await sign_in.auth(),
            )
        )
        return await stack.enter_async_context(
            streamable_http_client(config.url, http_client=client)
        )


async def _list_tools(session: Any) -> tuple[list[ServerTool], list[str]]:
    """The tools Foldline can call, and the names of those it cannot (task-only)."""
    tools: list[ServerTool] = []
    hidden: list[str] = []
    cursor: str | None = None
    for _page in range(100):  # a server that pages forever must not hang the start
        from mcp_types import PaginatedRequestParams

        result = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        for tool in result.tools:
            execution = getattr(tool, "execution", None)
            if execution is not None and execution.task_support == "required":
                hidden.append(tool.name)
                continue
            tools.append(
                ServerTool(tool.name, tool.description or "", dict(tool.input_schema or {}))
            )
        cursor = result.next_cursor
        if not cursor:
            break
    return tools, hidden


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
