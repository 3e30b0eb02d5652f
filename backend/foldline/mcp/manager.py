"""The MCP servers of the running app: started when first needed, offered, stopped with it.

A server starts at the first turn after it appears in config.toml (never from a
conversation or an import: only the configuration the person wrote or imported in
Settings names servers). A server that fails to start is reported once in the chat and in
Settings, and its tools are not offered until the person restarts it or changes its
configuration. A server that stops during a call gives that call an error result and is
restarted once; if the restart fails it stays failed.

The tools offered are the running servers' tools in config order, then in each server's
own order, so the list (part of the prompt-cache prefix) changes only when servers or
settings change, or when a server says its list changed; that change is taken at the
start of the next turn (`prepare`), never in the middle of one.

A remote server that asks for a sign-in is not a failure: it waits in Settings as "Sign
in required" until the person presses Sign in (`sign_in`), which opens the browser.
A server's questions (elicitation) go to the conversation whose call is running on that
server, as a form on the chat; see `foldline.mcp.interaction`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from foldline.api.events import ApprovalRequired, ApprovalResolved, Notice
from foldline.chat import events as ev
from foldline.chat.events import ChatEvent
from foldline.chat.tool_registry import Tool, ToolEnv, ToolOutcome
from foldline.config import AppConfig
from foldline.config_mcp import McpServerConfig
from foldline.core.messages import ToolCallPart, ToolSpec
from foldline.logging_setup import register_secret
from foldline.mcp.approval import Approvals, Decision, PendingApproval
from foldline.mcp.connection import ConnectionHooks, ServerCallError, ServerConnection
from foldline.mcp.first_start import FirstStarts
from foldline.mcp.interaction import ActiveCalls, ask_person, progress_reporter
from foldline.mcp.naming import offered_names
from foldline.mcp.results import READ_RESOURCE_TOOL, outcome_from_resource, outcome_from_result
from foldline.mcp.tool_limits import limit_tools, tools_token_cap
from foldline.providers.registry import resolve_model

log = logging.getLogger(__name__)

# What a change of these fields means: the running process no longer matches its config.
_TRANSPORT_FIELDS = ("command", "args", "env", "cwd", "url", "headers")


class ServerDisabled(Exception):
    """A disabled server cannot be restarted (HTTP 409)."""


def _same_transport(a: McpServerConfig, b: McpServerConfig) -> bool:
    return all(getattr(a, name) == getattr(b, name) for name in _TRANSPORT_FIELDS)


class McpManager:
    def __init__(
        self,
        config_provider: Callable[[], AppConfig],
        *,
        save_config: Callable[[AppConfig], None] | None = None,
        first_starts: FirstStarts | None = None,
        open_url: Callable[[str], Any] | None = None,
    ) -> None:
        self.config_provider = config_provider
        self.save_config = save_config
        """Where "Always allow this tool" is written (config.toml); None keeps it in memory."""
        self.first_starts = first_starts
        """Servers added through the app wait here for the person's yes (None: none wait)."""
        self.open_url = open_url
        """Opens a sign-in page in the system browser; None: sign-in is not offered."""
        self.approvals = Approvals()
        self.calls = ActiveCalls()
        """The calls running on each server: where a server's question is shown."""
        self.calls.open_url = open_url
        self.connections: dict[str, ServerConnection] = {}
        self._announced: set[str] = set()
        self._always: set[tuple[str, str]] = set()
        self._lock: asyncio.Lock | None = None
        self.limit_notes: dict[str, str] = {}
        """Per server: what the tool limits cut or left out (see `tool_limits`)."""
        self._announced_limits: set[str] = set()
        self._tools_cache: tuple[tuple[Any, ...], list[McpTool]] | None = None

    # --- lifecycle -------------------------------------------------------------------

    def server_configs(self) -> dict[str, McpServerConfig]:
        return self.config_provider().mcp_servers

    async def sync(self) -> None:
        """Stop the connections whose server was removed, disabled or re-configured."""
        servers = self.server_configs()
        for name, connection in list(self.connections.items()):
            wanted = servers.get(name)
            if (
                wanted is None
                or not wanted.enabled
                or not _same_transport(wanted, connection.config)
            ):
                await connection.stop()
                del self.connections[name]
                self._announced.discard(name)
            else:
                connection.config = wanted
        for name, server in servers.items():
            if server.enabled and name not in self.connections:
                for secret in server.secrets():
                    register_secret(secret)
                self.connections[name] = ServerConnection(name, server, self._hooks())

    def _hooks(self) -> ConnectionHooks:
        return ConnectionHooks(
            elicit=lambda server, params: ask_person(self.calls, server, params),
            data_dir=self.config_provider().data_dir,
            open_url=self.open_url,
        )

    async def prepare(self) -> list[ChatEvent]:
        """Start the servers that have not been started yet, take the tool lists that
        changed since the last turn; notices for new failures and sign-ins."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await self.sync()
            fresh = [
                c
                for c in self.connections.values()
                if c.state == "stopped" and not self.awaiting_first_start(c.name)
            ]
            await asyncio.gather(*(connection.start() for connection in fresh))
            for connection in self.connections.values():
                if connection.take_changed_tools():
                    log.info("MCP server %s: its tool list changed", connection.name)
        notices = []
        for connection in self.connections.values():
            name = connection.name
            if self.awaiting_first_start(name) and f"held:{name}" not in self._announced:
                self._announced.add(f"held:{name}")
                notices.append(server_held(name))
        for connection in self.connections.values():
            if (
                connection.state in ("failed", "signin_required")
                and connection.name not in self._announced
            ):
                self._announced.add(connection.name)
                notices.append(server_failed(connection))
        self.mcp_tools()  # the limits' notes for the tools now running
        for server, note in self.limit_notes.items():
            if note not in self._announced_limits:
                self._announced_limits.add(note)
                notices.append(
                    ev.Notice(Notice(code="mcp_tools_limited", server=server, message=note))
                )
        return notices

    def awaiting_first_start(self, name: str) -> bool:
        return self.first_starts is not None and self.first_starts.is_held(name)

    async def sign_in(self, name: str) -> ServerConnection:
        """The person pressed Sign in: start the server with the browser allowed to open,
        and wait for the sign-in to finish (or fail, or time out)."""
        from foldline.mcp.oauth import SIGN_IN_TIMEOUT_SECONDS

        await self.sync()
        connection = self.connections.get(name)
        if connection is None:
            raise ServerDisabled(f"The MCP server {name} is disabled; enable it first.")
        await connection.stop()
        self._announced.discard(name)
        connection.interactive = True
        try:
            await connection.start(timeout=SIGN_IN_TIMEOUT_SECONDS + 30)
        finally:
            connection.interactive = False
        return connection

    async def sign_out(self, name: str) -> ServerConnection:
        """Forget the server's tokens (the keychain entry goes) and stop it."""
        from foldline.mcp.oauth import KeychainTokenStorage

        await self.sync()
        config = self.server_configs().get(name)
        connection = self.connections.get(name)
        if config is None or connection is None or config.url is None:
            raise ServerDisabled(f"The MCP server {name} is not a running remote server.")
        await connection.stop()
        data_dir = self.config_provider().data_dir
        KeychainTokenStorage(name, config.url, data_dir).forget()
        connection.state, connection.error = "stopped", None
        return connection

    async def restart(self, name: str) -> ServerConnection:
        """Stop and start one server again (Settings → Restart)."""
        if name not in self.server_configs():
            raise KeyError(name)
        await self.sync()
        connection = self.connections.get(name)
        if connection is None:
            raise ServerDisabled(f"The MCP server {name} is disabled; enable it first.")
        await connection.stop()
        self._announced.discard(name)
        await connection.start()
        return connection

    async def shutdown(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))
        self.connections = {}

    # --- tools -----------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        reader = self.resource_reader()
        return [*self.mcp_tools(), *([reader] if reader else [])]

    def resource_reader(self) -> McpResourceReader | None:
        """`mcp_read_resource`, offered while a running server has resources."""
        servers = [
            name
            for name, connection in self.connections.items()
            if connection.offers("resources") and name in self.server_configs()
        ]
        return McpResourceReader(self, servers) if servers else None

    def mcp_tools(self) -> list[McpTool]:
        """The running servers' enabled tools, under their offered names, within the
        limits of `tool_limits`. Built again only when the configuration or a server's
        tool list changed: the list is read at every context load, and a server may
        offer thousands of tools."""
        servers = self.server_configs()
        cap = self._tools_cap()
        key = (servers, cap, [(n, c.state, id(c.tools)) for n, c in self.connections.items()])
        cached = self._tools_cache
        if cached is not None and cached[0][0] is servers and cached[0][1:] == key[1:]:
            return list(cached[1])
        tools = self._build_tools(servers, cap)
        self._tools_cache = (key, tools)
        return list(tools)

    def _build_tools(self, servers: dict[str, McpServerConfig], cap: int) -> list[McpTool]:
        pairs: list[tuple[str, str]] = []
        listed: dict[tuple[str, str], Any] = {}
        for name, server in servers.items():
            connection = self.connections.get(name)
            if connection is None or connection.state != "running":
                continue
            for tool in connection.tools:
                if server.tool_enabled(tool.name):
                    pairs.append((name, tool.name))
                    listed[(name, tool.name)] = tool
        tools: list[McpTool] = []
        for offered in offered_names(pairs):
            listed_tool = listed[(offered.server, offered.tool)]
            spec = ToolSpec(
                name=offered.name,
                description=listed_tool.description
                or f"The tool {offered.tool} of the MCP server {offered.server}.",
                input_schema=listed_tool.input_schema or {"type": "object"},
            )
            tools.append(McpTool(self, offered.server, offered.tool, spec, offered.note))
        limited = limit_tools([(tool.server, tool.spec) for tool in tools], cap)
        self.limit_notes = limited.notes
        return [replace(tools[i], spec=limited.specs[i]) for i in limited.kept]

    def _tools_cap(self) -> int:
        """The MCP tools' share of the default model's input budget (see `tool_limits`)."""
        config = self.config_provider()
        try:
            budget = resolve_model(config, config.default_model or "")
        except Exception:  # no usable default model: the cap for an unknown window
            return tools_token_cap(None)
        window = budget.input_limit or (budget.context_window - budget.output_reserve)
        return tools_token_cap(window if budget.context_window > 0 else None)

    def approval_for(self, server: str, tool: str) -> str:
        if (server, tool) in self._always:
            return "always"
        config = self.server_configs().get(server)
        return config.tool_approval(tool) if config else "never"

    def always_allow(self, server: str, tool: str) -> None:
        """Remember "Always allow this tool": in config.toml when the app can write it."""
        self._always.add((server, tool))
        if self.save_config is None:
            return
        config = self.config_provider()
        current = config.mcp_servers.get(server)
        if current is None:
            return
        servers = {
            **config.mcp_servers,
            server: current.with_tool_override(tool, approval="always"),
        }
        try:
            self.save_config(config.model_copy(update={"mcp_servers": servers}))
        except Exception:  # the call goes on; the choice holds for this run
            log.exception("could not save the approval of %s/%s", server, tool)

    async def after_crash(self, name: str) -> bool:
        """Restart a server that stopped during a call, once; True if it runs again."""
        connection = self.connections.get(name)
        if connection is None:
            return False
        await connection.stop()
        connection.state = "stopped"
        await connection.start()
        if connection.state != "running":
            connection.error = f"stopped during a call, and the restart failed: {connection.error}"
            connection.state = "failed"
        return connection.state == "running"

    def _signed_in(self, name: str, server: McpServerConfig) -> bool:
        """Whether sign-in tokens are kept for this remote server."""
        if server.url is None:
            return False
        from foldline.mcp.oauth import KeychainTokenStorage

        data_dir = self.config_provider().data_dir
        return (
            data_dir is not None and KeychainTokenStorage(name, server.url, data_dir).has_tokens()
        )

    def decide(self, conversation_id: str, call_id: str, decision: Decision) -> PendingApproval:
        return self.approvals.decide(conversation_id, call_id, decision)

    def status(self) -> list[ServerStatus]:
        """Each configured server: its state, the reason it failed, the tools it offers."""
        offered: dict[str, list[McpTool]] = {}
        for tool in self.mcp_tools():
            offered.setdefault(tool.server, []).append(tool)
        out = []
        for name, server in self.server_configs().items():
            connection = self.connections.get(name)
            state = connection.state if connection else "stopped"
            if state == "stopped" and self.awaiting_first_start(name):
                state = "awaiting_approval"
            listed = connection.tools if connection else []
            out.append(
                ServerStatus(
                    name=name,
                    config=server,
                    state=state if server.enabled else "disabled",
                    error=connection.error if connection else None,
                    tools=offered.get(name, []),
                    disabled_tools=[t.name for t in listed if not server.tool_enabled(t.name)],
                    limits=self.limit_notes.get(name),
                    hidden_tools=list(connection.hidden_tools) if connection else [],
                    signed_in=self._signed_in(name, server),
                )
            )
        return out


