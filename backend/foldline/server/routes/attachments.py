"""The bytes of a file attached to a message (message pages carry only its metadata)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import Response

from foldline.core.attachments import PDF_TYPE
from foldline.core.wire.common import IMAGE_TYPES
from foldline.server.deps import StoreDep

router = APIRouter(prefix="/api/conversations", tags=["attachments"])

SHA256 = Annotated[str, Path(pattern="^[0-9a-f]{64}$")]


@router.get(
    "/{conversation_id}/attachments/{sha256}",
    response_class=Response,
    responses={200: {"description": "The file's bytes.", "content": {"*/*": {}}}},
)
def attachment_bytes(conversation_id: str, sha256: SHA256, store: StoreDep) -> Response:
    """A file of this conversation, by the `sha256` its attachment part names.

    Images and PDFs are served as their type; every other file as plain text, so a
    browser never runs an attached HTML or script file as a page.
    """
    media_type, data = store.attachment(conversation_id, sha256)
    if media_type not in IMAGE_TYPES and media_type != PDF_TYPE:
        media_type = "text/plain; charset=utf-8"
    return Response(content=data, media_type=media_type)
