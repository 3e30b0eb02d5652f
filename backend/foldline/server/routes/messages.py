"""The display history of a conversation (the active path), sending a message,
retrying, editing and regenerating (SSE streams)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from foldline.api.schemas_messages import (
    EditMessage,
    EditPreview,
    FullPartOut,
    MessageOut,
    MessagePage,
    SendMessage,
)
from foldline.chat.turn_handle import TurnHandle
from foldline.core.messages import ToolResultPart
from foldline.server.big_bodies import OffLoopJsonRoute
from foldline.server.deps import ChatDep, StoreDep
from foldline.server.errors import ApiError
from foldline.server.sse import turn_event_stream
from foldline.uploads import IncomingFile

router = APIRouter(
    prefix="/api/conversations",
    tags=["messages"],
    # A message or an edit carries up to 48 MB of JSON (its files).
    route_class=OffLoopJsonRoute,
)

MAX_PAGE = 500

SSE_RESPONSES: dict[int | str, dict] = {
    200: {
        "description": "`text/event-stream` of the turn's events (see docs/api.md).",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    409: {"description": "A turn or fold is already running in this conversation."},
}


@router.get("/{conversation_id}/messages", response_model=MessagePage)
def list_messages(
    conversation_id: str,
    store: StoreDep,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    full: Annotated[bool, Query(description="include tool results' full outputs")] = False,
    newest: Annotated[
        bool, Query(description="the newest `limit` messages (`offset` is ignored)")
    ] = False,
) -> MessagePage:
    conversation = store.get_conversation(conversation_id)
    if newest:
        # Opening at the end then needs no count first: the page comes with the conversation.
        offset = max(0, conversation.message_count - limit)
    state = store.current_compaction(conversation_id)
    api_start = state.api_start_index if state else 0
    records = store.list_messages(conversation_id, offset=offset, limit=limit)
    siblings = store.sibling_ids(conversation_id, [r.id for r in records])
    return MessagePage(
        items=[
            MessageOut.from_record(r, api_start, include_full=full, sibling_ids=siblings.get(r.id))
            for r in records
        ],
        total=conversation.message_count,
        offset=offset,
        limit=limit,
        api_start_index=api_start,
    )


@router.get(
    "/{conversation_id}/messages/{message_id}/parts/{part_index}/full",
    response_model=FullPartOut,
)
def full_tool_output(
    conversation_id: str,
    message_id: str,
    part_index: Annotated[int, Path(ge=0, le=10_000)],
    store: StoreDep,
) -> FullPartOut:
    """The untruncated output of one tool result (kept in storage, never sent by default)."""
    record = store.get_message(message_id)
    if record.conversation_id != conversation_id:
        raise ApiError(404, "not_found", f"No message {message_id} in this conversation.")
    parts = record.message.parts
    if part_index >= len(parts) or not isinstance(parts[part_index], ToolResultPart):
        raise ApiError(404, "not_found", f"Message {message_id} has no tool result {part_index}.")
    part = parts[part_index]
    assert isinstance(part, ToolResultPart)
    return FullPartOut(
        message_id=message_id,
        part_index=part_index,
        kind=part.kind,
        output=part.full_output if part.full_output is not None else part.output,
        truncated=part.full_output is not None,
    )


def incoming_files(body: SendMessage) -> list[IncomingFile]:
    return [IncomingFile(f.name, f.media_type, f.data_base64) for f in body.attachments]


async def start_message_turn(conversation_id: str, body: SendMessage, chat: ChatDep) -> TurnHandle:
    # Started in a dependency, not in the streaming generator: a refusal (409, 404, 400)
    # must be an ordinary JSON answer, and once the stream has begun the status is 200.
    return await chat.start_turn(conversation_id, body.content, incoming_files(body))


@router.post(
    "/{conversation_id}/messages",
    response_class=EventSourceResponse,
    responses=SSE_RESPONSES,
)
async def send_message(
    turn: Annotated[TurnHandle, Depends(start_message_turn)],
) -> AsyncIterator[ServerSentEvent]:
    async for event in turn_event_stream(turn):
        yield event


async def start_retry_turn(conversation_id: str, chat: ChatDep) -> TurnHandle:
    # The chat service refuses (404) an unknown conversation, (400) when the last message
    # is a complete answer and (409) while another turn runs, before any event, like a
    # send; its checks read the store in a worker thread.
    return await chat.start_retry(conversation_id)


@router.post(
    "/{conversation_id}/retry",
    response_class=EventSourceResponse,
    responses=SSE_RESPONSES,
)
async def retry(
    turn: Annotated[TurnHandle, Depends(start_retry_turn)],
) -> AsyncIterator[ServerSentEvent]:
    """Run the model again on the history as it is, without a new user message."""
    async for event in turn_event_stream(turn):
        yield event


async def start_edit_turn(
    conversation_id: str, message_id: str, body: EditMessage, chat: ChatDep
) -> TurnHandle:
    return await chat.start_edit(
        conversation_id, message_id, body.content, incoming_files(body), body.keep_attachments
    )


@router.post(
    "/{conversation_id}/messages/{message_id}/edit",
    response_class=EventSourceResponse,
    responses=SSE_RESPONSES,
)
async def edit_message(
    turn: Annotated[TurnHandle, Depends(start_edit_turn)],
) -> AsyncIterator[ServerSentEvent]:
    """A new version of the person's message as its sibling, on a new branch that
    becomes the active path, and the answer to it (the same events as a send)."""
    async for event in turn_event_stream(turn):
        yield event


async def start_regenerate_turn(conversation_id: str, message_id: str, chat: ChatDep) -> TurnHandle:
    return await chat.start_regenerate(conversation_id, message_id)


@router.post(
    "/{conversation_id}/messages/{message_id}/regenerate",
    response_class=EventSourceResponse,
    responses=SSE_RESPONSES,
)
async def regenerate_message(
    turn: Annotated[TurnHandle, Depends(start_regenerate_turn)],
) -> AsyncIterator[ServerSentEvent]:
    """A new answer written as a sibling of this one (the old one stays a switch away)."""
    async for event in turn_event_stream(turn):
        yield event


@router.get("/{conversation_id}/messages/{message_id}/edit-preview", response_model=EditPreview)
def edit_preview(
    conversation_id: str, message_id: str, store: StoreDep, chat: ChatDep
) -> EditPreview:
    """What editing this message would do to the model's view (before the edit is sent)."""
    store.get_conversation(conversation_id)
    return chat.edit_preview(conversation_id, message_id)
