"""What `server_bench.py` puts into the server it measures: how late the event loop
wakes a short sleep (`LoopLagProbe`, read by the client at `LOOP_LAG_PATH`), and which
steps of the loop took over 20 ms (`record_slow_callbacks`). Benchmark only: the app as
shipped has neither."""

from __future__ import annotations

import asyncio
import atexit
import json
import time
from pathlib import Path
from typing import Any

LOOP_LAG_PATH = "/benchmark/loop-lag"
PROBE_INTERVAL = 0.005


class LoopLagProbe:
    """How late the server's event loop wakes a task that sleeps 5 ms: the wait that
    every stream and request on the loop sees while something blocks it.

    It wraps the app (benchmark only): `GET /benchmark/loop-lag` answers the lags
    measured since the last such request, in seconds, and starts afresh.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lags: list[float] = []
        self.task: asyncio.Task[None] | None = None

    async def measure(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(PROBE_INTERVAL)
            self.lags.append(time.perf_counter() - started - PROBE_INTERVAL)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.task is None and scope["type"] == "http":  # the server's loop is running
            self.task = asyncio.get_running_loop().create_task(self.measure())
        if scope["type"] == "http" and scope["path"] == LOOP_LAG_PATH:
            body = json.dumps(self.lags).encode()
            self.lags = []
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


SLOW_CALLBACK_SECONDS = 0.02


def record_slow_callbacks(path: Path) -> None:
    """Every step of the event loop that takes over 20 ms, with the coroutine it ran,
    written to `path` (slowest first) when the server exits: what held the loop.

    A step's time is wall time, so on a loaded machine it includes the OS descheduling
    the process; read it beside a quiet run.
    """
    import asyncio.events

    run = asyncio.events.Handle._run
    slow: list[tuple[float, str]] = []

    def describe(handle: asyncio.Handle) -> str:
        task = getattr(handle._callback, "__self__", None)
        if not isinstance(task, asyncio.Task):
            return repr(handle._callback)[:160]
        frames, awaited = [], task.get_coro()
        while awaited is not None:
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is not None:
                name = frame.f_code.co_filename.rsplit("site-packages/", 1)[-1]
                frames.append(f"{name}:{frame.f_lineno} {frame.f_code.co_name}")
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
        return " <- ".join(reversed(frames[-3:]))

    def timed(handle: asyncio.Handle) -> None:
        where = describe(handle)  # before the step: where the task resumes
        started = time.perf_counter()
        run(handle)
        took = time.perf_counter() - started
        if took > SLOW_CALLBACK_SECONDS:
            slow.append((took, where))

    def write() -> None:
        lines = [f"{took * 1000:8.1f} ms  {where}" for took, where in sorted(slow, reverse=True)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    atexit.register(write)
