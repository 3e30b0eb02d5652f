"""Settings: read, save, keys (never returned), connection test, local server detection."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from foldline import secrets as key_store
from foldline.core.messages import assistant, user
from foldline.core.settings import CompactionSettings
from foldline.providers.base import ProviderError
from foldline.server.local_servers import LocalServerTarget
from foldline.server.routes.settings import get_local_targets, get_provider_builder
from foldline.server.runner import RunningServer, bind_socket, start_server_in_thread
from foldline.store import Store

SECRET = "sk-ant-api03-VERYSECRETVALUE-0123456789abcdef"


pytestmark = pytest.mark.usefixtures("no_os_keyring")


def test_read_settings(client: TestClient) -> None:
    settings = client.get("/api/settings")
    assert settings.status_code == 200
    body = settings.json()
    assert body["defaults"]["model"] == "fake-model"
    local = body["providers"]["local"]
    assert local["kind"] == "openai-compatible"
    assert local["baseUrl"] == "http://127.0.0.1:9/v1"
    assert local["hasKey"] is False
    assert body["models"]["fake-model"]["contextWindow"] == 32768
    assert body["compaction"]["threshold"] == CompactionSettings().threshold
    assert body["keyStorage"]["backend"] == "file"
    assert body["keyStorage"]["warning"]


def test_save_settings_writes_config_toml(client: TestClient, data_dir: Path) -> None:
    change = {
        "defaults": {"model": "other-model"},
        "models": {"other-model": {"provider": "local", "contextWindow": 4096}},
        "compaction": {"threshold": 0.7, "keepRecentTokens": 1000, "prepareThreshold": 0.6},
    }
    saved = client.put("/api/settings", json=change)
    assert saved.status_code == 200, saved.text
    assert saved.json()["defaults"]["model"] == "other-model"
    assert saved.json()["compaction"]["keepRecentTokens"] == 1000
    assert saved.json()["compaction"]["prepareThreshold"] == 0.6
    assert client.get("/api/settings").json() == saved.json()
    text = (data_dir / "config.toml").read_text()
    assert 'model = "other-model"' in text
    assert "threshold = 0.7" in text


def test_keys_are_stored_but_never_returned(
    client: TestClient, data_dir: Path, store: Store
) -> None:
    saved = client.put("/api/settings", json={"keys": {"anthropic": SECRET}})
    assert saved.status_code == 200
    anthropic = saved.json()["providers"]["anthropic"]
    assert anthropic["hasKey"] is True
    assert anthropic["maskedKey"] == "sk-…cdef"
    assert SECRET not in saved.text
    secrets_file = key_store.secrets_path(data_dir)
    assert SECRET in secrets_file.read_text()
    assert os.stat(secrets_file).st_mode & 0o777 == 0o600
    assert SECRET not in (data_dir / "config.toml").read_text()

    conversation = client.post("/api/conversations", json={}).json()["id"]
    store.append_messages(conversation, [user("hi"), assistant("hello")])
    for path in (
        "/api/settings",
        "/api/conversations",
        f"/api/conversations/{conversation}",
        f"/api/conversations/{conversation}/messages",
        f"/api/conversations/{conversation}/context",
        f"/api/conversations/{conversation}/compactions",
        f"/api/conversations/{conversation}/export",
        f"/api/conversations/{conversation}/export?format=markdown",
    ):
        reply = client.get(path)
        assert reply.status_code == 200, path
        assert SECRET not in reply.text, path
        assert SECRET[8:-4] not in reply.text, path

    removed = client.put("/api/settings", json={"keys": {"anthropic": None}})
    assert removed.json()["providers"]["anthropic"]["hasKey"] is False
    assert not secrets_file.exists() or SECRET not in secrets_file.read_text()


def test_bad_settings_are_refused_and_write_nothing(client: TestClient, data_dir: Path) -> None:
    before = (data_dir / "config.toml").read_bytes()
    for change in (
        {"compaction": {"threshold": 5}},
        {"compaction": {"noSuchKnob": 1}},
        {"providers": {"local": {"apiKey": SECRET}}},
        {"providers": {"new": {"kind": "openai-compatible"}}},  # needs a base URL
        {"models": {"m": {"provider": "nobody"}}},
        {"unknownSection": {}},
        {"keys": {"nobody": "sk-123456789012345"}},
        {"keys": {"anthropic": "   "}},
        {"compaction": {"threshold": 0.5}, "keys": {"nobody": SECRET}},
        {"defaults": "x"},
        {"compaction": {"keepRecentTokens": 2**64}},
        {"models": {"m": {"contextWindow": 2**63}}},
        {"providers": {"local": {"baseUrl": "http://user:sk-secret-1234567890@host/v1"}}},
    ):
        reply = client.put("/api/settings", json=change)
        assert reply.status_code == 422, change
        assert reply.json()["error"]["code"] in ("invalid_settings", "invalid_request"), change
        assert SECRET not in reply.text
    assert (data_dir / "config.toml").read_bytes() == before
    assert not key_store.secrets_path(data_dir).exists()


def _override(app: FastAPI, dependency, value) -> None:  # type: ignore[no-untyped-def]
    app.dependency_overrides[dependency] = lambda: value


def test_connection_test_reports_success(app: FastAPI, client: TestClient, model) -> None:
    _override(app, get_provider_builder, lambda config, name: model)
    reply = client.post("/api/settings/test-connection", json={"provider": "local"})
    assert reply.status_code == 200
    body = reply.json()
    assert body["ok"] is True
    assert body["model"] == "fake-model"
    assert body["latencyMs"] >= 0
    assert model.calls and model.calls[0].model == "fake-model"


def test_connection_test_reports_provider_errors(app: FastAPI, client: TestClient) -> None:
    class Refusing:
        name, wire = "anthropic", "anthropic"

        async def stream(self, request):  # type: ignore[no-untyped-def]
            raise ProviderError("auth", "invalid x-api-key", status=401)
            yield  # pragma: no cover

    _override(app, get_provider_builder, lambda config, name: Refusing())
    reply = client.post(
        "/api/settings/test-connection", json={"provider": "anthropic", "model": "claude-x"}
    ).json()
    assert reply == {
        "ok": False,
        "provider": "anthropic",
        "model": "claude-x",
        "latencyMs": None,
        "errorCode": "auth",
        "message": "invalid x-api-key",
    }
    unknown = client.post("/api/settings/test-connection", json={"provider": "nobody"})
    assert unknown.status_code == 404


@pytest.fixture
def fake_ollama() -> Iterator[RunningServer]:
    async def tags(request):  # type: ignore[no-untyped-def]
        return JSONResponse({"models": [{"name": "llama3.2:3b"}, {"name": "qwen3:8b"}]})

    server = start_server_in_thread(Starlette(routes=[Route("/api/tags", tags)]))
    yield server
    server.stop()


def test_detect_local_servers(app: FastAPI, client: TestClient, fake_ollama) -> None:
    closed = bind_socket("127.0.0.1", 0)  # bound but never accepting: nothing answers there
    closed_port = closed.getsockname()[1]
    closed.close()
    targets = (
        LocalServerTarget("ollama", "Ollama", fake_ollama.url, "/api/tags"),
        LocalServerTarget("lmstudio", "LM Studio", f"http://127.0.0.1:{closed_port}", "/v1/models"),
    )
    _override(app, get_local_targets, targets)
    servers = client.get("/api/settings/detect-local").json()["servers"]
    assert servers == [
        {
            "name": "ollama",
            "label": "Ollama",
            "baseUrl": f"{fake_ollama.url}/v1",
            "available": True,
            "models": ["llama3.2:3b", "qwen3:8b"],
        },
        {
            "name": "lmstudio",
            "label": "LM Studio",
            "baseUrl": f"http://127.0.0.1:{closed_port}/v1",
            "available": False,
            "models": [],
        },
    ]
