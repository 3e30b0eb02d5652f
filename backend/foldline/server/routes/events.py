"""Following a conversation's running turn or fold from another page (a reload, a
second window): what it already emitted, replayed, then its events live."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.sse import EventSourceResponse, ServerSentEvent

from foldline.chat.service import TurnHandle
from foldline.server.deps import ChatDep, StoreDep
from foldline.server.sse import turn_event_stream

router = APIRouter(prefix="/api/conversations", tags=["events"])


def running_turn(conversation_id: str, store: StoreDep, chat: ChatDep) -> TurnHandle | None:
    # A dependency, so an unknown conversation is an ordinary JSON 404 before any byte
    # of the stream is sent.
    store.get_conversation(conversation_id)
    return chat.running_turn(conversation_id)


@router.get(
    "/{conversation_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`text/event-stream`: the running turn's events from its start, "
            "then live until `done`; an empty stream when nothing runs.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        404: {"description": "No such conversation."},
    },
)
async def follow_events(
    turn: Annotated[TurnHandle | None, Depends(running_turn)],
) -> AsyncIterator[ServerSentEvent]:
    if turn is None:
        return
    async for event in turn_event_stream(turn):
        yield event
