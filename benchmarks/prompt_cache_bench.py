"""What the prompt cache earns, and whether a fold makes anyone wait.

    .venv/bin/python benchmarks/prompt_cache_bench.py            # both parts (~4 minutes)
    .venv/bin/python benchmarks/prompt_cache_bench.py --part cache
    .venv/bin/python benchmarks/prompt_cache_bench.py --part latency
    .venv/bin/python benchmarks/prompt_cache_bench.py --part cache --wire responses

Both parts run Foldline's chat service and real providers (so the real `anthropic` and
`openai` SDKs) against `foldline.testing.FakeProviderServer`, whose prompt-cache
simulation is as strict as the real APIs (block-level breakpoints, at most 4, a
1,024-token minimum, a 20-block look-back, a 5-minute lifetime).

1. **Cache**: 100 turns (≈110-token questions, ≈130-token answers) on each wire
   (Anthropic Messages, OpenAI Chat Completions, and OpenAI's Responses API with a
   reasoning model at the default effort, its reasoning streamed and handed back), on a
   200k window (no fold) and on an 8k window (a fold every ~9 turns). Reported: the share
   of chat input tokens read from the cache, the bill at cache prices against the same
   requests with caching off (every input token at the input price), and each fold's
   cache break: what the first request after a fold cost beyond the median request that
   did not follow a fold, plus what its summary cost. Prices (per million tokens):
   Anthropic-like 3 / 15 / 0.30 read / 3.75 write; OpenAI-like 1.25 / 10 / 0.125 read.
2. **Latency**: 40 turns on the 8k window with a summarizer that takes 2 s and a person
   who pauses 3 s between turns; the time from sending to the first answer token, for
   turns that folded and turns that did not.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "chat"))

from fake_sessions import filler
from test_prompt_cache_e2e import MODEL, make_service

from foldline.core.pricing import ModelPrices, call_cost
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    ModelLimits,
    RecordedRequest,
    Reply,
    ScriptedModel,
    structured_summary,
)

PRICES = {
    "anthropic": ModelPrices(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75),
    "openai": ModelPrices(input=1.25, output=10.0, cache_read=0.125, cache_write=1.25),
    "responses": ModelPrices(input=1.25, output=10.0, cache_read=0.125, cache_write=1.25),
}
WIRE_NAMES = ("anthropic", "openai", "responses")
"""`responses` is OpenAI's Responses API with a reasoning model at its default effort."""


def dollars(record: RecordedRequest, prices: ModelPrices, *, caching: bool = True) -> float:
    usage = record.usage
    assert usage is not None
    if not caching:
        return call_cost(
            prices, input_tokens=usage.total_input, output_tokens=usage.output_tokens
        ).total
    return call_cost(
        prices,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_creation_tokens=usage.cache_creation_tokens,
    ).total


async def cache_session(wire: str, window: int, turns: int = 100) -> dict[str, str]:
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(0, 120)),
        summaries=structured_summary,
    )
    limits = ModelLimits(context_window=window, max_output_tokens=1024)
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeProviderServer(model, default_limits=limits, api_key="k") as server,
    ):
        store = Store(Path(tmp) / "db.sqlite")
        service = make_service(server, store, window, PRICES)
        conversation = store.create_conversation(model=MODEL[wire])
        fold_turns: list[int] = []
        for turn in range(turns):
            text = f"Turn {turn}. " + filler(turn, 80)
            async for event in (await service.start_turn(conversation.id, text)).events():
                if event.name == "compaction.completed":
                    fold_turns.append(turn)
            await service.background.wait(conversation.id)
        await service.shutdown()
        store.close()
        records = [r for r in server.requests if r.status == 200 and r.usage is not None]
    prices = PRICES[wire]
    chat = [r for r in records if not r.is_summary]
    summaries = [r for r in records if r.is_summary]
    read = sum(r.usage.cache_read_tokens for r in chat)
    total_input = sum(r.usage.total_input for r in chat)
    bill = sum(dollars(r, prices) for r in records)
    bill_off = sum(dollars(r, prices, caching=False) for r in records)
    after_fold = {t for t in fold_turns}  # the chat request of a folding turn follows it
    chat_costs = [dollars(r, prices) for r in chat]
    plain = [c for i, c in enumerate(chat_costs) if i not in after_fold and i > 2]
    breaks = [chat_costs[i] - statistics.median(plain) for i in sorted(after_fold)]
    summary_costs = [dollars(r, prices) for r in summaries]
    return {
        "folds": str(len(fold_turns)),
        "chat input read from cache": f"{read / total_input:.1%}",
        "bill with caching": f"${bill:.4f}",
        "bill, caching off": f"${bill_off:.4f}",
        "caching saves": f"{1 - bill / bill_off:.0%}",
        "fold cache break (mean, per fold)": f"${statistics.mean(breaks):.4f}" if breaks else "—",
        "summary (mean, per fold)": f"${statistics.mean(summary_costs):.4f}"
        if summary_costs
        else "—",
    }


