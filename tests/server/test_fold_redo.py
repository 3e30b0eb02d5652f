"""Redo of an undone fold: the stored summary comes back without a model call, only
while nothing was folded since and what it summarized is unchanged."""

from __future__ import annotations

from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store


def _folded(client: TestClient, store: Store) -> str:
    conversation = client.post(
        "/api/conversations", json={"settings": {"compaction": {"keep_recent_tokens": 0}}}
    ).json()["id"]
    # Answers long enough that folding them saves more than the summary and the recall
    # tools a folded conversation is offered take (a fold that saves nothing is refused).
    messages = []
    for i in range(6):
        messages += [user(f"question {i} " * 20), assistant(f"answer {i} " * 80)]
    store.append_messages(conversation, messages)
    reply = client.post(f"/api/conversations/{conversation}/compact", json=None)
    assert reply.status_code == 200, reply.text
    return conversation


def test_redo_brings_the_fold_back_without_a_model_call(
    client: TestClient, store: Store, model
) -> None:
    conversation = _folded(client, store)
    base = f"/api/conversations/{conversation}/compactions"
    folded_view = client.get(f"/api/conversations/{conversation}/context").json()
    assert client.get(base).json()["redoVersion"] is None
    assert client.post(f"{base}/1/undo").status_code == 200
    assert client.get(base).json()["redoVersion"] == 1
    calls = len(model.calls)

    # A message added after the fold does not touch what it summarized.
    store.append_messages(conversation, [user("later"), assistant("ok")])
    redone = client.post(f"{base}/1/redo")
    assert redone.status_code == 200, redone.text
    assert redone.json()["version"] == 1
    assert len(model.calls) == calls  # no summarizer call
    listed = client.get(base).json()
    assert listed["currentVersion"] == 1 and listed["redoVersion"] is None
    view = client.get(f"/api/conversations/{conversation}/context").json()
    assert view["compaction"]["apiStartIndex"] == folded_view["compaction"]["apiStartIndex"]
    # Not twice, and not a version that is current.
    again = client.post(f"{base}/1/redo")
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_redoable"
    assert client.post(f"{base}/9/redo").status_code == 404


def test_no_redo_once_the_summarized_history_changed(
    client: TestClient, store: Store, parse_sse
) -> None:
    conversation = _folded(client, store)
    base = f"/api/conversations/{conversation}"
    assert client.post(f"{base}/compactions/1/undo").status_code == 200
    # An edit of a message the fold summarized puts another path in its place.
    first = client.get(f"{base}/messages").json()["items"][0]
    edited = client.post(f"{base}/messages/{first['id']}/edit", json={"content": "changed"})
    assert edited.status_code == 200, edited.text
    assert client.get(f"{base}/compactions").json()["redoVersion"] is None
    refused = client.post(f"{base}/compactions/1/redo")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "history_changed"
