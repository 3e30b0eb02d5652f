"""Telling the pages that show a conversation about every change to it, wherever made.

A page shows one conversation, and the same conversation may be open in another window
or changed by another client. Every change is recorded here, numbered in one sequence
(its revision): a turn or fold starting and ending (the chat service calls `started` and
`finished`), and every change made through the API (`changed`, called by
`server/announce.py`): a branch switch, a pin, a fold undone or brought back, a rename or
new settings, a hand-off, a deletion, a conversation created. Each page's watch stream
waits in `changes_after` and tells its page what concerns it, so the page redraws from
the store.

Only the newest changes are kept (`KEPT_CHANGES`); a stream that fell further behind is
told that it missed some (`MISSED`), and its page re-reads everything. Revisions count
from the server's start: a page compares them, never keeps them across a restart.
`close` ends every wait when the server stops, so open pages do not hold it up; it is the
one call made from another thread (everything else runs on the event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import deque
from dataclasses import dataclass

TURN_STARTED = "turn.started"
TURN_FINISHED = "turn.finished"
MISSED = "missed"
"""Not a change: changes were dropped before a stream read them."""

KEPT_CHANGES = 1000


class WatchClosed(Exception):
    """The server is stopping: the watch stream ends (the page reconnects later)."""


@dataclass(frozen=True)
class Change:
    revision: int
    """Its place in the sequence of every change since the server started."""
    conversation_id: str | None
    """The conversation changed; None for a change of the list alone (a project)."""
    kind: str
    """`turn.started`, `turn.finished`, or what the API changed (see `server/announce.py`)."""
    origin: str = ""
    """The page that made it (its `X-Foldline-Page` header), so it can skip its own."""


class ConversationWatch:
    def __init__(self) -> None:
        self.revision = 0
        """The revision of the newest change (0: none since the server started)."""
        self._changes: deque[Change] = deque(maxlen=KEPT_CHANGES)
        self._revisions: dict[str, int] = {}
        self._wake: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def started(self, conversation_id: str) -> None:
        """A turn or fold started in the conversation."""
        self.changed(conversation_id, TURN_STARTED)

    def finished(self, conversation_id: str) -> None:
        """A turn or fold ended, and what it wrote is stored."""
        self.changed(conversation_id, TURN_FINISHED)

    def changed(self, conversation_id: str | None, kind: str, origin: str = "") -> None:
        """Record a change and wake every stream waiting for one."""
        self.revision += 1
        self._changes.append(Change(self.revision, conversation_id, kind, origin))
        if conversation_id is not None:
            self._revisions[conversation_id] = self.revision
        wake, self._wake = self._wake, None
        if wake is not None and not wake.done():
            wake.set_result(None)

    def revision_of(self, conversation_id: str) -> int:
        """The revision of the conversation's newest change (0: none since the start)."""
        return self._revisions.get(conversation_id, 0)

    async def changes_after(self, seen: int) -> list[Change]:
        """The changes after revision `seen`, once there is one. When some were dropped
        meanwhile, the first is a `MISSED` change. `WatchClosed` once the server stops."""
        self._loop = asyncio.get_running_loop()
        if self.closed:
            raise WatchClosed
        if self.revision <= seen:
            if self._wake is None:
                self._wake = self._loop.create_future()
            # Shielded: one page going away must not cancel the wait of the others.
            await asyncio.shield(self._wake)
            if self.closed:
                raise WatchClosed
        # From the newest back to the first already seen: each of a thousand open
        # streams reads the one or two new changes, not all the kept ones (a scan of the
        # whole deque per stream made every change cost ~0.7 s at 1,000 streams).
        changes = list(itertools.takewhile(lambda c: c.revision > seen, reversed(self._changes)))
        changes.reverse()
        if changes and changes[0].revision > seen + 1:
            changes.insert(0, Change(changes[0].revision - 1, None, MISSED))
        return changes

    def close(self) -> None:
        """End every wait (from any thread): the server is about to stop."""
        self.closed = True
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def wake_all() -> None:
            wake, self._wake = self._wake, None
            if wake is not None and not wake.done():
                wake.set_result(None)

        # The loop may have stopped meanwhile: then nothing waits any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(wake_all)
