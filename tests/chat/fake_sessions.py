"""Shared pieces of the end-to-end chat sessions: config for the fake server, text, runs.

The sessions run Foldline's real providers (and so the real `anthropic` and `openai`
SDKs) against `foldline.testing.FakeProviderServer`; `benchmarks/session_cost.py` reuses
them to measure what a long session costs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.config import AppConfig, parse_config
from foldline.providers.base import ModelRequest
from foldline.store import Store
from foldline.testing import (
    SUMMARY_HEADINGS,
    FakeProviderServer,
    ModelLimits,
    Reply,
    ScriptedModel,
    request_text,
)

WIRES = ["anthropic", "openai"]
MODEL = {"anthropic": "claude-fake-8k", "openai": "gpt-fake-8k"}
FACT = "The launch code is PINEAPPLE-42."


PROSE_TEXT = (
    "The quick review of the storage layer found that the migration keeps every column, "
    "while the search index needs its triggers restored after each table rewrite. "
    "We agreed to measure the gate on large histories and to write the numbers down."
)
PROSE = PROSE_TEXT.split(" ")


def filler(n: int, words: int) -> str:
    """English-like text (the calibration test needs realistic token statistics)."""
    return f"[{n}] " + " ".join(PROSE[(n + i) % len(PROSE)] for i in range(words))


SERVICES: list[ChatService] = []


"""Services made by `make_service`; the chat conftest shuts them down after each test."""


@contextmanager
def fake_server(model: ScriptedModel) -> Iterator[FakeProviderServer]:
    """The fake server, serving both models of MODEL with an 8k window."""
    limits = ModelLimits(context_window=8192, max_output_tokens=1024)
    with FakeProviderServer(
        model, models={MODEL["anthropic"]: limits, MODEL["openai"]: limits}, api_key="k"
    ) as fake:
        yield fake


def noting_model(summaries: Callable[[ModelRequest], str | Reply]) -> ScriptedModel:
    """A model that answers every turn with "Noted." and filler, and folds with SUMMARIES."""
    return ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(0, 120)), summaries=summaries
    )


def session_config(
    server: FakeProviderServer, more_toml: str = "", **compaction: object
) -> AppConfig:
    """Both models of MODEL on SERVER, the COMPACTION settings added, then MORE_TOML."""
    # Titles are made by a model call of their own, which would take scripted answers.
    compaction.setdefault("auto_title", False)
    extra = "".join(f"{key} = {value!r}\n" for key, value in compaction.items())
    extra = extra.replace("'", '"').replace("True", "true").replace("False", "false")
    return parse_config(f"""
[providers.fake-anthropic]
kind = "anthropic"
base_url = "{server.anthropic_url}"
api_key = "k"

[providers.fake-openai]
kind = "openai-compatible"
base_url = "{server.openai_url}"
api_key = "k"

[models."{MODEL["anthropic"]}"]
provider = "fake-anthropic"
context_window = 8192
max_output_tokens = 1024

[models."{MODEL["openai"]}"]
provider = "fake-openai"
context_window = 8192
max_output_tokens = 1024

[compaction]
keep_recent_tokens = 1500
tool_result_token_cap = 1500
{extra}{more_toml}""")


def make_service(
    server: FakeProviderServer, store: Store, tmp_path: Path, **compaction: object
) -> ChatService:
    config = session_config(server, **compaction)
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)

    async def no_sleep(_seconds: float) -> None:
        return None

    service = ChatService(store, lambda: config, files_root=workspace, sleep=no_sleep)
    SERVICES.append(service)
    return service


async def run(service: ChatService, conversation_id: str, text: str) -> list[ChatEvent]:
    handle = await service.start_turn(conversation_id, text)
    return [event async for event in handle.events()]


def fact_keeping_summary(request) -> str:
    """A faithful summarizer in miniature: the six sections, with every line that states
    the launch code carried over, from the folded messages or from the previous summary
    quoted in the prompt. It proves the stacking plumbing, not a model's skill."""
    text = request_text(request.messages)
    facts = sorted({line.strip() for line in text.splitlines() if "launch code" in line})
    sections = {heading: "- (none recorded)" for heading in SUMMARY_HEADINGS}
    sections["Constraints & Requirements"] = "\n".join(f"- {f}" for f in facts) or "- none"
    turns = [line.strip() for line in text.splitlines() if line.strip().startswith("Turn ")]
    # The narrative quotes the latest turn it read, so it is about its source (a summary
    # with nothing of its source in it is refused, as it should be).
    latest = f" The latest: {turns[-1][:160]}" if turns else ""
    sections["Session Narrative"] = "The person sent numbered turns of filler text." + latest
    return "\n\n".join(f"## {h}\n{body}" for h, body in sections.items())


def chat_requests(server: FakeProviderServer):
    return [r for r in server.requests if not r.is_summary and r.body is not None]
