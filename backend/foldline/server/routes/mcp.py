"""MCP servers: their status and settings, adding one, restart, the Claude Desktop
import, approvals.

Environment values and headers never leave the server: answers carry masks. No route
starts a server except Restart; adding and the import only write config.toml, and the
servers they name start at the next turn that needs them.
"""

from __future__ import annotations

import os
import shutil
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Request
from pydantic import Field

from foldline.api.events import ApprovalDecision, ApprovalRequired, ApprovalResolved
from foldline.api.schemas import ApiModel, RequestModel
from foldline.config import AppConfig
from foldline.config_mcp import DEFAULT_TIMEOUT_SECONDS, Approval, McpServerConfig
from foldline.mcp.approval import UnknownApproval
from foldline.mcp.manager import McpManager, ServerStatus
from foldline.mcp.settings import McpImportError, mask, new_server, parse_claude_desktop
from foldline.server.config_source import ConfigSource
from foldline.server.deps import StoreDep
from foldline.server.errors import ApiError
from foldline.server.routes.settings import ConfigSourceDep

router = APIRouter(tags=["mcp"])

NAME = Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")


async def get_mcp(request: Request) -> McpManager:
    return request.app.state.mcp


McpDep = Annotated[McpManager, Depends(get_mcp)]


# --- bodies ------------------------------------------------------------------------


class McpToolOut(ApiModel):
    name: str
    offered_as: str
    note: str | None = None
    """Why `offeredAs` is not simply `SERVER__TOOL` (a character replaced, a name cut
    to 64 characters, or a collision), when it is not."""


class McpToolOverrideIn(RequestModel):
    approval: Approval | None = None
    enabled: bool | None = None


class McpServerOut(ApiModel):
    """A server's settings (env values and headers masked) and its live state."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None
    args: list[str]
    cwd: str | None
    url: str | None
    env: dict[str, str]
    headers: dict[str, str]
    approval: Approval
    timeout: float
    enabled: bool
    tool_overrides: dict[str, McpToolOverrideIn]
    state: Literal[
        "stopped",
        "starting",
        "running",
        "failed",
        "disabled",
        "awaiting_approval",
        "signin_required",
    ]
    """`awaiting_approval`: added in Settings or by an import; it starts only once the
    person, shown its command, allows it (`POST …/allow`). `signin_required`: a remote
    server waits for the person to sign in."""
    error: str | None
    tools: list[McpToolOut]
    disabled_tools: list[str]
    limits: str | None = None
    """What Foldline cut or left out of this server's tools so that they cannot crowd out
    every request (descriptions too long, schemas too large, too many tools)."""
    hidden_tools: list[str] = Field(default_factory=list)
    """Tools the server lists that Foldline cannot call (they run only as tasks)."""
    roots: list[str] = Field(default_factory=list)
    """Folders the server is told about when it asks (none by default)."""
    signed_in: bool = False
    """Sign-in tokens are kept for this remote server."""


class McpServerList(ApiModel):
    servers: list[McpServerOut]


class McpServerNew(RequestModel):
    """A server added in Settings: stdio (`command`, `args`, `env`, `cwd`) or streamable
    HTTP (`url`, `headers`); the other transport's fields must be left out."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    approval: Approval = "ask"
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    enabled: bool = True


class McpServerPatch(RequestModel):
    """A change to a configured server (Edit in Settings): only the fields given change.
    `env` and `headers` are merged: a value sets that name, `null` removes it, names left
    out keep their stored (hidden) values."""

    command: str | None = None
    args: list[str] | None = None
    cwd: str | None = None
    url: str | None = None
    env: dict[str, str | None] | None = None
    headers: dict[str, str | None] | None = None
    approval: Approval | None = None
    timeout: float | None = None
    enabled: bool | None = None
    tools: dict[str, McpToolOverrideIn] | None = None
    """Per-tool overrides to set (merged over the stored ones)."""


class McpImport(RequestModel):
    text: str
    """The contents of Claude Desktop's `claude_desktop_config.json` (or its `mcpServers`)."""
    replace: bool = False
    """Overwrite servers of the same name (else they are skipped)."""


class McpImportResult(ApiModel):
    imported: list[str]
    skipped: list[str]


class ApprovalDecisionIn(RequestModel):
    decision: ApprovalDecision


class PendingApprovals(ApiModel):
    items: list[ApprovalRequired]
    """Each call waiting for the person, as `tool.approval_required` announced it."""


