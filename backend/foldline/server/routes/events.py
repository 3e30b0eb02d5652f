"""Following a conversation's running turn or fold from another page (a reload, a
second window): what it already emitted, replayed, then its events live; and watching
a conversation for turns that start anywhere, so an open page follows them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.sse import EventSourceResponse, ServerSentEvent

from foldline.chat.turn_handle import TurnHandle
from foldline.chat.watching import WatchClosed
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


def known_conversation(conversation_id: str, store: StoreDep) -> str:
    store.get_conversation(conversation_id)
    return conversation_id


@router.get(
    "/{conversation_id}/watch",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`text/event-stream` that stays open while the page shows the "
            "conversation: `turn.started` when a turn or fold starts in it (from any page "
            "or client; at once when one is running), `turn.finished` when it has ended "
            "and its messages are stored. Follow a started turn with `GET …/events`.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        404: {"description": "No such conversation."},
    },
)
async def watch_conversation(
    conversation_id: Annotated[str, Depends(known_conversation)], chat: ChatDep
) -> AsyncIterator[ServerSentEvent]:
    watch = chat.watch
    seen = watch.starts(conversation_id)
    turn = chat.running_turn(conversation_id)
    while True:
        if turn is None:
            try:
                turn = await watch.next_start(conversation_id, seen)
            except WatchClosed:
                return
            # A turn that started while this stream was sending may have ended already:
            # it is still announced, so the page re-reads what it stored.
            turn = turn or chat.running_turn(conversation_id)
        seen = watch.starts(conversation_id)
        yield ServerSentEvent(event="turn.started", data={})
        if turn is not None:
            # Reading the turn's own events waits for its end without being cancelled
            # by it.
            async for _ in turn.events():
                pass
        yield ServerSentEvent(event="turn.finished", data={})
        # One may have started while this stream was sending.
        turn = chat.running_turn(conversation_id)
