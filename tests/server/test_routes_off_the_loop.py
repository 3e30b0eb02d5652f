"""The routes that start work read and write the store in worker threads, never on the loop.

One event loop serves every request and every turn's stream, and the store is
synchronous: a store call on the loop stalls them all for as long as SQLite takes. Here
the app's store raises on the event loop (`foldline.testing.loop_guard.LoopGuard`; the
test client runs the app on a loop of its own thread) while a retry, a regeneration, a
manual fold with instructions, its undo and redo, a branch switch, a hand-off, a Stop
and a delete go through the HTTP routes, their checks and answers included.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.testing.loop_guard import LoopGuard

WORDS = " ".join(f"word{n} of the storage review" for n in range(50))


def events_of(reply, parse_sse: Callable) -> list[str]:  # type: ignore[no-untyped-def]
    assert reply.status_code == 200, reply.text
    names = [event.name for event in parse_sse(reply.text)]
    assert names[-1] == "done" and "error" not in names, names
    return names


def test_the_routes_that_start_work_keep_the_store_off_the_loop(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch, parse_sse
) -> None:
    conversation_id = client.post("/api/conversations", json={}).json()["id"]
    for n in range(6):
        store.append_message(conversation_id, user(f"Question {n}: {WORDS}"))
        failed = n == 5
        store.append_message(
            conversation_id,
            assistant("" if failed else f"Answer {n}: {WORDS}"),
            status="error" if failed else "complete",
        )
    base = f"/api/conversations/{conversation_id}"
    guard = LoopGuard(store, monkeypatch.setattr)

    with guard.arming():
        events_of(client.post(f"{base}/retry"), parse_sse)
        retried = store.list_messages(conversation_id)[-1]
        events_of(client.post(f"{base}/messages/{retried.id}/regenerate"), parse_sse)
        assert store.list_messages(conversation_id)[-1].id != retried.id

        folded = client.post(f"{base}/compact", json={"instructions": "Keep every number."})
        assert "compaction.completed" in events_of(folded, parse_sse)
        version = store.current_compaction(conversation_id).version
        undone = client.post(f"{base}/compactions/{version}/undo")
        assert undone.status_code == 200, undone.text
        redone = client.post(f"{base}/compactions/{version}/redo")
        assert redone.status_code == 200, redone.text

        switched = client.put(f"{base}/active-leaf", json={"messageId": retried.id})
        assert switched.status_code == 200, switched.text
        assert store.list_messages(conversation_id)[-1].id == retried.id

        handed = client.post(
            f"{base}/handoff", json={"instructions": "Carry every number.", "keepLast": 2}
        )
        assert handed.status_code == 201, handed.text
        assert handed.json()["origin"]["conversationId"] == conversation_id

        stopped = client.post(f"{base}/cancel")
        assert stopped.json() == {"cancelled": False}
        assert client.delete(base).status_code == 204
        assert client.get(base).status_code == 404

    assert guard.on_loop == []


def test_an_unknown_conversation_is_still_a_404_for_every_start(client: TestClient) -> None:
    """The 404s now come from the checks in a worker thread, not a read on the loop."""
    base = "/api/conversations/no-such-conversation"
    for reply in (
        client.post(f"{base}/retry"),
        client.post(f"{base}/messages/m1/regenerate"),
        client.post(f"{base}/messages/m1/edit", json={"content": "again"}),
        client.post(f"{base}/compact", json={}),
        client.put(f"{base}/active-leaf", json={"messageId": "m1"}),
        client.post(f"{base}/handoff", json={}),
        client.post(f"{base}/cancel"),
        client.delete(base),
    ):
        assert reply.status_code == 404, (reply.request.url, reply.text)
