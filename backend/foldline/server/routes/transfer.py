"""Export a conversation (JSON or Markdown) and import the JSON export back."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Response, status
from fastapi.responses import JSONResponse

from foldline.server.deps import StoreDep
from foldline.server.errors import ApiError
from foldline.server.routes.conversations import conversation_out
from foldline.server.schemas import MAX_TITLE_CHARS, ConversationOut
from foldline.store.export import export_json, export_markdown, import_json

IMPORTED = " (imported)"

router = APIRouter(prefix="/api/conversations", tags=["export"])


def _file_name(title: str, extension: str) -> str:
    """A safe ASCII file name for Content-Disposition (the title is user text)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", title).strip("-.")[:80] or "conversation"
    return f"{stem}.{extension}"


@router.post("/import", response_model=ConversationOut, status_code=status.HTTP_201_CREATED)
def import_conversation(
    store: StoreDep, data: Annotated[dict[str, Any], Body()]
) -> ConversationOut:
    """A JSON export (`format: foldline.conversation`) as a new conversation (new ids),
    titled "… (imported)" so it is not mistaken for its original in the list."""
    try:
        record = import_json(store, data)
    except ValueError as error:
        raise ApiError(422, "invalid_import", str(error)) from error
    title = f"{record.title[: MAX_TITLE_CHARS - len(IMPORTED)]}{IMPORTED}"
    return conversation_out(store.update_conversation(record.id, title=title))


@router.get(
    "/{conversation_id}/export",
    responses={
        200: {
            "description": "The full history with every fold.",
            "content": {
                "application/json": {"schema": {"type": "object"}},
                "text/markdown": {"schema": {"type": "string"}},
            },
        }
    },
)
def export_conversation(
    conversation_id: str,
    store: StoreDep,
    format: Annotated[Literal["json", "markdown"], Query()] = "json",
) -> Response:
    record = store.get_conversation(conversation_id)
    if format == "markdown":
        name = _file_name(record.title, "md")
        return Response(
            export_markdown(store, conversation_id),
            media_type="text/markdown; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )
    name = _file_name(record.title, "json")
    return JSONResponse(
        export_json(store, conversation_id),
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )
