"""One local server slot, shared without a fight between turns and background summaries.

llama.cpp-style servers run one request at a time per slot. llama-cpp-python's server
cuts the running request off when another arrives (`interrupt_requests`, on by default);
llama.cpp, Ollama and LM Studio queue it instead, so a turn sent while a background
summary runs waits for the whole summary. Either way the person loses.

`SlotScheduler` keeps one server's order: a turn always goes first. A background request
(a summary prepared while the person reads, a title) waits while a turn on the server
runs; when a turn starts while one is being written, the background request is closed
(the server stops working on it) and written again from the start once the turn is over.
Its answer is handed to its caller only whole, so a restart is invisible to it: the
summary is late, never cut.

Which requests are turns is told by the chat service (`turn_started`): the tasks that
run a turn. A summary written inside a turn (a fold at the gate, the Fold button) is
sent from a task of its own but marked with the turn's (`worker_loop.calling_task`), so
it is the turn's own request and is never held back behind itself. A background request
waits while a turn streams, and for a short grace after the turn started or finished a
call (it is about to call again); past the grace it goes, so a turn that waits for a
summary being prepared (a fold at the hard threshold) is never stuck behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from foldline.providers.base import ProviderEvent


@dataclass
class SlotScheduler:
    """The turns and background requests of one local server (see the module text)."""

    single: bool = True
    """The server runs one request at a time (or cuts one off for the next). With more
    slots nothing waits: a summary gets a slot of its own."""
    grace: float = 5.0
    """Seconds a background request still holds back after a turn's last sign of life
    (its start, or the end of one of its model calls) while the turn is not streaming:
    the turn is about to call the model again, or it is waiting for this very summary
    (a fold at the hard threshold), which must then go ahead."""
    turns: set[asyncio.Task[object]] = field(default_factory=set)
    streaming: int = 0
    """Model calls of turns running on the server now."""
    restarts: int = 0
    """Background requests closed for a turn and written again (for tests and logs)."""
    free_seconds: float | None = None
    """How long the server stayed free between one turn's end and the next turn's start,
    a moving average (None: not seen yet): the time a background summary has."""
    background_seconds: float | None = None
    """How long a background request holds the server, from its start to its end, a
    moving average (None: none ran yet); one cut by a turn counts as at least twice
    the time it had."""
    clock: Callable[[], float] = time.monotonic
    """What the two timings above are measured with."""
    _free_since: float | None = None
    _background: set[asyncio.Event] = field(default_factory=set)
    _changed: asyncio.Event | None = None
    _last_turn: float = 0.0

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _touch(self) -> None:
        self._last_turn = asyncio.get_running_loop().time()
        self._event().set()

    def turn_started(self, task: asyncio.Task[object]) -> None:
        """A turn on this server began: no background request starts until it ends."""
        if not self.turns and self._free_since is not None:
            free = self.clock() - self._free_since
            self.free_seconds = _average(self.free_seconds, free)
        self._free_since = None
        self.turns.add(task)
        self._touch()
        task.add_done_callback(self.turn_ended)

    def turn_ended(self, task: asyncio.Task[object]) -> None:
        self.turns.discard(task)
        if not self.turns:
            self._free_since = self.clock()
        self._event().set()

    def is_turn(self, task: asyncio.Task[object] | None) -> bool:
        return task is not None and task in self.turns

    @contextlib.asynccontextmanager
    async def turn_call(self) -> AsyncIterator[None]:
        """A turn's model call: a background request being written gives the slot up."""
        self.streaming += 1
        if self.single:
            for preempt in self._background:
                preempt.set()
        try:
            yield
        finally:
            self.streaming -= 1
            self._touch()

    def _wait_needed(self) -> float | None:
        """None when a background request may go now, else how long to wait at most."""
        if not self.single:
            return None
        if self.streaming:
            return float("inf")
        if self.turns:
            left = self.grace - (asyncio.get_running_loop().time() - self._last_turn)
            return left if left > 0 else None
        return None

    async def _until_free(self) -> None:
        while (delay := self._wait_needed()) is not None:
            event = self._event()
            event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), None if delay == float("inf") else delay)

    async def background(
        self, stream: Callable[[], AsyncIterator[ProviderEvent]]
    ) -> list[ProviderEvent]:
        """Every event of a background request, run when no turn needs the server;
        restarted from the start when a turn's call takes the server in the middle."""
        while True:
            await self._until_free()
            started = self.clock()
            preempt = asyncio.Event()
            self._background.add(preempt)
            reader = asyncio.ensure_future(_collect(stream()))
            waiter = asyncio.ensure_future(preempt.wait())
            try:
                await asyncio.wait({reader, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                self._background.discard(preempt)
                waiter.cancel()
                if not reader.done():
                    # The turn goes first: closing the stream tells the server to stop.
                    reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await reader
            held = self.clock() - started
            if reader.cancelled():
                # Cut before its end, it needed more than it had: counted as twice that
                # (no worse than what was seen), so a summary always cut is still timed.
                self.background_seconds = max(self.background_seconds or 0.0, 2 * held)
                self.restarts += 1
                continue
            if reader.exception() is None:
                self.background_seconds = _average(self.background_seconds, held)
            return reader.result()


SLOT_ALPHA = 0.3
"""Weight of the newest observation in the slot's moving averages."""


def _average(previous: float | None, sample: float) -> float:
    return sample if previous is None else previous + SLOT_ALPHA * (sample - previous)


async def _collect(stream: AsyncIterator[ProviderEvent]) -> list[ProviderEvent]:
    events: list[ProviderEvent] = []
    try:
        async for event in stream:
            events.append(event)
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    return events
