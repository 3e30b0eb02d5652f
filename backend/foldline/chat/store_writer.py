"""The turns' store writes, off the event loop and in the order they were asked for.

The store is synchronous and the event loop is shared by every request and stream, so a
turn's writes (the messages it appends, the flushes of a streamed answer, its usage rows,
its calibration, the folds and prunes it commits) run in one thread of their own. One
thread, not a pool, because the order is part of crash safety: a flush of a streamed
answer must never land after the write that finishes it, and with a single queue a write
always lands after every write asked for before it. It also means the turns never wait
on each other for SQLite's write lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from functools import partial
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class StoreWriter:
    """Runs store writes one at a time, first asked first done, in a worker thread."""

    def __init__(self) -> None:
        # The thread starts with the first write and ends with `close` (or when the
        # writer is garbage-collected, as a ThreadPoolExecutor's workers do).
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="foldline-store-writer"
        )

    def submit(
        self, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        """Queue `write` after every write queued before it, without waiting for it."""
        return self._executor.submit(partial(write, *args, **kwargs))

    async def run(self, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Queue `write` and wait for its result."""
        return await self.wait(self.submit(write, *args, **kwargs))

    async def settled(self) -> None:
        """Wait until every write queued before this call is done (those queued without
        waiting, such as a summary's calibration sample, included)."""
        await self.run(_nothing)

    @staticmethod
    async def wait(queued: concurrent.futures.Future[T]) -> T:
        """The result of a queued write. Cancelling the caller does not cancel the write
        (it may already be running, and one that has not started is still wanted: what
        the caller does on cancellation is queued after it and expects it done)."""
        return await asyncio.shield(asyncio.wrap_future(queued))

    def close(self) -> None:
        """Finish the queued writes and end the thread."""
        self._executor.shutdown(wait=True)


def _nothing() -> None:
    """A write that writes nothing: queued last, it is done once the earlier ones are."""
