"""A fold's own work in a worker thread, its model calls on the event loop.

The engine's fold (`foldline.core.compaction.fold` and `resummarize`) is a coroutine: it
awaits the summarizer between long stretches of pure work (counting every message of the
folded range, splitting it into chunks, checking the summary). After a message of a few
million characters those stretches take tens of seconds, and on the event loop they
froze every other conversation. Here the coroutine runs on an event loop of its own in a
worker thread; each summarizer call it makes is sent back to the app's loop (where the
provider's client lives) and awaited across. Cancelling the waiting task (Stop, a
shutdown) cancels the worker's coroutine too, and with it any summarizer call in flight.

Each summarizer call runs in a task of its own on the app's loop, so it is marked with
the task it is made for (`calling_task`): a local server's slot tells a turn's own
summary (a fold at the gate, which the turn waits for) from a background one by it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from foldline.core.compaction import Summarizer, SummaryRequest

T = TypeVar("T")

_CALLER: contextvars.ContextVar[asyncio.Task[Any] | None] = contextvars.ContextVar(
    "foldline_summary_caller", default=None
)


def calling_task() -> asyncio.Task[Any] | None:
    """The task a model call is made for: the one that ran `in_worker_loop` for a
    summarizer call sent back from the worker, else the current task."""
    return _CALLER.get() or asyncio.current_task()


async def in_worker_loop(
    work: Callable[[Summarizer], Coroutine[Any, Any, T]], summarize: Summarizer
) -> T:
    """`work(summarize)` run off the event loop, `summarize` still called on it."""
    main = asyncio.get_running_loop()
    caller = asyncio.current_task()
    started: concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[T]]] = (
        concurrent.futures.Future()
    )

    async def summarize_on_main(request: SummaryRequest) -> str:
        call = asyncio.run_coroutine_threadsafe(_call(summarize, request, caller), main)
        try:
            return await asyncio.wrap_future(call)
        except asyncio.CancelledError:
            call.cancel()
            raise

    def worker() -> T:
        async def body() -> T:
            task = asyncio.current_task()
            assert task is not None
            started.set_result((asyncio.get_running_loop(), task))  # type: ignore[arg-type]
            return await work(summarize_on_main)

        return asyncio.run(body())

    running = asyncio.ensure_future(asyncio.to_thread(worker))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        if started.done():
            loop, task = started.result()
            loop.call_soon_threadsafe(task.cancel)
        # What the cancelled work ends with is nobody's to read any more.
        running.add_done_callback(lambda done: done.cancelled() or done.exception())
        raise


async def _call(
    summarize: Summarizer, request: SummaryRequest, caller: asyncio.Task[Any] | None
) -> str:
    # This task's context is its own copy: the mark stays with this call.
    _CALLER.set(caller)
    return await summarize(request)