def missing_command(config: McpServerConfig) -> str | None:
    """Why a stdio server's command cannot start, when it is not on PATH or not at its
    path: said before the first turn tries it, not as "not started yet"."""
    if config.transport != "stdio" or not config.command:
        return None
    command = config.command
    if config.cwd and os.sep in command and not os.path.isabs(command):
        command = os.path.join(config.cwd, command)
    if shutil.which(command) is not None:
        return None
    where = "at that path" if os.sep in command else "on PATH"
    return f"The command `{config.command}` was not found {where}: fix it with Edit."


def server_out(status: ServerStatus) -> McpServerOut:
    config = status.config
    state, error = status.state, status.error
    # A command that cannot start is said at once, also while the server waits for the
    # person's yes: allowing a typo would only fail.
    if state in ("stopped", "awaiting_approval"):
        missing = missing_command(config)
        if missing:
            state, error = "failed", missing
    return McpServerOut(
        name=status.name,
        transport=config.transport,
        command=config.command,
        args=list(config.args),
        cwd=config.cwd,
        url=config.url,
        env={key: mask(value) for key, value in config.env.items()},
        headers={key: mask(value) for key, value in config.headers.items()},
        approval=config.approval,
        timeout=config.timeout,
        enabled=config.enabled,
        tool_overrides={
            tool: McpToolOverrideIn(**override.model_dump())
            for tool, override in config.tools.items()
        },
        state=state,  # type: ignore[arg-type]
        error=error,
        tools=[
            McpToolOut(name=tool.tool, offered_as=tool.spec.name, note=tool.note)
            for tool in status.tools
        ],
        disabled_tools=status.disabled_tools,
        limits=status.limits,
        hidden_tools=status.hidden_tools,
        roots=list(config.roots),
        signed_in=status.signed_in,
    )


def _save_servers(
    source: ConfigSource, config: AppConfig, servers: dict[str, McpServerConfig]
) -> None:
    source.save(config.model_copy(update={"mcp_servers": servers}))


# --- routes ------------------------------------------------------------------------


@router.get("/api/mcp/servers", response_model=McpServerList)
def list_servers(mcp: McpDep) -> McpServerList:
    return McpServerList(servers=[server_out(status) for status in mcp.status()])


def _one(mcp: McpManager, name: str) -> McpServerOut:
    for status in mcp.status():
        if status.name == name:
            return server_out(status)
    raise ApiError(404, "not_found", f"No MCP server named `{name}`.")


@router.post("/api/mcp/servers", response_model=McpServerOut, status_code=201)
async def add_server(body: McpServerNew, mcp: McpDep, source: ConfigSourceDep) -> McpServerOut:
    """Check a new server and write it to config.toml; it starts when a turn needs it."""
    config = source()
    if body.name in config.mcp_servers:
        raise ApiError(
            409,
            "mcp_server_exists",
            f"An MCP server named `{body.name}` exists already: change it, or remove it first.",
        )
    try:
        fields = body.model_dump(by_alias=False, exclude={"name", "transport"})
        server = new_server(body.name, body.transport, fields)
    except ValueError as error:
        raise ApiError(422, "invalid_settings", str(error)) from error
    # A server that runs a command on this computer is held before it is saved, so no
    # turn may start it until the person has seen the command and allowed it. A remote
    # server runs nothing here: it is reached at the URL the person typed.
    if mcp.first_starts is not None and server.command:
        mcp.first_starts.hold([body.name])
    _save_servers(source, config, {**config.mcp_servers, body.name: server})
    await mcp.sync()  # its secrets are scrubbed from the log from now on
    return _one(mcp, body.name)


@router.post("/api/mcp/servers/{name}/allow", response_model=McpServerOut)
async def allow_server(name: Annotated[str, NAME], mcp: McpDep) -> McpServerOut:
    """The person's yes to a server added in Settings or by an import, after seeing its
    command: it starts now, and from now on like any other."""
    if name not in mcp.server_configs():
        raise ApiError(404, "not_found", f"No MCP server named `{name}`.")
    if mcp.first_starts is not None:
        mcp.first_starts.allow(name)
    await mcp.restart(name)
    return _one(mcp, name)


