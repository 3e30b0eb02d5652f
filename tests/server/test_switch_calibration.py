"""Switching a conversation to another model: one count everywhere.

`GET …/context?model=` (what the switch dialog states), the meter after the switch and the
first turn's gate count the view with the same computation: the new model's tokenizer and
the calibration it gets before it has samples of its own (its provider's learned ratio,
else the highest learned anywhere and never under a cautious default). Over the real SDKs
against the fake provider server, which refuses a request over the model's window as the
real APIs do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.core.calibration import UNSAMPLED_RATIO, Calibration
from foldline.core.messages import assistant, user
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, ScriptedModel, structured_summary

from .conftest import CONFIG_TOML

OTHERS = """
[models."small-model"]
provider = "local"
context_window = 8000
max_output_tokens = 500

[providers.elsewhere]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."elsewhere-model"]
provider = "elsewhere"
context_window = 8000
max_output_tokens = 500
"""


def test_a_model_without_samples_counts_with_its_providers_else_an_upper_ratio(
    client: TestClient, store: Store, data_dir: Path
) -> None:
    (data_dir / "config.toml").write_text(CONFIG_TOML + OTHERS, encoding="utf-8")
    conversation = client.post("/api/conversations", json={"model": "fake-model"}).json()["id"]
    store.append_messages(
        conversation, [user("a question about parsers " * 40), assistant("an answer " * 40)]
    )
    base = f"/api/conversations/{conversation}/context"

    def tokens(model: str | None = None) -> int:
        params = {"messages": "false", **({"model": model} if model else {})}
        reply = client.get(base, params=params)
        assert reply.status_code == 200, reply.text
        return reply.json()["tokens"]

    store.set_calibration("local", "fake-model", Calibration(ratio=1.0, samples=1))
    raw = tokens()
    assert abs(tokens("small-model") - raw) <= raw * 0.02  # its provider's 1.0
    # Another provider has taught nothing: it errs high by the cautious default.
    assert abs(tokens("elsewhere-model") - raw * UNSAMPLED_RATIO) <= raw * 0.02
    # Nothing learned anywhere: every model does.
    store.set_calibration("local", "fake-model", Calibration())
    assert abs(tokens() - raw * UNSAMPLED_RATIO) <= raw * 0.02
    assert tokens("small-model") == tokens("elsewhere-model") == tokens()

    # The provider's answers showed a 1.5x larger input than the estimate: its other
    # model counts with that, and so does another provider's (higher than the default).
    store.set_calibration("local", "fake-model", Calibration(ratio=1.5, samples=6))
    calibrated = tokens()
    assert abs(tokens("small-model") - calibrated) <= calibrated * 0.02
    assert abs(tokens("elsewhere-model") - calibrated) <= calibrated * 0.02

    # The switch itself: the meter shows what `?model=` said, to the token.
    said = client.get(base, params={"model": "small-model"}).json()
    client.patch(f"/api/conversations/{conversation}", json={"model": "small-model"})
    switched = client.get(base).json()
    assert switched["inputBudget"] == said["inputBudget"] == 7500
    assert switched["tokens"] == said["tokens"]
    assert switched["model"] == said["model"] == "small-model"
    # Its own samples, once it has them, win.
    store.set_calibration("local", "small-model", Calibration(ratio=1.0, samples=1))
    assert abs(tokens() - raw) <= raw * 0.02


def test_counting_for_another_model_checks_its_input(client: TestClient) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    base = f"/api/conversations/{conversation}/context"
    assert client.get(base, params={"model": ""}).status_code == 422
    assert client.get(base, params={"model": "m" * 201}).status_code == 422
    assert client.get("/api/conversations/nope/context", params={"model": "x"}).status_code == 404


# --- over the real SDKs ---------------------------------------------------------------

WINDOWS = {
    "claude-big": ("fake-anthropic", ModelLimits(200_000, 4_000)),
    "claude-small": ("fake-anthropic", ModelLimits(8_000, 500)),
    "local-big": ("fake-compat", ModelLimits(200_000, 4_000)),
    "local-small": ("fake-compat", ModelLimits(8_000, 500)),
}
SENTENCES = (
    "We compared the parser's error recovery on the malformed inputs from last week.",
    "The release checklist still names the old staging host, which was retired in May.",
    "Ana prefers the smaller batch size because the nightly job must end before six.",
    "Every config key is documented twice, and the two descriptions disagree on defaults.",
    "The migration keeps the archived rows but drops the unused index on the audit table.",
)


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    script = ScriptedModel(when_empty="echo", summaries=structured_summary)
    models = {name: limits for name, (_provider, limits) in WINDOWS.items()}
    with FakeProviderServer(script, models=models) as server:
        yield server


@pytest.fixture
def data_dir(tmp_path: Path, fake: FakeProviderServer) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    tables = "".join(
        f'[models."{name}"]\nprovider = "{provider}"\n'
        f"context_window = {limits.context_window}\n"
        f"max_output_tokens = {limits.max_output_tokens}\n\n"
        for name, (provider, limits) in WINDOWS.items()
    )
    (path / "config.toml").write_text(
        f"{fake.providers_toml()}{tables}[compaction]\nauto_title = false\n", encoding="utf-8"
    )
    return path


@pytest.fixture
def chat_service(store: Store, data_dir: Path) -> ChatService:
    return ChatService(store, ConfigSource(data_dir))


@pytest.mark.parametrize(
    ("old", "new"),
    [("claude-big", "claude-small"), ("claude-big", "local-small"), ("local-big", "claude-small")],
)
def test_the_gate_folds_a_switched_view_by_the_count_the_dialog_stated(
    client: TestClient, fake: FakeProviderServer, parse_sse, old: str, new: str
) -> None:
    conversation = client.post("/api/conversations", json={"model": old}).json()["id"]
    base = f"/api/conversations/{conversation}"
    turn = 0
    while client.get(f"{base}/context", params={"messages": "false"}).json()["tokens"] < 8000:
        text = " ".join(SENTENCES[(turn + i) % len(SENTENCES)] for i in range(14))
        reply = client.post(f"{base}/messages", json={"content": f"Note {turn}: {text}"})
        assert "event: error" not in reply.text
        turn += 1
    said = client.get(f"{base}/context", params={"messages": "false", "model": new}).json()
    assert said["model"] == new and said["tokens"] > said["inputBudget"] == 7500
    client.patch(base, json={"model": new})
    assert client.get(f"{base}/context", params={"messages": "false"}).json() == said

    sent_before = len(fake.requests)
    reply = client.post(f"{base}/messages", json={"content": "What is still open?"})
    events = parse_sse(reply.text)
    started = next(e.data for e in events if e.name == "compaction.started")
    completed = next(e.data for e in events if e.name == "compaction.completed")
    assert started["trigger"] == completed["trigger"] == "auto"
    # The gate counted the view the dialog counted, plus the new question.
    assert 0 < completed["tokensBefore"] - said["tokens"] < 40
    after = fake.requests[sent_before:]
    assert [r.status for r in after] == [200] * len(after), "the provider refused a request"
    chats = [r for r in after if not r.is_summary]
    assert len(chats) == 1 and after.index(chats[0]) > 0  # folded, then sent once
    sent = chats[0]
    assert sent.model_request is not None and sent.input_tokens is not None
    assert sent.input_tokens + sent.model_request.max_output_tokens <= 8000
