"""Forwarding a turn's events as server-sent events.

The turn runs in the chat service's own task; this only reads its event queue. When the
client goes away, FastAPI cancels the reader at its next `await` and the turn goes on
to completion and is persisted: the person sees it on the next load.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from fastapi.sse import ServerSentEvent

from foldline.api.events import ErrorEvent
from foldline.chat import events as ev
from foldline.chat.events import ChatEvent
from foldline.chat.turn_handle import TurnHandle

log = logging.getLogger("foldline.server")


async def turn_event_stream(turn: TurnHandle) -> AsyncIterator[ServerSentEvent]:
    """`event: <name>` / `data: <json>` for each event; always ends with `done`.

    The chat service ends every turn with `done`; if its stream ever broke off without
    one, the client would wait forever, so a missing `done` is supplied here (after an
    `error` when the stream failed).
    """
    sent_done = False
    try:
        async for event in turn.events():
            yield _sse(event)
            if isinstance(event, ev.Done):
                sent_done = True
    except Exception:
        log.exception("the event stream of a turn failed")
        failed = ErrorEvent(
            code="internal",
            message="The event stream failed; reload to see the saved state.",
            retryable=False,
        )
        yield _sse(ev.Error(failed))
    if not sent_done:
        yield _sse(ev.Done())


def _sse(event: ChatEvent) -> ServerSentEvent:
    """An event on the wire: its name, and its body in camelCase (`ChatEvent.data`)."""
    return ServerSentEvent(event=event.name, data=event.data)
