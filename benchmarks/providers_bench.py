"""Provider overhead: streamed events per second through the real SDKs, and discovery time.

Every text delta of an answer goes through the SDK's SSE parser, its pydantic event
models and Foldline's translation before the turn loop sees it. This measures that path
against a local server that sends a long answer as fast as loopback allows, so the number
is the client-side ceiling (a real model streams far slower). It also times
`discover_context_window` in its worst case (a vLLM server: every other kind of server is
asked first) and when nothing listens on the port.

Run: .venv/bin/python benchmarks/providers_bench.py [--deltas 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.providers.fake_http import (
    FakeHTTPServer,
    JSONReply,
    SSEReply,
    closed_port_url,
)
from tests.providers.wire_events import anthropic_text_reply, openai_text_reply

from foldline.core.messages import user
from foldline.providers.anthropic import AnthropicProvider
from foldline.providers.base import ModelRequest, Provider
from foldline.providers.compat import discover_context_window
from foldline.providers.openai import OpenAIProvider


async def consume(provider: Provider) -> int:
    request = ModelRequest(model="bench", system="", messages=[user("go")])
    count = 0
    async for _ in provider.stream(request):
        count += 1
    return count


async def timed(run: Callable[[], Awaitable[object]], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await run()
        times.append(time.perf_counter() - start)
    return times


async def main(deltas: int, repeat: int) -> None:
    server = FakeHTTPServer()
    server.start()
    pieces = [f"w{i} " for i in range(deltas)]
    anthropic = AnthropicProvider("anthropic", "key", server.url)
    openai = OpenAIProvider("openai", "key", f"{server.url}/v1")
    try:
        rows = []
        for name, provider, path, reply in (
            ("anthropic", anthropic, "/v1/messages", anthropic_text_reply(*pieces)),
            ("openai", openai, "/v1/chat/completions", openai_text_reply(*pieces, usage=(5, 5, 0))),
        ):
            server.script("POST", path, *[SSEReply(reply) for _ in range(repeat + 1)])
            await consume(provider)  # warm-up: imports, connection pool
            times = await timed(lambda p=provider: consume(p), repeat)
            median = statistics.median(times)
            rows.append((name, median, deltas / median, median / deltas * 1e6))

        listing = {"data": [{"id": "m", "max_model_len": 32768}]}
        server.script("GET", "/v1/models", *[JSONReply(200, listing) for _ in range(repeat)])
        vllm = await timed(lambda: discover_context_window(f"{server.url}/v1", "m"), repeat)
        refused_url = f"{closed_port_url()}/v1"
        refused = await timed(lambda: discover_context_window(refused_url, "m"), repeat)
    finally:
        await anthropic.aclose()
        await openai.aclose()
        server.stop()

    python = sys.version.split()[0]
    print(f"machine: {platform.machine()} {platform.processor()!r}, Python {python}")
    print(f"{deltas} text deltas per answer, median of {repeat}")
    print("| provider | answer time | deltas/s | per delta |")
    print("| --- | --- | --- | --- |")
    for name, median, rate, per in rows:
        print(f"| {name} | {median * 1000:.0f} ms | {rate:,.0f} | {per:.0f} µs |")
    print(f"discovery, vLLM (5 probes): {statistics.median(vllm) * 1000:.1f} ms")
    print(f"discovery, nothing listening: {statistics.median(refused) * 1000:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.deltas, arguments.repeat))
