"""A person's message with files, read before its turn starts: off the event loop, and
stoppable.

Reading a message's files can take seconds (a PDF is parsed in a child process, images'
headers are read, the message is counted against the window). All of it runs off the
event loop, so every other conversation keeps answering. While it runs the conversation
is busy, as during a turn: a second send waits (409), and Stop cancels the reading, which
kills a PDF's reading process at once. A stopped reading stores nothing; its request is
answered with a turn that ends at once, marked cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, MutableMapping
from typing import Any, TypeVar

from foldline.api.events import Done
from foldline.chat import events as ev
from foldline.chat.turn_handle import TurnHandle

T = TypeVar("T")


async def read_while_stoppable(
    running: MutableMapping[str, TurnHandle],
    conversation_id: str,
    work: Callable[[], Coroutine[Any, Any, T]],
) -> T | None:
    """`work`'s result, or None when Stop cancelled it. The conversation counts as
    running (a `TurnHandle` of kind "reading" in `running`) until it ends."""
    handle = TurnHandle(conversation_id, kind="reading")
    running[conversation_id] = handle
    try:
        task = asyncio.get_running_loop().create_task(work())
        handle.task = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():  # stopped, not this request going away
                return None
            task.cancel()
            raise
    finally:
        handle.close()
        if running.get(conversation_id) is handle:
            del running[conversation_id]


def stopped_turn(conversation_id: str) -> TurnHandle:
    """A turn that ended before it began: its only event says it was cancelled."""
    handle = TurnHandle(conversation_id)
    handle.publish(ev.Done(Done(cancelled=True)))
    handle.close()
    return handle
