"""Fixtures for the turn loop: a real store, a config with small test models, fakes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from foldline.chat.service import ChatService
from foldline.config import AppConfig, parse_config
from foldline.providers.base import Provider
from foldline.store import Store

CONFIG = """
[defaults]
model = "test-8k"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."test-8k"]
provider = "local"
context_window = 8192
max_output_tokens = 1024

[models."test-big"]
provider = "local"
context_window = 200000
max_output_tokens = 4096

[compaction]
keep_recent_tokens = 1500
tool_result_token_cap = 1200
"""


@pytest.fixture
def config() -> AppConfig:
    return parse_config(CONFIG)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "foldline.db")
    yield store
    store.close()


@pytest.fixture(autouse=True)
async def _close_session_services() -> AsyncIterator[None]:
    """Close the provider clients of services made by `fake_sessions.make_service` while
    the test's event loop still runs (else httpx complains at interpreter exit)."""
    yield
    from fake_sessions import SERVICES

    while SERVICES:
        await SERVICES.pop().shutdown()


async def _no_sleep(_seconds: float) -> None:
    return None


@pytest.fixture
def make_service(store: Store, config: AppConfig, tmp_path: Path) -> Callable[..., ChatService]:
    def build(provider: Provider, *, files: bool = False) -> ChatService:
        workspace = tmp_path / "workspace"
        workspace.mkdir(exist_ok=True)
        return ChatService(
            store,
            lambda: config,
            provider_factory=lambda _config, _model: provider,
            files_root=workspace if files else None,
            sleep=_no_sleep,
        )

    return build
