"""Export a conversation (JSON or Markdown) and import the JSON export back."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Annotated, Literal

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from foldline.api.schemas import MAX_TITLE_CHARS, ConversationOut
from foldline.chat.service import ChatService
from foldline.config import ConfigError
from foldline.core.pins import pins_over_cap
from foldline.server.deps import ChatDep, DataDirDep, StoreDep
from foldline.server.errors import ApiError
from foldline.server.routes.conversations import conversation_out
from foldline.server.routes.settings import ConfigSourceDep
from foldline.server.security import IMPORT_BODY_LIMIT
from foldline.store import Store
from foldline.store.export import export_markdown, write_export
from foldline.store.import_reader import import_stream
from foldline.store.json_stream import InvalidJson

SPOOL_IN_MEMORY = 1024 * 1024
"""A body up to this size stays in memory; a larger one goes to a private temporary file."""
READ_CHUNK = 1024 * 1024
IMPORTED = " (imported)"

router = APIRouter(prefix="/api/conversations", tags=["export"])


def file_name(title: str, extension: str) -> str:
    """A safe ASCII file name for Content-Disposition (the title is user text)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", title).strip("-.")[:80] or "conversation"
    return f"{stem}.{extension}"


def _cap_pins(store: Store, chat: ChatService, conversation_id: str) -> str | None:
    """Apply the pins' cap to an imported conversation, as pinning one by one would:
    the newest pins that fit are kept, the older ones unpinned. Says what it did."""
    ctx = chat.load_context(conversation_id)
    records = {pin.seq: pin for pin in store.list_pins(conversation_id)}
    dropped = pins_over_cap(
        [(pin, records[pin.index].pinned_at) for pin in ctx.pins],
        ctx.pins_cap,
        ctx.counter.count_text,
    )
    for pin in dropped:
        store.set_pinned(conversation_id, records[pin.index].message_id, False)
    if not dropped:
        return None
    return (
        f"{len(dropped)} of the {len(records)} pinned messages were unpinned (the oldest "
        f"pinned first): together they would have taken {ctx.pinned_tokens:,} tokens of "
        f"every request, over the cap of {ctx.pins_cap:,} (15% of what the model can "
        "read). The messages themselves are all kept."
    )


def _import_from(store: Store, chat: ChatService, body: IO[bytes]) -> ConversationOut:
    body.seek(0)
    try:
        record = import_stream(store, body)
    except InvalidJson as error:
        raise ApiError(
            400, "invalid_json", f"The request body is not valid JSON: {error}"
        ) from None
    except ValueError as error:
        raise ApiError(422, "invalid_import", str(error)) from error
    # Titled as an import, so it is not mistaken for its original in the list.
    title = f"{record.title[: MAX_TITLE_CHARS - len(IMPORTED)]}{IMPORTED}"
    out = conversation_out(store.update_conversation(record.id, title=title))
    out.notice = _cap_pins(store, chat, record.id) or out.notice
    return out


@router.post(
    "/import",
    response_model=ConversationOut,
    status_code=status.HTTP_201_CREATED,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
)
async def import_conversation(
    request: Request, store: StoreDep, chat: ChatDep, data_dir: DataDirDep
) -> ConversationOut:
    """A JSON export (`format: foldline.conversation`) as a new conversation (new ids).
    Pins over their cap are unpinned, oldest first, and `notice` says so.

    The body is copied to a private temporary file in the data dir as it arrives (never
    held whole in memory), then read one message at a time; the database's write
    transaction is open only while reading that local file, never while waiting on the
    network.
    """
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, dir=str(data_dir)) as body:
        await read_body(request, body)
        return await run_in_threadpool(_import_from, store, chat, body)


async def read_body(request: Request, body: IO[bytes]) -> None:
    """Copy the request body to `body` as it arrives (413 past the import limit)."""
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > IMPORT_BODY_LIMIT:
            raise ApiError(
                413,
                "payload_too_large",
                f"The request body is larger than the limit of {IMPORT_BODY_LIMIT} bytes.",
            )
        body.write(chunk)


def export_chunks(write: Callable[[IO[bytes]], None], data_dir: Path) -> Iterator[bytes]:
    """What `write` exports, in chunks for a streamed response."""
    # Written to a private temporary file from one read snapshot first: the response is
    # then streamed from the file, so a slow download never holds the database snapshot.
    with tempfile.TemporaryFile(dir=data_dir) as out:
        write(out)
        out.seek(0)
        while chunk := out.read(READ_CHUNK):
            yield chunk


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
    data_dir: DataDirDep,
    source: ConfigSourceDep,
    format: Annotated[Literal["json", "markdown"], Query()] = "json",
) -> Response:
    record = store.get_conversation(conversation_id)
    if format == "markdown":
        name = file_name(record.title, "md")
        try:
            default_model = source().default_model
        except ConfigError:  # a broken config.toml does not stop an export
            default_model = None
        return Response(
            export_markdown(store, conversation_id, default_model),
            media_type="text/markdown; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )
    name = file_name(record.title, "json")
    return StreamingResponse(
        export_chunks(lambda out: write_export(store, conversation_id, out), data_dir),
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )
