"""Hand-offs of long conversations and hand-offs racing other work, over the real SDKs
against the fake provider server (which refuses a request larger than a model's window,
as the real APIs do)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, ScriptedModel, structured_summary

BIG, SMALL = "gpt-fake-128k", "gpt-fake-16k"
FILLER = " ".join(f"Background sentence {n} about the storage layer." for n in range(60))


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(when_empty="echo", summaries=structured_summary)
    models = {
        BIG: ModelLimits(context_window=131072, max_output_tokens=2048),
        SMALL: ModelLimits(context_window=16384, max_output_tokens=2048),
    }
    with FakeProviderServer(model, models=models, api_key="k") as server:
        yield server


@pytest.fixture
def data_dir(tmp_path: Path, fake: FakeProviderServer) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "config.toml").write_text(
        f"""
[defaults]
model = "{BIG}"

[providers.fake-openai]
kind = "openai-compatible"
base_url = "{fake.openai_url}"
api_key = "k"

[models."{BIG}"]
provider = "fake-openai"
context_window = 131072
max_output_tokens = 2048

[models."{SMALL}"]
provider = "fake-openai"
context_window = 16384
max_output_tokens = 2048

[compaction]
auto_title = false
model = "{SMALL}"
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def chat_service(store: Store, data_dir: Path) -> ChatService:
    return ChatService(store, ConfigSource(data_dir))


def _long_conversation(client: TestClient, turns: int) -> str:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    for turn in range(turns):
        reply = client.post(
            f"/api/conversations/{conversation}/messages",
            json={"content": f"Question {turn}: the port is 80{turn}.\n\n{FILLER}"},
        )
        assert reply.status_code == 200 and "event: error" not in reply.text, reply.text
    return conversation


def test_a_long_never_folded_conversation_hands_off_through_a_smaller_summarizer(
    client: TestClient, fake: FakeProviderServer
) -> None:
    # About 20k tokens, never folded on the 128k model; the summarizer reads 16k.
    conversation = _long_conversation(client, 30)
    assert client.get(f"/api/conversations/{conversation}").json()["compaction"] is None
    made = client.post(f"/api/conversations/{conversation}/handoff", json={"keepLast": 2})
    assert made.status_code == 201, made.text
    # The summarizer's window is known: the summary was written in parts that fit it,
    # and none of its requests was refused.
    statuses = [r.status for r in fake.requests if r.is_summary]
    assert statuses.count(200) >= 3 and 400 not in statuses, statuses
    new = made.json()
    assert new["compaction"]["trigger"] == "handoff"
    assert new["messageCount"] == 2
