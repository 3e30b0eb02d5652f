"""`/api/models`: a fresh install with only a key offers the provider's current models,
through the real SDKs against the fake provider; refresh, fallbacks, retired models."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from foldline import secrets as key_store
from foldline.chat.service import ChatService
from foldline.providers.catalog import SUGGESTED_MODELS
from foldline.providers.listing import CACHE_FILE
from foldline.store import Store
from foldline.testing import SAMPLE_CLAUDE_MODELS, FakeModel, FakeProviderServer

from .conftest import AUTH, BASE_URL, build_app

KEY = "sk-ant-test-models-0123456789"
LISTED = list(SAMPLE_CLAUDE_MODELS)


pytestmark = pytest.mark.usefixtures("no_os_keyring")


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(listed=list(LISTED), api_key=KEY) as server:
        yield server


@pytest.fixture
def discovering(
    data_dir: Path, store: Store, chat_service: ChatService, frontend_dir: Path
) -> Iterator[TestClient]:
    app: FastAPI = build_app(data_dir, store, chat_service, frontend_dir, discover_models=True)
    with TestClient(app, base_url=BASE_URL, headers=AUTH) as client:
        yield client


def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def anthropic_status(body: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in body["providers"] if p["name"] == "anthropic")


def point_at(client: TestClient, url: str) -> None:
    saved = client.put("/api/settings", json={"providers": {"anthropic": {"baseUrl": url}}})
    assert saved.status_code == 200, saved.text


def test_a_new_key_brings_the_providers_current_models(
    discovering: TestClient, fake: FakeProviderServer, data_dir: Path
) -> None:
    point_at(discovering, fake.anthropic_url)
    before = discovering.get("/api/models").json()
    assert anthropic_status(before)["status"] == "no_key"
    assert not [m for m in before["models"] if m["provider"] == "anthropic"]

    assert discovering.put("/api/settings", json={"keys": {"anthropic": KEY}}).status_code == 200
    body = wait_for(
        lambda: (
            (b := discovering.get("/api/models").json())
            and anthropic_status(b)["status"] == "ok"
            and b
        )
    )
    offered = {m["id"]: m for m in body["models"] if m["provider"] == "anthropic"}
    assert set(offered) == {"claude-sonnet-5", "claude-sonnet-4-5-20250929"}
    sonnet = offered["claude-sonnet-5"]
    assert (sonnet["contextWindow"], sonnet["maxOutputTokens"], sonnet["limitSource"]) == (
        1_000_000,
        128_000,
        "provider",
    )
    assert (sonnet["workingBudget"], sonnet["workingBudgetSource"]) == (200_000, "default")
    assert offered["claude-sonnet-4-5-20250929"]["lifecycle"] == "deprecated"
    assert anthropic_status(body)["suggested"] == "claude-sonnet-5"
    assert (data_dir / CACHE_FILE).exists()
    assert KEY not in (data_dir / CACHE_FILE).read_text()


def test_refresh_asks_again(discovering: TestClient, fake: FakeProviderServer) -> None:
    point_at(discovering, fake.anthropic_url)
    discovering.put("/api/settings", json={"keys": {"anthropic": KEY}})
    wait_for(lambda: anthropic_status(discovering.get("/api/models").json())["status"] == "ok")
    fake.listed = [*LISTED, FakeModel("claude-opus-5", 1_000_000, 128_000, line="opus")]
    refreshed = discovering.post("/api/models/refresh", json={"provider": "anthropic"})
    assert refreshed.status_code == 200, refreshed.text
    assert "claude-opus-5" in {m["id"] for m in refreshed.json()["models"]}
    assert discovering.post("/api/models/refresh", json={"provider": "nope"}).status_code == 404


def test_offline_the_catalog_is_offered_and_said_to_be_stale(discovering: TestClient) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    point_at(discovering, closed)
    discovering.put("/api/settings", json={"keys": {"anthropic": KEY}})
    body = discovering.post("/api/models/refresh").json()
    status = anthropic_status(body)
    assert (status["status"], status["source"]) == ("stale", "catalog")
    assert "may be stale" in status["message"]
    offered = {m["id"] for m in body["models"] if m["provider"] == "anthropic"}
    assert "claude-sonnet-5" in offered and "claude-3-5-sonnet" not in offered


def test_start_refreshes_stale_lists(
    data_dir: Path,
    store: Store,
    chat_service: ChatService,
    frontend_dir: Path,
    fake: FakeProviderServer,
) -> None:
    key_store.set_api_key(data_dir, "anthropic", KEY)
    config = (data_dir / "config.toml").read_text()
    (data_dir / "config.toml").write_text(
        config + f'\n[providers.anthropic]\nbase_url = "{fake.anthropic_url}"\n'
    )
    app = build_app(data_dir, store, chat_service, frontend_dir, discover_models=True)
    with TestClient(app, base_url=BASE_URL, headers=AUTH) as client:
        wait_for(lambda: anthropic_status(client.get("/api/models").json())["status"] == "ok")
    assert len(fake.listing_requests) == 1
    # A second start within the day reads the cache and asks nobody.
    app = build_app(data_dir, store, chat_service, frontend_dir, discover_models=True)
    with TestClient(app, base_url=BASE_URL, headers=AUTH) as client:
        assert anthropic_status(client.get("/api/models").json())["status"] == "ok"
    assert len(fake.listing_requests) == 1


def test_a_working_budget_is_set_per_model(client: TestClient, data_dir: Path) -> None:
    change = {"models": {"claude-sonnet-5": {"workingBudget": 500_000}}}
    saved = client.put("/api/settings", json=change)
    assert saved.status_code == 200, saved.text
    assert saved.json()["models"]["claude-sonnet-5"]["workingBudget"] == 500_000
    assert "working_budget = 500000" in (data_dir / "config.toml").read_text()
    bad = client.put("/api/settings", json={"models": {"x": {"workingBudget": 0}}})
    assert bad.status_code == 422

    conversation = client.post("/api/conversations", json={"model": "claude-sonnet-5"}).json()
    context = client.get(f"/api/conversations/{conversation['id']}/context?messages=false")
    assert context.status_code == 200, context.text
    numbers = context.json()
    assert (numbers["inputBudget"], numbers["workingBudget"]) == (500_000, 500_000)
    assert numbers["contextWindow"] == 1_000_000


def test_a_retired_model_says_so_and_names_a_replacement(client: TestClient) -> None:
    conversation = client.post("/api/conversations", json={"model": "claude-3-7-sonnet"}).json()
    context = client.get(f"/api/conversations/{conversation['id']}/context?messages=false").json()
    assert context["modelLifecycle"] == "retired"
    assert context["modelReplacement"] == SUGGESTED_MODELS["anthropic"]

    current = client.post("/api/conversations", json={"model": "claude-sonnet-5"}).json()
    context = client.get(f"/api/conversations/{current['id']}/context?messages=false").json()
    assert (context["modelLifecycle"], context["modelReplacement"]) == ("active", None)
