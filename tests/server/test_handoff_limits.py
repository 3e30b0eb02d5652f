"""Hand-offs and folds of long conversations through a `[compaction] model` with a
smaller window, and hand-offs racing other work, over the real SDKs against the fake
provider server (which refuses a request larger than a model's window, as the real APIs
do)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.core.messages import assistant, user
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, ScriptedModel, structured_summary

BIG, SMALL = "gpt-fake-128k", "gpt-fake-16k"
FILLER = " ".join(f"Background sentence {n} about the storage layer." for n in range(60))


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(when_empty="echo", summaries=structured_summary)
    models = {
        BIG: ModelLimits(context_window=131072, max_output_tokens=32768),
        SMALL: ModelLimits(context_window=16384, max_output_tokens=2048),
    }
    with FakeProviderServer(model, models=models, api_key="k") as server:
        yield server


@pytest.fixture
def small_window() -> int:
    """The window `config.toml` states for the summarizer, which really has 16k."""
    return 16384


@pytest.fixture
def big_output() -> int:
    """The conversation's model's output cap, which sizes a summary's."""
    return 2048


@pytest.fixture
def data_dir(tmp_path: Path, fake: FakeProviderServer, small_window: int, big_output: int) -> Path:
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
max_output_tokens = {big_output}

[models."{SMALL}"]
provider = "fake-openai"
context_window = {small_window}
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
    """A conversation of `turns` exchanges: all but the last written to the store as past
    turns would be, the last one a real turn.

    The turns themselves are not what these tests check (the session tests run turns), so
    writing them directly keeps each test to its fold or hand-off; the one real turn
    gives the token counts a provider's usage to calibrate against, as a conversation that
    has been talked in has.
    """
    conversation = client.post("/api/conversations", json={}).json()["id"]
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    questions = [f"Question {turn}: the port is 80{turn}.\n\n{FILLER}" for turn in range(turns)]
    past = [[user(question), assistant(f"echo: {question}")] for question in questions[:-1]]
    store.append_messages(conversation, [message for pair in past for message in pair])
    reply = client.post(
        f"/api/conversations/{conversation}/messages", json={"content": questions[-1]}
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


# A config can overstate a model's window (a local server loaded with a shorter context,
# say): only the provider's refusal then tells the real one.
@pytest.mark.parametrize("small_window", [16384, 65536], ids=["window-known", "overstated"])
def test_a_fold_through_a_smaller_summarizer_is_a_model_summary_not_a_digest(
    client: TestClient, fake: FakeProviderServer, small_window: int, parse_sse
) -> None:
    # About 20k tokens on the 128k model, more than the 16k summarizer reads at once.
    conversation = _long_conversation(client, 30)
    reply = client.post(f"/api/conversations/{conversation}/compact", json={})
    assert reply.status_code == 200, reply.text
    names = [event.name for event in parse_sse(reply.text)]
    assert "compaction.completed" in names, names

    fold = client.get(f"/api/conversations/{conversation}").json()["compaction"]
    assert fold is not None and fold["trigger"] == "manual"
    # Written by the summarizer in parts that fit its window, not the extractive digest
    # a failed summary falls back to.
    assert not fold["degraded"], fold["summaryMessage"][:300]
    assert fold["model"] == SMALL
    statuses = [r.status for r in fake.requests if r.is_summary]
    assert statuses.count(200) >= 3, statuses
    if small_window == 16384:
        # The window is known: every request was planned to fit, none was refused.
        assert 400 not in statuses, statuses
    else:
        # Only the refusal told the real window; the summary was then written again in
        # parts that fit it.
        assert statuses[0] == 400 and statuses[-1] == 200, statuses
    # The person's words survive the fold either way (the last exchange stays verbatim).
    kept = fold["summaryMessage"] + str(fold["carriedDetails"])
    assert "the port is 800." in kept and "the port is 8028." in kept


@pytest.mark.parametrize("big_output", [32768])
def test_a_summary_asks_no_more_than_the_smaller_summarizer_may_write(
    client: TestClient, fake: FakeProviderServer, parse_sse
) -> None:
    # The 128k model's budget sizes a summary at 8,000 tokens; the 16k summarizer writes
    # at most 2,048 in one answer, and the fake refuses a request asking for more.
    conversation = _long_conversation(client, 30)
    reply = client.post(f"/api/conversations/{conversation}/compact", json={})
    assert reply.status_code == 200, reply.text
    fold = client.get(f"/api/conversations/{conversation}").json()["compaction"]
    assert fold is not None and not fold["degraded"], fold
    summaries = [r for r in fake.requests if r.is_summary]
    assert summaries and all(r.status == 200 for r in summaries), [r.status for r in summaries]