@dataclass(frozen=True)
class ServerStatus:
    name: str
    config: McpServerConfig
    state: str
    """stopped (not needed yet) | starting | running | failed | disabled |
    awaiting_approval (added through the app; waits for the person's yes) |
    signin_required (a remote server waits for the person to sign in)"""
    error: str | None
    tools: list[McpTool]
    """The tools offered, each with the name the model sees."""
    disabled_tools: list[str]
    hidden_tools: list[str]
    """Listed tools Foldline cannot call (task-only)."""
    signed_in: bool = False
    """Sign-in tokens are kept for this remote server (Sign out forgets them)."""
    limits: str | None = None
    """What the tool limits cut or left out of this server's tools, if anything."""


def server_held(name: str) -> ChatEvent:
    return ev.Notice(
        Notice(
            code="mcp_server_awaiting_approval",
            server=name,
            message=(
                f"The MCP server {name} was added but has not started: it runs a command on "
                "this computer, so it waits for you to allow it once in Settings → Tools."
            ),
        ),
    )


def server_failed(connection: ServerConnection) -> ChatEvent:
    if connection.state == "signin_required":
        return ev.Notice(
            Notice(
                code="mcp_sign_in_required",
                server=connection.name,
                message=(
                    f"The MCP server {connection.name} needs you to sign in. Its tools are "
                    "offered once you have: Settings → MCP servers → Sign in."
                ),
            ),
        )
    what = "was stopped" if connection.refused is not None else "did not start"
    return ev.Notice(
        Notice(
            code="mcp_server_failed",
            server=connection.name,
            message=(
                f"The MCP server {connection.name} {what}: {connection.error}. "
                "Its tools are not offered; restart it in Settings."
            ),
        ),
    )


