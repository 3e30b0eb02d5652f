"""MCP: signing in to a remote server, its roots, and the person's answers to a server's
questions (elicitation).

Sign in waits while the person signs in in the browser (at most five minutes) and
answers with the server's new state; Sign out forgets the server's tokens.
"""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path

from foldline.api.events import ElicitationRequired, ElicitationResolved
from foldline.api.schemas import ApiModel, RequestModel
from foldline.mcp.elicitation import BadAnswer, UnknownElicitation
from foldline.mcp.interaction import required_event
from foldline.server.errors import ApiError
from foldline.server.routes.mcp import McpDep, McpServerOut, _one
from foldline.server.routes.settings import ConfigSourceDep

router = APIRouter(tags=["mcp"])

NAME = Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")


class RootsIn(RequestModel):
    roots: list[str]
    """Absolute paths of folders the server may be told about; empty: none."""


class ElicitationAnswerIn(RequestModel):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    """The form's values (accept in form mode only)."""


class PendingElicitations(ApiModel):
    items: list[ElicitationRequired]


def _known(mcp: McpDep, name: str) -> None:
    if name not in mcp.server_configs():
        raise ApiError(404, "not_found", f"No MCP server named `{name}`.")


@router.post("/api/mcp/servers/{name}/sign-in", response_model=McpServerOut)
async def sign_in(name: Annotated[str, NAME], mcp: McpDep) -> McpServerOut:
    """Open the server's sign-in page in the browser and wait for the person to finish."""
    _known(mcp, name)
    config = mcp.server_configs()[name]
    if config.url is None:
        raise ApiError(409, "mcp_no_sign_in", f"`{name}` runs on this computer: no sign-in.")
    if mcp.open_url is None:
        raise ApiError(409, "mcp_no_browser", "This app cannot open a browser to sign in.")
    await mcp.sign_in(name)
    return _one(mcp, name)


@router.post("/api/mcp/servers/{name}/sign-out", response_model=McpServerOut)
async def sign_out(name: Annotated[str, NAME], mcp: McpDep) -> McpServerOut:
    """Forget the server's tokens; it asks for a sign-in again at its next start."""
    _known(mcp, name)
    await mcp.sign_out(name)
    return _one(mcp, name)


@router.put("/api/mcp/servers/{name}/roots", response_model=McpServerOut)
async def set_roots(
    name: Annotated[str, NAME], body: RootsIn, mcp: McpDep, source: ConfigSourceDep
) -> McpServerOut:
    """The folders this server is told about when it asks (roots); written to config.toml."""
    config = source()
    server = config.mcp_servers.get(name)
    if server is None:
        raise ApiError(404, "not_found", f"No MCP server named `{name}`.")
    roots: list[str] = []
    for raw in body.roots:
        path = FilePath(raw.strip()).expanduser()
        if not path.is_absolute():
            raise ApiError(422, "invalid_settings", f"{raw!r}: give the folder's full path")
        if not path.is_dir():
            raise ApiError(422, "invalid_settings", f"{raw!r}: no such folder")
        if str(path) not in roots:
            roots.append(str(path))
    updated = server.model_copy(update={"roots": tuple(roots)})
    source.save(config.model_copy(update={"mcp_servers": {**config.mcp_servers, name: updated}}))
    await mcp.sync()
    return _one(mcp, name)


@router.get("/api/conversations/{conversation_id}/elicitations", response_model=PendingElicitations)
def pending_elicitations(conversation_id: str, mcp: McpDep) -> PendingElicitations:
    """The servers' questions waiting here (a page opened mid-turn shows their forms)."""
    waiting = mcp.calls.elicitations.waiting(conversation_id)
    return PendingElicitations(items=[required_event(p) for p in waiting])


@router.post(
    "/api/conversations/{conversation_id}/elicitations/{elicitation_id}",
    response_model=ElicitationResolved,
)
def answer_elicitation(
    conversation_id: str, elicitation_id: str, body: ElicitationAnswerIn, mcp: McpDep
) -> ElicitationResolved:
    """Submit, Decline or Cancel a server's question; a form's values are checked first."""
    try:
        pending = mcp.calls.elicitations.answer(
            conversation_id, elicitation_id, body.action, body.content
        )
    except UnknownElicitation as error:
        raise ApiError(404, "not_found", str(error)) from error
    except BadAnswer as error:
        raise ApiError(422, "invalid_answer", str(error)) from error
    return ElicitationResolved(
        call_id=pending.call_id, elicitation_id=elicitation_id, action=body.action
    )
