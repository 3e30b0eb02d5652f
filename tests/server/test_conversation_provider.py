"""A model id two providers offer: the conversation names which one serves it.

An OpenAI-compatible proxy may list Claude's ids beside Anthropic itself. The conversation
stores the provider it was given (`provider` with `model`), and every call of its turns,
its meter and a switch's count go to that provider, over the real SDKs against the fake
provider server (which records which wire each request came in on).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, ScriptedModel, structured_summary

SHARED = "claude-shared-1"


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    script = ScriptedModel(when_empty="echo", summaries=structured_summary)
    limits = ModelLimits(context_window=200_000, max_output_tokens=64_000)
    with FakeProviderServer(script, models={SHARED: limits}) as server:
        yield server


@pytest.fixture
def data_dir(tmp_path: Path, fake: FakeProviderServer) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    # No [models] table: by its family the id is Anthropic's unless a conversation says.
    (path / "config.toml").write_text(
        f'[providers.anthropic]\nbase_url = "{fake.anthropic_url}"\napi_key = "k"\n\n'
        f'[providers.fake-compat]\nkind = "openai-compatible"\nbase_url = "{fake.openai_url}"\n'
        'api_key = "k"\n\n[compaction]\nauto_title = false\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture
def chat_service(store: Store, data_dir: Path) -> ChatService:
    return ChatService(store, ConfigSource(data_dir))


def wires(fake: FakeProviderServer) -> list[str]:
    return [request.wire for request in fake.requests]


def test_each_conversation_is_served_by_the_provider_it_names(
    client: TestClient, fake: FakeProviderServer
) -> None:
    by_family = client.post("/api/conversations", json={"model": SHARED}).json()
    assert by_family["provider"] is None
    reply = client.post(f"/api/conversations/{by_family['id']}/messages", json={"content": "hi"})
    assert "event: error" not in reply.text
    assert wires(fake) == ["anthropic"]

    proxied = client.post(
        "/api/conversations", json={"model": SHARED, "provider": "fake-compat"}
    ).json()
    assert proxied["provider"] == "fake-compat"
    assert client.get(f"/api/conversations/{proxied['id']}").json()["provider"] == "fake-compat"
    reply = client.post(f"/api/conversations/{proxied['id']}/messages", json={"content": "hi"})
    assert "event: error" not in reply.text
    assert wires(fake) == ["anthropic", "openai"]
    # Its meter counts for the provider that serves it: a compatible server's tokens are
    # never exact, Anthropic's are an estimate too; the usage names the provider.
    calls = client.get(f"/api/conversations/{proxied['id']}/usage")
    if calls.status_code == 200:
        assert "fake-compat" in calls.text

    # Switching back to the family's provider: a model without a provider clears it.
    switched = client.patch(f"/api/conversations/{proxied['id']}", json={"model": SHARED}).json()
    assert switched["provider"] is None
    client.post(f"/api/conversations/{proxied['id']}/messages", json={"content": "again"})
    assert wires(fake)[-1] == "anthropic"

    # A rename leaves the provider alone.
    client.patch(
        f"/api/conversations/{proxied['id']}", json={"model": SHARED, "provider": "fake-compat"}
    )
    renamed = client.patch(f"/api/conversations/{proxied['id']}", json={"title": "Renamed"})
    assert renamed.json()["provider"] == "fake-compat"


def test_an_unknown_provider_or_one_without_a_model_is_refused(client: TestClient) -> None:
    unknown = client.post("/api/conversations", json={"model": SHARED, "provider": "nowhere"})
    assert unknown.status_code == 422 and "nowhere" in unknown.json()["error"]["message"]
    alone = client.post("/api/conversations", json={"provider": "fake-compat"})
    assert alone.status_code == 422
    made = client.post("/api/conversations", json={"model": SHARED}).json()
    patch = client.patch(f"/api/conversations/{made['id']}", json={"provider": "fake-compat"})
    assert patch.status_code == 422
    assert client.get(f"/api/conversations/{made['id']}").json()["provider"] is None


def test_a_switch_is_counted_on_the_provider_that_would_serve_it(client: TestClient) -> None:
    made = client.post("/api/conversations", json={"model": SHARED}).json()
    client.post(f"/api/conversations/{made['id']}/messages", json={"content": "hello " * 50})
    base = f"/api/conversations/{made['id']}/context"
    proxied = client.get(
        base, params={"messages": "false", "model": SHARED, "provider": "fake-compat"}
    ).json()
    direct = client.get(base, params={"messages": "false", "model": SHARED}).json()
    # Anthropic's wire and a compatible server's count the same view differently.
    assert proxied["tokens"] != direct["tokens"]
    # The switch's count is the meter's after the switch, on the same provider.
    client.patch(
        f"/api/conversations/{made['id']}", json={"model": SHARED, "provider": "fake-compat"}
    )
    assert client.get(base, params={"messages": "false"}).json()["tokens"] == proxied["tokens"]
