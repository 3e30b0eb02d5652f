"""MCP: what the running servers offer the person directly, besides tools: their prompts
(offered in the message box after "/") and their resources (browsed, and put into a
message).

Only running servers are asked: servers start with the first message that needs them,
and listing never starts one.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import Field

from foldline.api.schemas import ApiModel, RequestModel
from foldline.mcp.connection import ServerCallError, ServerConnection
from foldline.server.errors import ApiError
from foldline.server.routes.mcp import McpDep

router = APIRouter(tags=["mcp"])

NAME = Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")
MAX_PAGES = 20


class PromptArgumentOut(ApiModel):
    name: str
    description: str | None = None
    required: bool = False


class PromptOut(ApiModel):
    server: str
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgumentOut]


class PromptList(ApiModel):
    items: list[PromptOut]


class PromptGetIn(RequestModel):
    server: str
    name: str
    arguments: dict[str, str] = Field(default_factory=dict)


class PromptText(ApiModel):
    text: str
    """The prompt's messages as the text of one message (a line naming what is not text)."""


class ResourceOut(ApiModel):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class ResourceList(ApiModel):
    items: list[ResourceOut]


class ResourceReadIn(RequestModel):
    uri: str


class ResourceContentOut(ApiModel):
    """One resource's contents, shaped like an attachment: text, or base64 data."""

    uri: str
    name: str
    media_type: str
    text: str | None = None
    data_base64: str | None = None


def _running(mcp: McpDep, name: str, feature: str) -> ServerConnection:
    if name not in mcp.server_configs():
        raise ApiError(404, "not_found", f"No MCP server named `{name}`.")
    connection = mcp.connections.get(name)
    if connection is None or not connection.offers(feature):  # type: ignore[arg-type]
        raise ApiError(409, "mcp_not_offered", f"`{name}` is not running with {feature}.")
    return connection


async def _pages(connection: ServerConnection, what: str, field: str) -> list[Any]:
    from mcp_types import PaginatedRequestParams

    items: list[Any] = []
    cursor: str | None = None
    for _page in range(MAX_PAGES):
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await connection.request(what, params=params)
        items.extend(getattr(result, field))
        cursor = result.next_cursor
        if not cursor:
            break
    return items


@router.get("/api/mcp/prompts", response_model=PromptList)
async def list_prompts(mcp: McpDep) -> PromptList:
    """Every running server's prompts; a server that fails to list them is left out."""
    items: list[PromptOut] = []
    for name, connection in mcp.connections.items():
        if not connection.offers("prompts"):
            continue
        try:
            prompts = await _pages(connection, "list_prompts", "prompts")
        except ServerCallError:
            continue
        items.extend(
            PromptOut(
                server=name,
                name=prompt.name,
                title=prompt.title,
                description=prompt.description,
                arguments=[
                    PromptArgumentOut(
                        name=a.name, description=a.description, required=bool(a.required)
                    )
                    for a in prompt.arguments or []
                ],
            )
            for prompt in prompts
        )
    return PromptList(items=items)


@router.post("/api/mcp/prompts/get", response_model=PromptText)
async def get_prompt(body: PromptGetIn, mcp: McpDep) -> PromptText:
    """A prompt filled in with its arguments, as the text of a message to send."""
    connection = _running(mcp, body.server, "prompts")
    try:
        result = await connection.request("get_prompt", body.name, body.arguments)
    except ServerCallError as error:
        raise ApiError(422, "mcp_prompt_failed", f"{body.name}: {error}") from error
    parts: list[str] = []
    for message in result.messages:
        content = message.content
        kind = getattr(content, "type", "")
        if kind == "text":
            parts.append(content.text)
        elif kind == "resource" and getattr(content.resource, "text", None) is not None:
            parts.append(f"[resource {content.resource.uri}]\n{content.resource.text}")
        else:
            parts.append(f"[{kind or 'content'} from the prompt, not shown here]")
    return PromptText(text="\n\n".join(parts))


@router.get("/api/mcp/servers/{name}/resources", response_model=ResourceList)
async def list_resources(name: Annotated[str, NAME], mcp: McpDep) -> ResourceList:
    connection = _running(mcp, name, "resources")
    try:
        resources = await _pages(connection, "list_resources", "resources")
    except ServerCallError as error:
        raise ApiError(502, "mcp_failed", f"{name}: {error}") from error
    return ResourceList(
        items=[
            ResourceOut(
                uri=str(r.uri),
                name=r.name,
                title=r.title,
                description=r.description,
                mime_type=r.mime_type,
            )
            for r in resources
        ]
    )


@router.post("/api/mcp/servers/{name}/resources/read", response_model=ResourceContentOut)
async def read_resource(
    name: Annotated[str, NAME], body: ResourceReadIn, mcp: McpDep
) -> ResourceContentOut:
    """One resource's first contents, to put into a message."""
    connection = _running(mcp, name, "resources")
    try:
        result = await connection.request("read_resource", body.uri)
    except ServerCallError as error:
        raise ApiError(422, "mcp_resource_failed", f"{body.uri}: {error}") from error
    if not result.contents:
        raise ApiError(422, "mcp_resource_failed", f"{body.uri} is empty.")
    contents = result.contents[0]
    uri = str(contents.uri)
    return ResourceContentOut(
        uri=uri,
        name=uri.rstrip("/").rsplit("/", 1)[-1] or uri,
        media_type=contents.mime_type or "text/plain",
        text=getattr(contents, "text", None),
        data_base64=getattr(contents, "blob", None),
    )
