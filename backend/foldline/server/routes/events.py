"""Following a conversation's running turn or fold from another page (a reload, a
second window): what it already emitted, replayed, then its events live; and watching
a conversation for every turn and change made anywhere, so an open page follows them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.sse import EventSourceResponse, ServerSentEvent

from foldline.chat.turn_handle import TurnHandle
from foldline.chat.watching import MISSED, TURN_FINISHED, TURN_STARTED, Change, WatchClosed
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


LIST_KINDS = frozenset(
    {"created", "updated", "deleted", "branch", "handoff", "project", TURN_FINISHED, MISSED}
)
"""Changes to other conversations that change what the list shows (titles, counts,
order, projects): the page re-reads its list."""


def watch_event(change: Change, conversation_id: str | None) -> ServerSentEvent | None:
    """What a page showing `conversation_id` (None: none) is told of a change, if anything."""
    if change.kind == MISSED and conversation_id is not None:
        # Anything may have changed: the page re-reads its conversation and its list.
        return ServerSentEvent(
            event="conversation.changed",
            data={"kind": MISSED, "revision": change.revision, "origin": ""},
        )
    if conversation_id is not None and change.conversation_id == conversation_id:
        if change.kind in (TURN_STARTED, TURN_FINISHED):
            return ServerSentEvent(event=change.kind, data={"revision": change.revision})
        return ServerSentEvent(
            event="conversation.changed",
            data={"kind": change.kind, "revision": change.revision, "origin": change.origin},
        )
    if change.kind in LIST_KINDS:
        return ServerSentEvent(
            event="conversations.changed",
            data={
                "kind": change.kind,
                "conversationId": change.conversation_id,
                "origin": change.origin,
            },
        )
    return None


@router.get(
    "/{conversation_id}/watch",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`text/event-stream` that stays open while the page shows the "
            "conversation. First `watch.opened` (`revision`: the conversation's newest "
            "change). Then `turn.started` when a turn or fold starts in it (from any page "
            "or client; at once when one is running) and `turn.finished` once it ended and "
            "is stored; `conversation.changed` (`kind`, `revision`, `origin`) for every "
            "other change to it; `conversations.changed` (`kind`, `conversationId`, "
            "`origin`) when another conversation changed the list. Follow a started turn "
            "with `GET …/events`.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        404: {"description": "No such conversation."},
    },
)
async def watch_conversation(
    conversation_id: Annotated[str, Depends(known_conversation)], chat: ChatDep
) -> AsyncIterator[ServerSentEvent]:
    watch = chat.watch
    # Read together, before the first yield: a turn starting from here on is in the log.
    seen = watch.revision
    revision = watch.revision_of(conversation_id)
    running = chat.running_turn(conversation_id)
    yield ServerSentEvent(event="watch.opened", data={"revision": revision})
    if running is not None and running.kind == "turn":
        yield ServerSentEvent(event=TURN_STARTED, data={"revision": revision})
    async for event in watch_events(chat, seen, conversation_id):
        yield event


async def watch_events(
    chat: ChatDep, seen: int, conversation_id: str | None
) -> AsyncIterator[ServerSentEvent]:
    """The events for a page showing `conversation_id` (None: none) after revision `seen`,
    until the server stops."""
    while True:
        try:
            changes = await chat.watch.changes_after(seen)
        except WatchClosed:
            return
        for change in changes:
            seen = max(seen, change.revision)
            event = watch_event(change, conversation_id)
            if event is not None:
                yield event


list_router = APIRouter(prefix="/api", tags=["events"])


@list_router.get(
    "/watch",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`text/event-stream` that stays open while a page shows no "
            "conversation: `watch.opened`, then `conversations.changed` (`kind`, "
            "`conversationId`, `origin`) whenever a change anywhere changes the list.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
)
async def watch_list(chat: ChatDep) -> AsyncIterator[ServerSentEvent]:
    seen = chat.watch.revision
    yield ServerSentEvent(event="watch.opened", data={})
    async for event in watch_events(chat, seen, None):
        yield event
