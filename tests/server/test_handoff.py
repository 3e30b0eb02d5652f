"""Hand-offs (`POST …/handoff`, "New conversation from here") over HTTP, through the real
`anthropic` and `openai` SDKs against the fake provider server.

The chat service here is built on the providers the config names (no provider factory
is injected), so every model call, summaries included, goes through an SDK.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, ScriptedModel, structured_summary

MODEL = {"anthropic": "claude-fake-32k", "openai": "gpt-fake-32k"}
WIRES = ["anthropic", "openai"]
FILLER = " ".join(f"Background sentence {n} about the storage layer." for n in range(60))


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    limits = ModelLimits(context_window=32768, max_output_tokens=2048)
    model = ScriptedModel(when_empty="echo", summaries=structured_summary)
    models = {MODEL["anthropic"]: limits, MODEL["openai"]: limits}
    with FakeProviderServer(model, models=models, api_key="k") as server:
        yield server


@pytest.fixture
def data_dir(tmp_path: Path, fake: FakeProviderServer) -> Path:
    # Overrides the conftest's: the providers are the fake server's two wires.
    path = tmp_path / "data"
    path.mkdir()
    (path / "config.toml").write_text(
        f"""
[defaults]
model = "{MODEL["anthropic"]}"

[providers.fake-anthropic]
kind = "anthropic"
base_url = "{fake.anthropic_url}"
api_key = "k"

[providers.fake-openai]
kind = "openai-compatible"
base_url = "{fake.openai_url}"
api_key = "k"

[models."{MODEL["anthropic"]}"]
provider = "fake-anthropic"
context_window = 32768
max_output_tokens = 2048

[models."{MODEL["openai"]}"]
provider = "fake-openai"
context_window = 32768
max_output_tokens = 2048

[compaction]
auto_title = false
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def chat_service(store: Store, data_dir: Path) -> ChatService:
    return ChatService(store, ConfigSource(data_dir))


def _conversation(client: TestClient, wire: str, turns: int) -> str:
    conversation = client.post("/api/conversations", json={"model": MODEL[wire]}).json()["id"]
    for turn in range(turns):
        reply = client.post(
            f"/api/conversations/{conversation}/messages",
            json={"content": f"Question {turn}: the port is 80{turn}.\n\n{FILLER}"},
        )
        assert reply.status_code == 200, reply.text
    return conversation


def _messages(client: TestClient, conversation: str) -> list[dict]:
    return client.get(f"/api/conversations/{conversation}/messages").json()["items"]


def _summaries(fake: FakeProviderServer) -> list:
    return [r for r in fake.requests if r.is_summary]


def _first_request_text(fake: FakeProviderServer) -> str:
    chat = [r for r in fake.requests if not r.is_summary and r.model_request is not None]
    request = chat[-1].model_request
    return "\n".join(message.text for message in request.messages)


@pytest.mark.parametrize("wire", WIRES)
def test_from_a_fold_line_the_fold_summary_is_reused(
    client: TestClient, fake: FakeProviderServer, wire: str
) -> None:
    old = _conversation(client, wire, 3)
    folded = client.post(f"/api/conversations/{old}/compact", json={})
    assert folded.status_code == 200, folded.text
    fold = client.get(f"/api/conversations/{old}").json()["compaction"]
    assert fold is not None
    boundary = _messages(client, old)[fold["apiStartIndex"] - 1]
    summaries_before = len(_summaries(fake))

    reply = client.post(
        f"/api/conversations/{old}/handoff", json={"messageId": boundary["id"], "keepLast": 0}
    )
    assert reply.status_code == 201, reply.text
    new = reply.json()
    assert len(_summaries(fake)) == summaries_before  # no model call: the fold's summary
    assert new["title"].endswith("(continued)")
    assert new["messageCount"] == 0
    assert new["origin"] == {
        "conversationId": old,
        "title": client.get(f"/api/conversations/{old}").json()["title"],
        "messageId": boundary["id"],
    }
    assert new["compaction"]["trigger"] == "handoff"
    assert new["compaction"]["summaryMessage"] == fold["summaryMessage"]
    assert new["compaction"]["apiStartIndex"] == 0
    assert new["model"] == MODEL[wire]

    undo = client.post(f"/api/conversations/{new['id']}/compactions/1/undo")
    assert undo.status_code == 400
    assert undo.json()["error"]["code"] == "handoff_fold"

    # Exported and imported, the new conversation keeps its starting summary.
    exported = client.get(f"/api/conversations/{new['id']}/export?format=json")
    assert exported.status_code == 200
    imported = client.post("/api/conversations/import", json=exported.json())
    assert imported.status_code == 201, imported.text
    copy = client.get(f"/api/conversations/{imported.json()['id']}").json()
    assert copy["compaction"]["trigger"] == "handoff"
    assert copy["compaction"]["summaryMessage"] == fold["summaryMessage"]

    links = client.get(f"/api/conversations/{old}").json()["handoffs"]
    assert [link["conversationId"] for link in links] == [new["id"]]

    # The new conversation's first request starts with the summary of the old one.
    sent = client.post(f"/api/conversations/{new['id']}/messages", json={"content": "Go on."})
    assert sent.status_code == 200, sent.text
    fake.assert_no_errors()
    text = _first_request_text(fake)
    assert "This conversation continues an earlier one" in text
    assert fold["summaryMessage"].splitlines()[0] in text
    # Besides the summary, only the person's own words of the old conversation ride along.
    words = re.search(r"<person-words>.*?</person-words>", text, re.S)
    assert words is not None and "Question 0" in words.group(0)
    assert "Question 0" not in text.replace(fold["summaryMessage"], "").replace(words.group(0), "")
    # The export carries them (the import above then keeps them).
    assert exported.json()["compactions"][0]["personWords"][0]["index"] == 0