@dataclass
class McpTool:
    """One server tool, as the registry offers it: approval, then the call."""

    manager: McpManager
    server: str
    tool: str
    spec: ToolSpec
    note: str | None = None
    """Why the offered name is not simply `SERVER__TOOL` (shown in Settings)."""

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        label = f"{self.tool} of the MCP server {self.server}"
        refused = await approve(self.manager, self.server, self.tool, self.spec.name, call, env)
        if refused is not None:
            return refused
        connection = self.manager.connections.get(self.server)
        config = self.manager.server_configs().get(self.server)
        if connection is None or config is None:
            return ToolOutcome(
                f"The MCP server {self.server} is no longer configured.", is_error=True
            )
        try:
            with self.manager.calls.running(self.server, env, call) as running:
                result = await connection.call(
                    self.tool, call.input, config.timeout, progress_reporter(env, call.id)
                )
        except ServerCallError as error:
            if error.timed_out:
                return ToolOutcome(
                    f"{label} did not answer within {config.timeout:g} seconds; the call was "
                    "abandoned.",
                    is_error=True,
                )
            if error.crashed:
                restarted = await self.manager.after_crash(self.server)
                state = "it was restarted" if restarted else "it could not be restarted"
                return ToolOutcome(
                    f"The MCP server {self.server} stopped during this call ({error}); {state}.",
                    is_error=True,
                )
            return ToolOutcome(f"{label} failed: {error}", is_error=True)
        # Off the event loop: a result's files are checked (a PDF read in a child process).
        outcome = await asyncio.to_thread(outcome_from_result, result, self.spec.name, self.server)
        return running.annotate(outcome)


