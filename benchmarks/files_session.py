"""A 60-turn conversation with files on a 16k-window model: counted vs billed tokens.

A 10-page PDF is attached to the first message and an image to every 5th turn; the
session runs through the real `openai` and `anthropic` SDKs against
`foldline.testing.FakeProviderServer`, which checks every image and document block as
strictly as the real APIs and bills them by the providers' published rules (its text
tokenizer differs from every local one, so the calibration is exercised). For every chat
request the script records what Foldline counted when it sent it (the calibrated count,
as the gate sees it) and what the server billed, and reports refusals (any 4xx) and the
per-request error.

Rerun: `PYTHONPATH=backend .venv/bin/python benchmarks/files_session.py`
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "chat"))

from fake_sessions import filler

from foldline.chat.service import ChatService
from foldline.config import AppConfig, parse_config
from foldline.core.attachments import AttachmentRefused
from foldline.providers.base import ModelRequest, ProviderEvent
from foldline.providers.registry import provider_for_model, resolve_model
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    ModelLimits,
    Reply,
    ScriptedModel,
    sample_files,
    structured_summary,
)
from foldline.uploads import IncomingFile

TURNS = 60
WINDOW = 16_384
MODEL = "vision-16k"
IMAGE_SIZES = [(1280, 720), (800, 600), (1920, 1080), (400, 300), (3000, 2000), (1024, 1024)]
SETUPS = {
    # OpenAI's own API: PDFs as `file` parts (text + a page image each) unless their page
    # images would take over half the input budget (this one's do: it goes as text).
    "openai": ("openai", "openai"),
    # An OpenAI-compatible server: images when the model is marked vision, the PDF's text.
    "openai-compatible": ("openai-compatible", "openai"),
    # Anthropic: image blocks (over 2000 px scaled down); the PDF as a document block
    # (text + a page image each) unless its page images would take over half the budget.
    "anthropic": ("anthropic", "anthropic"),
}


def pdf_pages() -> list[str]:
    return ["\n".join(filler(page * 7 + line, 14) for line in range(12)) for page in range(10)]


def config(server: FakeProviderServer, kind: str, wire: str) -> AppConfig:
    url = server.anthropic_url if wire == "anthropic" else server.openai_url
    return parse_config(f"""
[defaults]
model = "{MODEL}"

[providers.fake]
kind = "{kind}"
base_url = "{url}"
api_key = "k"

[models."{MODEL}"]
provider = "fake"
context_window = {WINDOW}
max_output_tokens = 2048
vision = true

[compaction]
auto_title = false
""")


class CountingProvider:
    """The real provider, recording what Foldline counts for each chat request it sends."""

    def __init__(self, inner: Any, counted: list[tuple[int, int]], count: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.wire = inner.wire
        self.counted = counted
        self.count = count

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if request.tools:  # a chat call (summaries are sent without tools)
            self.counted.append(self.count(request))
        async for event in self.inner.stream(request):
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()


async def session(setup: str) -> dict[str, Any]:
    kind, wire = SETUPS[setup]
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(3, 60)),
        summaries=structured_summary,
    )
    limits = ModelLimits(context_window=WINDOW, max_output_tokens=2048)
    counted: list[tuple[int, int]] = []
    refusals: list[str] = []
    with (
        FakeProviderServer(model, models={MODEL: limits}, api_key="k") as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        app_config = config(server, kind, wire)
        store = Store(Path(tmp) / "foldline.db")
        service: ChatService | None = None

        def count(request: ModelRequest) -> tuple[int, int]:
            """(the calibrated count from scratch, the count the gate uses: the last
            call's reported input plus the estimate of what was added since)."""
            assert service is not None
            resolved = resolve_model(app_config, MODEL)
            counter, _ratio = service.loader.counter(resolved, wire)
            scratch = counter.count_request(request.system, request.messages, request.tools)
            return scratch, service.load_context(conversation.id).tokens

        def factory(cfg: AppConfig, name: str) -> Any:
            return CountingProvider(provider_for_model(cfg, name), counted, count)

        service = ChatService(store, lambda: app_config, provider_factory=factory)
        conversation = store.create_conversation(model=MODEL)
        started = time.perf_counter()
        folds = 0
        pdf = sample_files.pdf(pdf_pages())
        for turn in range(1, TURNS + 1):
            files = []
            if turn == 1:
                files.append(IncomingFile("report.pdf", "application/pdf", sample_files.b64(pdf)))
            if turn % 5 == 0:
                width, height = IMAGE_SIZES[(turn // 5) % len(IMAGE_SIZES)]
                png = sample_files.png(width, height, rgb=(turn * 4 % 255, 90, 160))
                files.append(IncomingFile(f"shot-{turn}.png", "image/png", sample_files.b64(png)))
            text = f"Turn {turn}. " + filler(turn, 60)
            try:
                handle = await service.start_turn(conversation.id, text, files)
            except AttachmentRefused as refusal:
                refusals.append(f"turn {turn}: {refusal}")
                continue
            async for event in handle.events():
                folds += event.name == "compaction.completed"
                if event.name == "error":
                    refusals.append(f"turn {turn}: {event.data}")
        elapsed = time.perf_counter() - started
        await service.shutdown()
        store.close()
        chat = [r for r in server.requests if not r.is_summary and r.body is not None]
    billed = [r.input_tokens or 0 for r in chat if r.status == 200]
    if "-v" in sys.argv:
        for number, ((scratch, gate), b) in enumerate(zip(counted, billed, strict=False), 1):
            print(
                f"{setup} request {number}: billed {b:,}; counted {scratch:,} "
                f"({(scratch - b) / b:+.1%}), gate {gate:,} ({(gate - b) / b:+.1%})"
            )
    scratch_errors = [abs(c - b) / b for (c, _), b in zip(counted, billed, strict=False) if b]
    gate_errors = [abs(g - b) / b for (_, g), b in zip(counted, billed, strict=False) if b]
    return {
        "chat requests": len(chat),
        "refusals (4xx, or refused files)": len(refusals)
        + sum(1 for r in chat if r.status and r.status >= 400),
        "folds": folds,
        **error_rows("counted from scratch", scratch_errors),
        **error_rows("gate's count", gate_errors),
        "largest request (billed)": max(billed) if billed else 0,
        "seconds": round(elapsed, 1),
        "_refusals": refusals,
    }


def error_rows(label: str, errors: list[float]) -> dict[str, str]:
    """How far one kind of count is from the billed input, request by request."""
    if not errors:
        return {}
    return {
        f"{label}: within 5%": f"{sum(e <= 0.05 for e in errors)}/{len(errors)}",
        f"{label}: median error": f"{sorted(errors)[len(errors) // 2]:.1%}",
        f"{label}: largest error": f"{max(errors):.1%}",
        f"{label}: largest after the first": f"{max(errors[1:], default=0):.1%}",
    }


def main() -> None:
    chosen = [arg for arg in sys.argv[1:] if arg in SETUPS] or list(SETUPS)
    results = {setup: asyncio.run(session(setup)) for setup in chosen}
    keys = [key for key in next(iter(results.values())) if not key.startswith("_")]
    print("| metric | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for key in keys:
        row = [f"{v:,}" if isinstance(v := results[s][key], int) else str(v) for s in results]
        print(f"| {key} | " + " | ".join(row) + " |")
    for setup, result in results.items():
        for refusal in result["_refusals"]:
            print(f"{setup}: {refusal}")


if __name__ == "__main__":
    main()
