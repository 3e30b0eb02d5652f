"""`POST …/retry`: the model runs again on the history as it is, with no new message.

The model here is the scripted fake (`foldline.testing.ScriptedModel`): each test says
exactly which answers it gives, in order, and `assert_complete` checks they were used.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from foldline.providers.base import ProviderError
from foldline.testing import Reply, ScriptedModel, error_step, request_text, text_step


@pytest.fixture
def model() -> ScriptedModel:
    # Overrides the conftest's `model`, so the chat service is built on this script.
    return ScriptedModel()


def _messages(client: TestClient, conversation: str) -> list[dict]:
    reply = client.get(f"/api/conversations/{conversation}/messages")
    assert reply.status_code == 200, reply.text
    return reply.json()["items"]


def _texts(message: dict) -> str:
    return "".join(part["text"] for part in message["parts"] if part["kind"] == "text")


def test_retry_after_an_error_answers_without_repeating_the_question(
    client: TestClient, model: ScriptedModel, parse_sse
) -> None:
    model.add(
        error_step(ProviderError("bad_request", "The model rejected the request.")),
        text_step("Recovered answer."),
    )
    conversation = client.post("/api/conversations", json={}).json()["id"]
    sent = client.post(f"/api/conversations/{conversation}/messages", json={"content": "Hi?"})
    assert sent.status_code == 200
    assert "error" in [event.name for event in parse_sse(sent.text)]
    assert [(m["role"], m["status"]) for m in _messages(client, conversation)] == [
        ("user", "complete"),
        ("assistant", "error"),
    ]

    retried = client.post(f"/api/conversations/{conversation}/retry")
    assert retried.status_code == 200, retried.text
    assert retried.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(retried.text)
    names = [event.name for event in events]
    assert names[-1] == "done"
    assert "error" not in names
    # No user message is created: the only new message is the assistant's answer.
    created = [e.data["message"] for e in events if e.name == "message.created"]
    assert [m["role"] for m in created] == ["assistant"]
    completed = next(e.data["message"] for e in events if e.name == "message.completed")
    assert completed["status"] == "complete"
    assert _texts(completed) == "Recovered answer."

    history = _messages(client, conversation)
    assert [(m["role"], m["status"]) for m in history] == [
        ("user", "complete"),
        ("assistant", "error"),
        ("assistant", "complete"),
    ]
    assert _texts(history[0]) == "Hi?"
    assert history[1]["error"] == "The model rejected the request."
    assert _texts(history[2]) == "Recovered answer."
    # The retried call saw the question once (the empty failed answer is left out).
    model.assert_complete()
    assert len(model.calls) == 2
    retried_call = model.calls[1].messages
    assert [m.role for m in retried_call] == ["user"]
    assert request_text(retried_call) == "Hi?"


def test_retry_is_refused_when_the_last_answer_is_complete(
    client: TestClient, model: ScriptedModel
) -> None:
    model.add(text_step("Fine."))
    conversation = client.post("/api/conversations", json={}).json()["id"]
    empty = client.post(f"/api/conversations/{conversation}/retry")
    assert empty.status_code == 400
    assert empty.json()["error"]["code"] == "chat_unavailable"

    client.post(f"/api/conversations/{conversation}/messages", json={"content": "Hi?"})
    refused = client.post(f"/api/conversations/{conversation}/retry")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "chat_unavailable"
    assert refused.headers["content-type"].startswith("application/json")
    # A refusal writes nothing and calls no model.
    assert len(_messages(client, conversation)) == 2
    assert len(model.calls) == 1


def test_retry_of_an_unknown_conversation_is_404(client: TestClient) -> None:
    reply = client.post("/api/conversations/c_missing/retry")
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "not_found"


def test_retry_after_a_cut_off_answer_continues_the_same_message(
    client: TestClient, model: ScriptedModel, parse_sse
) -> None:
    cut = ProviderError("unavailable", "The connection dropped.")
    model.add(Reply(text="Half an ans", error=cut), text_step("wer, finished."))
    conversation = client.post("/api/conversations", json={}).json()["id"]
    client.post(f"/api/conversations/{conversation}/messages", json={"content": "Hi?"})
    before = _messages(client, conversation)
    assert [(m["status"], m["continued"]) for m in before] == [
        ("complete", False),
        ("interrupted", False),
    ]

    retried = client.post(f"/api/conversations/{conversation}/retry")
    assert retried.status_code == 200, retried.text
    created = [e.data["message"] for e in parse_sse(retried.text) if e.name == "message.created"]
    assert [m["id"] for m in created] == [before[1]["id"]]

    after = _messages(client, conversation)
    assert len(after) == 2
    assert after[1]["id"] == before[1]["id"]
    assert (after[1]["status"], after[1]["continued"], after[1]["error"]) == (
        "complete",
        True,
        None,
    )
    assert _texts(after[1]) == "Half an answer, finished."