class McpResourceReader:
    """The built-in tool that reads a server's resource, such as a link a tool returned.

    It is approved like the server's tools: by the server's `approval`, or by a per-tool
    override named `read_resource`."""

    TOOL = "read_resource"

    def __init__(self, manager: McpManager, servers: list[str]) -> None:
        self.manager = manager
        self.spec = ToolSpec(
            name=READ_RESOURCE_TOOL,
            description=(
                "Read a resource of an MCP server by its URI, for example a resource link "
                "a tool returned. Text comes back as text; images and other files as "
                "attachments where the model can take them."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "server": {"type": "string", "enum": servers},
                    "uri": {"type": "string", "description": "The resource's URI."},
                },
                "required": ["server", "uri"],
            },
        )

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        server, uri = str(call.input.get("server", "")), str(call.input.get("uri", ""))
        connection = self.manager.connections.get(server)
        if connection is None or not connection.offers("resources") or not uri:
            return ToolOutcome(
                f"No running MCP server {server!r} with resources, or no uri given.",
                is_error=True,
            )
        refused = await approve(self.manager, server, self.TOOL, READ_RESOURCE_TOOL, call, env)
        if refused is not None:
            return refused
        try:
            result = await connection.request("read_resource", uri)
        except ServerCallError as error:
            return ToolOutcome(f"{uri} of the MCP server {server}: {error}", is_error=True)
        return await asyncio.to_thread(outcome_from_resource, result, uri)


async def approve(
    manager: McpManager, server: str, tool: str, name: str, call: ToolCallPart, env: ToolEnv
) -> ToolOutcome | None:
    """The person's decision on one call, per the server's and tool's approval setting:
    None to go ahead, else the result the model reads instead of the call's."""
    approval = manager.approval_for(server, tool)
    label = f"{tool} of the MCP server {server}"
    if approval == "never":
        return ToolOutcome(
            f"The person does not allow {label} to run (approval = never).", is_error=True
        )
    if approval == "ask":
        pending = manager.approvals.ask(
            env.conversation_id, call.id, server, tool, name=name, arguments=call.input
        )
        env.emit(
            ev.ApprovalRequired(
                ApprovalRequired(
                    call_id=call.id, server=server, tool=tool, name=name, arguments=call.input
                ),
            )
        )
        decision = await manager.approvals.wait(pending)
        env.emit(ev.ApprovalResolved(ApprovalResolved(call_id=call.id, decision=decision)))
        if decision == "deny":
            return ToolOutcome(f"The person denied this call of {label}.", is_error=True)
        if decision == "always":
            manager.always_allow(server, tool)
    return None