@pytest.mark.parametrize("wire", WIRES)
def test_from_a_message_a_fresh_summary_with_instructions_and_kept_messages(
    client: TestClient, fake: FakeProviderServer, wire: str
) -> None:
    old = _conversation(client, wire, 3)
    history = _messages(client, old)
    for message in (history[0], history[3]):  # one to summarize, one to keep
        pinned = client.post(f"/api/conversations/{old}/messages/{message['id']}/pin")
        assert pinned.status_code == 200, pinned.text
    point = history[4]  # the last question (a user message: nothing follows it along)

    reply = client.post(
        f"/api/conversations/{old}/handoff",
        json={"messageId": point["id"], "keepLast": 2, "instructions": "Keep every port."},
    )
    assert reply.status_code == 201, reply.text
    new = reply.json()
    summaries = _summaries(fake)
    assert summaries, "a fresh summary is written"
    prompt = "\n".join(m.text for m in summaries[-1].model_request.messages)
    assert "Keep every port." in prompt
    assert "Question 1" in prompt and "Question 2" not in prompt

    kept = _messages(client, new["id"])
    assert [(m["index"], m["role"]) for m in kept] == [(0, "assistant"), (1, "user")]
    assert kept[1]["parts"] == point["parts"]
    assert kept[0]["id"] != history[3]["id"]  # copies, with ids of their own
    summary = new["compaction"]["summaryMessage"]
    assert "Question 0: the port is 800." in summary  # the pin rides verbatim
    assert [(pin["index"], pin["role"]) for pin in new["pins"]] == [(0, "assistant")]
    assert new["origin"]["messageId"] == point["id"]

    sent = client.post(f"/api/conversations/{new['id']}/messages", json={"content": "More."})
    assert sent.status_code == 200, sent.text
    fake.assert_no_errors()
    text = _first_request_text(fake)
    assert "Question 2: the port is 802." in text  # the kept question, verbatim
    assert "Question 2" not in summary


def test_handoff_errors_are_clear_and_create_nothing(
    client: TestClient, fake: FakeProviderServer
) -> None:
    empty = client.post("/api/conversations", json={"model": MODEL["openai"]}).json()["id"]
    reply = client.post(f"/api/conversations/{empty}/handoff", json={})
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "nothing_to_hand_off"

    old = _conversation(client, "openai", 2)
    other = _conversation(client, "openai", 1)
    foreign = _messages(client, other)[0]["id"]
    reply = client.post(f"/api/conversations/{old}/handoff", json={"messageId": foreign})
    assert reply.status_code == 404
    assert client.post("/api/conversations/missing/handoff", json={}).status_code == 404
    bad = client.post(f"/api/conversations/{old}/handoff", json={"keepLast": -1})
    assert bad.status_code == 422

    count = len(client.get("/api/conversations").json()["items"])
    fake.fail_next("server_error", times=20, on="summary")
    reply = client.post(f"/api/conversations/{old}/handoff", json={"instructions": "x"})
    assert reply.status_code == 502
    assert reply.json()["error"]["code"] == "summary_failed"
    assert len(client.get("/api/conversations").json()["items"]) == count
    fake.reset()

    # Deleting the origin leaves the new conversation whole, without its link.
    made = client.post(f"/api/conversations/{old}/handoff", json={"keepLast": 1})
    assert made.status_code == 201, made.text
    assert client.delete(f"/api/conversations/{old}").status_code == 204
    orphan = client.get(f"/api/conversations/{made.json()['id']}").json()
    assert orphan["origin"] is None
    assert orphan["compaction"]["trigger"] == "handoff"
