"""1,000 pages watching: how long one change takes to reach every open stream's read
(`ConversationWatch.changes_after`, in process, without HTTP).

    PYTHONPATH=backend python benchmarks/watch_bench.py
"""

from __future__ import annotations

import asyncio
import time

from foldline.chat.watching import ConversationWatch

STREAMS = 1000


async def main() -> None:
    watch = ConversationWatch()
    for n in range(1000):
        watch.changed(f"c{n}", "updated")
    delivered: list[int] = []

    async def stream() -> None:
        seen = watch.revision
        while True:
            changes = await watch.changes_after(seen)
            seen = changes[-1].revision
            delivered.append(1)

    tasks = [asyncio.create_task(stream()) for _ in range(STREAMS)]
    await asyncio.sleep(0.1)
    times = []
    for _ in range(20):
        delivered.clear()
        started = time.perf_counter()
        watch.changed("x", "updated")
        while len(delivered) < STREAMS:
            await asyncio.sleep(0)
        times.append(time.perf_counter() - started)
    times.sort()
    print(
        f"{STREAMS} streams: a change reaches all in median {times[10] * 1000:.1f} ms, "
        f"max {times[-1] * 1000:.1f} ms"
    )
    for task in tasks:
        task.cancel()


if __name__ == "__main__":
    asyncio.run(main())
