"""How long parsing a large JSON body in a worker thread holds the event loop.

A message carrying a 16 MB file is 21 MB of JSON. The server parses such a body in a
worker thread, but a C call holds the GIL, and with it the loop, for its whole length.
This parses the body repeatedly in a worker thread, with `json.loads` and with
`json_slices.loads` (long strings decoded a slice at a time), while a task on the loop
sleeps 1 ms over and over; it prints each parse's median time and the loop's worst
lateness (what every other request and stream waited).

    PYTHONPATH=backend python benchmarks/body_parse_bench.py

Results go to docs/benchmarks.md, `## Hostile files`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from foldline.server import json_slices

BODY = json.dumps(
    {
        "content": "read this",
        "attachments": [
            {
                "name": "big.pdf",
                "mediaType": "application/pdf",
                "dataBase64": base64.b64encode(os.urandom(16_000_000)).decode(),
            }
        ],
    }
).encode()


async def measure(parse: Callable[[bytes], Any], rounds: int = 12) -> tuple[float, float, float]:
    """(median parse time, p99 and worst lateness of a 1 ms sleep on the loop), in ms."""
    lags: list[float] = []
    parsing = True

    async def probe() -> None:
        while parsing:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - started - 0.001)

    task = asyncio.create_task(probe())
    took = []
    for _ in range(rounds):
        started = time.perf_counter()
        await asyncio.to_thread(parse, BODY)
        took.append(time.perf_counter() - started)
        await asyncio.sleep(0.02)
    parsing = False
    await task
    lags.sort()
    p99 = lags[int(len(lags) * 0.99)]
    return statistics.median(took) * 1000, p99 * 1000, lags[-1] * 1000


def main() -> None:
    print(f"body {len(BODY) / 1e6:.1f} MB; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for name, parse in [("json.loads", json.loads), ("json_slices.loads", json_slices.loads)] * 2:
        median, p99, worst = asyncio.run(measure(parse))
        print(
            f"{name:18} parse median {median:4.0f} ms; loop late p99 {p99:5.1f} ms, "
            f"max {worst:5.1f} ms"
        )


if __name__ == "__main__":
    main()
