"""Waking the pages that follow a conversation when a turn or fold starts in it.

A page shows one conversation; a turn started elsewhere (another window, another
client) must appear on it live. The chat service calls `started` for every turn it
starts; each page's watch stream waits in `next_start`, then follows that turn's events.
`close` ends every wait when the server stops, so open pages do not hold it up; it is
the one call made from another thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


class WatchClosed(Exception):
    """The server is stopping: the watch stream ends (the page reconnects later)."""


class ConversationWatch:
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._starts: dict[str, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def started(self, conversation_id: str, turn: Any) -> None:
        """A turn or fold started: count it, and hand it to everyone waiting."""
        self._starts[conversation_id] = self.starts(conversation_id) + 1
        waiting = self._waiting.pop(conversation_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(turn)

    def starts(self, conversation_id: str) -> int:
        """How many turns or folds have started in the conversation since launch."""
        return self._starts.get(conversation_id, 0)

    async def next_start(self, conversation_id: str, seen: int) -> Any:
        """The next turn or fold after the first `seen` ones. When one started while the
        caller was not waiting (it may have ended already), at once and None: the caller
        looks for what runs now. `WatchClosed` once the server stops."""
        loop = self._loop = asyncio.get_running_loop()
        if self.closed:
            raise WatchClosed
        if self.starts(conversation_id) > seen:
            return None
        waiting = self._waiting.get(conversation_id)
        if waiting is None:
            waiting = self._waiting[conversation_id] = loop.create_future()
        # Shielded: one page going away must not cancel the wait of the others.
        turn = await asyncio.shield(waiting)
        if self.closed:
            raise WatchClosed
        return turn

    def close(self) -> None:
        """End every wait (from any thread): the server is about to stop."""
        self.closed = True
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def wake_all() -> None:
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_result(None)
            self._waiting.clear()

        # The loop may have stopped meanwhile: then nothing waits any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(wake_all)
