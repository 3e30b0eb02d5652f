"""Temperature and the longest answer, per model (`[models."x"] temperature`,
`max_output_tokens`) and per conversation (`settings.generation`), as the provider
receives them over the real SDK from the fake server's records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, ScriptedModel

MODEL = "local-model"


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    limits = ModelLimits(context_window=32_000, max_output_tokens=4_000)
    with FakeProviderServer(ScriptedModel(when_empty="echo"), models={MODEL: limits}) as server:
        yield server


@pytest.fixture
def data_dir(tmp_path: Path, fake: FakeProviderServer) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "config.toml").write_text(
        f'[defaults]\nmodel = "{MODEL}"\n\n[providers.local]\nkind = "openai-compatible"\n'
        f'base_url = "{fake.openai_url}"\n\n[models."{MODEL}"]\nprovider = "local"\n'
        "context_window = 32000\nmax_output_tokens = 4000\ntemperature = 0.9\n\n"
        "[compaction]\nauto_title = false\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def chat_service(store: Store, data_dir: Path) -> ChatService:
    return ChatService(store, ConfigSource(data_dir))


def last_body(fake: FakeProviderServer) -> dict:
    body = fake.requests[-1].body
    assert body is not None
    return body


def test_the_models_temperature_then_the_conversations_own(
    client: TestClient, fake: FakeProviderServer
) -> None:
    made = client.post("/api/conversations", json={}).json()
    base = f"/api/conversations/{made['id']}"
    client.post(f"{base}/messages", json={"content": "hi"})
    body = last_body(fake)
    assert body["temperature"] == 0.9
    reserve = body.get("max_completion_tokens") or body.get("max_tokens")
    assert reserve and reserve > 200

    patched = client.patch(
        base, json={"settings": {"generation": {"temperature": 0.2, "maxOutputTokens": 200}}}
    )
    assert patched.status_code == 200, patched.text
    client.post(f"{base}/messages", json={"content": "again"})
    body = last_body(fake)
    assert body["temperature"] == 0.2
    assert (body.get("max_completion_tokens") or body.get("max_tokens")) == 200

    # Never more than the model's reserve: a larger number asks for the reserve.
    client.patch(base, json={"settings": {"generation": {"maxOutputTokens": 10_000_000}}})
    client.post(f"{base}/messages", json={"content": "third"})
    assert (
        last_body(fake).get("max_completion_tokens") or last_body(fake).get("max_tokens")
    ) == reserve


@pytest.mark.parametrize(
    "generation",
    [{"temperature": 3}, {"temperature": "hot"}, {"maxOutputTokens": 0}, {"topK": 4}, "warm"],
)
def test_a_bad_generation_setting_is_refused_by_name(client: TestClient, generation) -> None:
    made = client.post("/api/conversations", json={}).json()
    reply = client.patch(
        f"/api/conversations/{made['id']}", json={"settings": {"generation": generation}}
    )
    assert reply.status_code == 422
    assert "settings.generation" in reply.text


def test_the_models_temperature_is_a_setting(client: TestClient) -> None:
    models = client.get("/api/settings").json()["models"]
    assert models[MODEL]["temperature"] == 0.9
    saved = client.put("/api/settings", json={"models": {MODEL: {"temperature": 0.4}}})
    assert saved.status_code == 200, saved.text
    assert saved.json()["models"][MODEL]["temperature"] == 0.4
    refused = client.put("/api/settings", json={"models": {MODEL: {"temperature": 5}}})
    assert refused.status_code == 422