@router.post("/api/mcp/servers/{name}/restart", response_model=McpServerOut)
async def restart_server(name: Annotated[str, NAME], mcp: McpDep) -> McpServerOut:
    """Stop and start the server again; answers once it runs or has failed."""
    if name not in mcp.server_configs():
        raise ApiError(404, "not_found", f"No MCP server named `{name}`.")
    if mcp.awaiting_first_start(name):
        raise ApiError(
            409,
            "mcp_server_awaiting_approval",
            f"The MCP server `{name}` has not been allowed to start yet: allow it first.",
        )
    await mcp.restart(name)
    return _one(mcp, name)


@router.patch("/api/mcp/servers/{name}", response_model=McpServerOut)
async def update_server(
    name: Annotated[str, NAME], body: McpServerPatch, mcp: McpDep, source: ConfigSourceDep
) -> McpServerOut:
    """How to reach it (command, arguments, URL, secrets merged), approval, timeout,
    enabled, and per-tool overrides; written to config.toml. A running server whose
    command or URL changed is stopped, and starts again as changed when next needed."""
    config = source()
    server = config.mcp_servers.get(name)
    if server is None:
        raise ApiError(404, "not_found", f"No MCP server named `{name}`.")
    changes = body.model_dump(exclude_unset=True, exclude={"tools", "env", "headers"})
    for kind in ("env", "headers"):
        given = getattr(body, kind)
        if given is not None:
            merged = {**getattr(server, kind), **given}
            changes[kind] = {key: value for key, value in merged.items() if value is not None}
    try:
        updated = McpServerConfig.model_validate(server.model_dump() | changes)
    except ValueError as error:
        raise ApiError(422, "invalid_settings", str(error)) from error
    for tool, override in (body.tools or {}).items():
        updated = updated.with_tool_override(tool, **override.model_dump(exclude_unset=True))
    _save_servers(source, config, {**config.mcp_servers, name: updated})
    await mcp.sync()  # a server switched off stops now
    return _one(mcp, name)


@router.delete("/api/mcp/servers/{name}", status_code=204)
async def delete_server(name: Annotated[str, NAME], mcp: McpDep, source: ConfigSourceDep) -> None:
    config = source()
    if name not in config.mcp_servers:
        raise ApiError(404, "not_found", f"No MCP server named `{name}`.")
    servers = {key: value for key, value in config.mcp_servers.items() if key != name}
    _save_servers(source, config, servers)
    if mcp.first_starts is not None:  # a server of this name written later is a new one
        mcp.first_starts.allow(name)
    await mcp.sync()


@router.post("/api/mcp/import", response_model=McpImportResult)
def import_claude_desktop(body: McpImport, source: ConfigSourceDep, mcp: McpDep) -> McpImportResult:
    """Write the `mcpServers` of a Claude Desktop config into config.toml; nothing starts
    until the person allows each server once."""
    try:
        found = parse_claude_desktop(body.text)
    except McpImportError as error:
        raise ApiError(422, "invalid_import", str(error)) from error
    config = source()
    servers = dict(config.mcp_servers)
    imported, skipped = [], []
    for name, server in found.items():
        if name in servers and not body.replace:
            skipped.append(name)
            continue
        servers[name] = server
        imported.append(name)
    if imported:
        if mcp.first_starts is not None:
            mcp.first_starts.hold([name for name in imported if servers[name].command])
        _save_servers(source, config, servers)
    return McpImportResult(imported=imported, skipped=skipped)


@router.get(
    "/api/conversations/{conversation_id}/tool-calls/pending", response_model=PendingApprovals
)
def pending_approvals(conversation_id: str, mcp: McpDep, store: StoreDep) -> PendingApprovals:
    """The calls waiting for approval here (a page opened mid-turn shows their cards)."""
    store.get_conversation(conversation_id)  # 404 for an unknown conversation
    return PendingApprovals(
        items=[
            ApprovalRequired(
                call_id=p.call_id, server=p.server, tool=p.tool, name=p.name, arguments=p.arguments
            )
            for p in mcp.approvals.waiting(conversation_id)
        ]
    )


@router.post(
    "/api/conversations/{conversation_id}/tool-calls/{call_id}/approval",
    response_model=ApprovalResolved,
)
def decide_approval(
    conversation_id: str, call_id: str, body: ApprovalDecisionIn, mcp: McpDep
) -> ApprovalResolved:
    """Answer a call waiting for approval: allow it once, always (this tool), or deny it."""
    try:
        mcp.decide(conversation_id, call_id, body.decision)
    except UnknownApproval as error:
        raise ApiError(404, "not_found", str(error)) from error
    return ApprovalResolved(call_id=call_id, decision=body.decision)
