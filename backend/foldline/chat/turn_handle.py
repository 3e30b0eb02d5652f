"""TurnHandle: the running task of one turn (or fold, or hand-off) and the replay buffer
of its events, which any number of readers follow from its beginning."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from foldline.chat.events import ChatEvent


class TurnHandle:
    """The running task of one turn or fold and the replay buffer of its events."""

    def __init__(self, conversation_id: str, kind: str = "turn") -> None:
        self.conversation_id = conversation_id
        self.kind = kind
        """"turn" (a turn or a fold, with events) or "handoff" (a hand-off, without)."""
        self.task: asyncio.Task[Any] | None = None
        self.emitted: list[ChatEvent] = []
        self.finished = False
        self._changed = asyncio.Event()

    def publish(self, event: ChatEvent) -> None:
        self.emitted.append(event)
        self._wake()

    def close(self) -> None:
        self.finished = True
        self._wake()

    def _wake(self) -> None:
        # Every waiting reader wakes up; later readers wait on a fresh event.
        self._changed.set()
        self._changed = asyncio.Event()

    async def events(self) -> AsyncIterator[ChatEvent]:
        """Everything the turn emitted so far, then each new event until it ends."""
        position = 0
        while True:
            while position < len(self.emitted):
                position += 1
                yield self.emitted[position - 1]
            if self.finished:
                return
            await self._changed.wait()

    async def wait(self) -> None:
        """Until the task ends, however it ends (a stopped hand-off ends cancelled)."""
        if self.task is not None:
            await asyncio.wait({self.task})
