"""Fixtures: a real store and chat service on a temporary data dir, with a fake model.

Helpers live here and reach the tests through fixtures (`model`, `parse_sse`), so the
test modules import nothing from each other whatever pytest's import mode is.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from foldline import secrets as key_store
from foldline.chat.service import ChatService
from foldline.providers.base import ModelRequest, ProviderEvent, Stop, TextDelta, Usage
from foldline.server.app import create_app
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import StructuredSummary

TOKEN = "test-token-0123456789abcdefghijklmnopqrstuv"
PORT = 8123
BASE_URL = f"http://127.0.0.1:{PORT}"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

CONFIG_TOML = """\
[defaults]
model = "fake-model"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."fake-model"]
provider = "local"
context_window = 32768
max_output_tokens = 1024

# A title is made by a model call of its own after the first exchange; tests that count
# the scripted model's calls would see it (tests/chat/test_titles.py covers titles).
[compaction]
auto_title = false
"""


SUMMARY = "\n\n".join(
    f"## {heading}\n- noted"
    for heading in (
        "Active Task",
        "Key Decisions & Rationale",
        "Files & Artifacts",
        "Constraints & Requirements",
        "Pending Items",
        "Session Narrative",
    )
)


SHORT_SUMMARY = StructuredSummary(head_chars=240, tail_chars=240)
"""The fake model's summarizer: the headings and a short head and tail of its source."""


@dataclass
class HoldableModel:
    """Streams `reply` in `chunks` deltas; after the first delta it waits for `release`
    while `hold` is set. Summary requests (no tools offered) get a structured summary of
    their own text."""

    reply: str = "Hello from the fake model."
    chunks: int = 3
    delay: float = 0.0
    name: str = "local"
    wire: Literal["anthropic", "openai"] = "openai"
    hold: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    first_delta_sent: threading.Event = field(default_factory=threading.Event)
    calls: list[ModelRequest] = field(default_factory=list)
    warmed: int = 0
    """How often `warm_up` built its resources."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.calls.append(request)
        # A summary built from what it was asked to summarize: the app judges every
        # summary against its source and refuses one with nothing of it.
        text = self.reply if request.tools else SHORT_SUMMARY(request)
        size = max(1, -(-len(text) // self.chunks))
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        yield Usage(input_tokens=100 + 10 * len(request.messages), output_tokens=len(pieces))
        for number, piece in enumerate(pieces):
            yield TextDelta(piece)
            if number == 0:
                self.first_delta_sent.set()
                while self.hold and not self.release.is_set():
                    await asyncio.sleep(0.01)
            if self.delay:
                await asyncio.sleep(self.delay)
        yield Stop("end_turn")

    def warm_up(self) -> None:
        self.warmed += 1

    async def aclose(self) -> None:
        return None


@dataclass(frozen=True)
class Event:
    name: str
    data: Any


def parse_events(body: str) -> list[Event]:
    """Blank-line separated blocks of `event:`/`data:` lines; `:` comments ignored."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        name, data_lines = "message", []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data_lines.append(value)
        if data_lines:
            events.append(Event(name, json.loads("\n".join(data_lines))))
    return events


@pytest.fixture
def no_os_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys go to the data dir's 0600 file, never into the keyring of whoever runs tests,
    and no provider key or address in the environment leaks into them."""
    monkeypatch.setattr(key_store, "_usable_keyring", lambda: (None, "no keyring in tests"))
    for variable in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "config.toml").write_text(CONFIG_TOML, encoding="utf-8")
    return path


@pytest.fixture
def store(data_dir: Path) -> Iterator[Store]:
    # A clock that ticks 1 ms per reading: "newest first" never depends on two writes
    # landing in different microseconds.
    start = datetime.now(UTC)
    ticks = itertools.count()
    opened = Store(
        data_dir / "foldline.db", clock=lambda: start + timedelta(milliseconds=next(ticks))
    )
    yield opened
    opened.close()


@pytest.fixture
def model() -> HoldableModel:
    return HoldableModel()


@pytest.fixture
def chat_service(store: Store, data_dir: Path, model: HoldableModel) -> ChatService:
    return ChatService(store, ConfigSource(data_dir), provider_factory=lambda config, name: model)


@pytest.fixture
def frontend_dir(tmp_path: Path) -> Path:
    path = tmp_path / "frontend"
    path.mkdir()
    (path / "index.html").write_text("<!doctype html><title>Foldline test UI</title>")
    (path / "app.js").write_text("export const ok = true;\n")
    return path


def build_app(
    data_dir: Path, store: Store, chat_service: ChatService, frontend_dir: Path, **options: object
) -> FastAPI:
    return create_app(
        data_dir=data_dir,
        token=TOKEN,
        store=store,
        chat_service=chat_service,
        frontend_dir=frontend_dir,
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture
def app(data_dir: Path, store: Store, chat_service: ChatService, frontend_dir: Path) -> FastAPI:
    return build_app(data_dir, store, chat_service, frontend_dir)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """Authenticated, addressed to 127.0.0.1:PORT like a real browser tab."""
    with TestClient(app, base_url=BASE_URL, headers=AUTH) as test_client:
        yield test_client


@pytest.fixture
def anonymous(app: FastAPI) -> Iterator[TestClient]:
    """Same server, no token."""
    with TestClient(app, base_url=BASE_URL) as test_client:
        yield test_client


@pytest.fixture
def parse_sse() -> Callable[[str], list[Event]]:
    return parse_events
