"""What a long session costs: 100 turns on an 8k-window model, through the real SDKs.

Runs the same session as `tests/chat/test_sessions_e2e.py::test_hundred_turns...` against
`foldline.testing.FakeProviderServer` on both wire formats and reports the folds, the
summarizer calls, the input tokens sent (chat and summaries, as the fake provider
counted them) and the largest request. Rerun: `.venv/bin/python benchmarks/session_cost.py`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "chat"))

from test_sessions_e2e import (
    FACT,
    MODEL,
    fact_keeping_summary,
    filler,
    make_service,
)

from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel

TURNS = 100


async def session(wire: str) -> dict[str, float]:
    limits = ModelLimits(context_window=8192, max_output_tokens=1024)
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(0, 120)),
        summaries=fact_keeping_summary,
    )
    models = {MODEL["anthropic"]: limits, MODEL["openai"]: limits}
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeProviderServer(model, models=models, api_key="k") as server,
    ):
        store = Store(Path(tmp) / "db.sqlite")
        service = make_service(server, store, Path(tmp))
        conversation = store.create_conversation(model=MODEL[wire])
        started = time.perf_counter()
        folds = 0
        for turn in range(1, TURNS + 1):
            text = f"Turn {turn}. " + (FACT if turn == 1 else filler(turn, 80))
            async for event in (await service.start_turn(conversation.id, text)).events():
                folds += event.name == "compaction.completed"
        elapsed = time.perf_counter() - started
        await service.shutdown()
        store.close()
        chat = [r for r in server.requests if not r.is_summary and r.input_tokens]
        summaries = [r for r in server.requests if r.is_summary and r.input_tokens]
        return {
            "folds": folds,
            "summarizer calls": len(summaries),
            "chat input tokens": sum(r.input_tokens for r in chat),
            "summarizer input tokens": sum(r.input_tokens for r in summaries),
            "largest request": max(r.input_tokens for r in chat),
            "overflow errors": sum(1 for r in server.requests if r.status == 400),
            "seconds": round(elapsed, 1),
        }


def main() -> None:
    results = {wire: asyncio.run(session(wire)) for wire in ("anthropic", "openai")}
    keys = list(next(iter(results.values())))
    print("| metric | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{results[w][key]:,}" for w in results) + " |")


if __name__ == "__main__":
    main()