async def latency_session(wire: str, turns: int = 40, pause: float = 3.0) -> dict[str, str]:
    def slow_summary(request) -> Reply:  # type: ignore[no-untyped-def]
        text = structured_summary(request)
        return Reply(text=text, chunk_chars=len(text), delay=2.0)

    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(0, 120)),
        summaries=slow_summary,
    )
    limits = ModelLimits(context_window=8192, max_output_tokens=1024)
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeProviderServer(model, default_limits=limits, api_key="k") as server,
    ):
        store = Store(Path(tmp) / "db.sqlite")
        service = make_service(server, store, 8192, PRICES)
        conversation = store.create_conversation(model=MODEL[wire])
        folding: list[float] = []
        plain: list[float] = []
        waited = 0
        waiting_time = 0.0
        largest = 0
        for turn in range(turns):
            started = time.perf_counter()
            first: float | None = None
            folded = False
            waiting_since = 0.0
            async for event in (
                await service.start_turn(conversation.id, f"Turn {turn}. " + filler(turn, 80))
            ).events():
                if event.name == "assistant.delta" and first is None:
                    first = time.perf_counter() - started
                folded = folded or event.name == "compaction.completed"
                if event.name == "compaction.started" and event.data.get("waiting"):
                    waited += 1
                    waiting_since = time.perf_counter()
                if event.name == "compaction.completed" and waited and waiting_since:
                    waiting_time += time.perf_counter() - waiting_since
                    waiting_since = 0.0
                if event.name == "context.stats":
                    largest = max(largest, event.data["tokens"])
            assert first is not None
            if turn > 0:  # the first turn loads the SDK
                (folding if folded else plain).append(first)
            await asyncio.sleep(pause)  # the person reads and types
        await service.shutdown()
        store.close()
    return {
        "folding turns": str(len(folding)),
        "first token, folding turns (median)": f"{statistics.median(folding):.3f} s"
        if folding
        else "—",
        "first token, other turns (median)": f"{statistics.median(plain):.3f} s",
        "difference": f"{statistics.median(folding) - statistics.median(plain):+.3f} s"
        if folding
        else "—",
        "slowest folding turn": f"{max(folding):.3f} s" if folding else "—",
        "turns that waited for a summary": str(waited),
        "time spent waiting for summaries": f"{waiting_time:.2f} s",
        "largest view (share of the 7,168-token budget)": f"{largest:,} ({largest / 7168:.0%})",
        "first token, slowest turn": f"{max(folding + plain):.3f} s",
    }


def table(rows: dict[str, dict[str, str]]) -> str:
    columns = list(rows)
    keys = list(next(iter(rows.values())))
    lines = ["| metric | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(rows[c][key] for c in columns) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["cache", "latency", "all"], default="all")
    parser.add_argument(
        "--pauses",
        default="3",
        help="seconds the person pauses between turns in the latency part, comma-separated",
    )
    parser.add_argument("--wire", choices=[*WIRE_NAMES, "all"], default="all")
    args = parser.parse_args(argv)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    if args.part in ("cache", "all"):
        rows = {}
        for wire in WIRE_NAMES if args.wire == "all" else (args.wire,):
            rows[f"{wire}, 200k (no folds)"] = asyncio.run(cache_session(wire, 200_000))
            rows[f"{wire}, 8k (folds)"] = asyncio.run(cache_session(wire, 8192))
        print("\n" + table(rows))
    if args.part in ("latency", "all"):
        wires = WIRE_NAMES if args.wire == "all" else (args.wire,)
        rows = {
            f"{wire}, {pause:g} s pauses": asyncio.run(latency_session(wire, pause=pause))
            for pause in (float(p) for p in args.pauses.split(","))
            for wire in wires
        }
        print("\n" + table(rows))


if __name__ == "__main__":
    main()
