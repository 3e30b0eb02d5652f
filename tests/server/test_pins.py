"""Pins over HTTP: pin and unpin, the cap, the list on the conversation, the model's
view after a fold, undo, and export/import."""

from __future__ import annotations

from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store


def _conversation(client: TestClient, store: Store, pairs: int = 6) -> tuple[str, list[str]]:
    conversation = client.post(
        "/api/conversations", json={"settings": {"compaction": {"keep_recent_tokens": 0}}}
    ).json()["id"]
    messages = []
    for i in range(pairs):
        messages += [user(f"question {i} " * 20), assistant(f"answer {i} " * 20)]
    records = store.append_messages(conversation, messages)
    return conversation, [record.id for record in records]


def _pin_url(conversation: str, message: str) -> str:
    return f"/api/conversations/{conversation}/messages/{message}/pin"


def test_pin_list_and_unpin(client: TestClient, store: Store) -> None:
    conversation, ids = _conversation(client, store)
    reply = client.post(_pin_url(conversation, ids[2]))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert [p["messageId"] for p in body["pins"]] == [ids[2]]
    assert body["pins"][0]["index"] == 2 and body["pins"][0]["role"] == "user"
    assert 0 < body["pinnedTokens"] <= body["capTokens"]
    pinned_at = body["pins"][0]["pinnedAt"]

    # Pinning again keeps the first time; the conversation lists its pins in order.
    client.post(_pin_url(conversation, ids[5]))
    again = client.post(_pin_url(conversation, ids[2])).json()
    assert [p["index"] for p in again["pins"]] == [2, 5]
    assert again["pins"][0]["pinnedAt"] == pinned_at
    listed = client.get(f"/api/conversations/{conversation}").json()["pins"]
    assert [p["messageId"] for p in listed] == [ids[2], ids[5]]

    gone = client.delete(_pin_url(conversation, ids[2]))
    assert gone.status_code == 200
    assert [p["index"] for p in gone.json()["pins"]] == [5]


def test_pin_of_an_unknown_or_foreign_message_is_404(client: TestClient, store: Store) -> None:
    conversation, _ids = _conversation(client, store)
    _other, other_ids = _conversation(client, store)
    assert client.post(_pin_url(conversation, other_ids[0])).status_code == 404
    assert client.post(_pin_url(conversation, "f" * 32)).status_code == 404
    assert client.post(_pin_url("0" * 32, other_ids[0])).status_code == 404


def test_a_pin_over_the_cap_is_refused_and_nothing_changes(
    client: TestClient, store: Store
) -> None:
    conversation, ids = _conversation(client, store)
    huge = store.append_message(conversation, user("word " * 8_000))
    reply = client.post(_pin_url(conversation, huge.id))
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["code"] == "pins_over_cap" and "Unpin another message" in error["message"]
    assert client.get(f"/api/conversations/{conversation}").json()["pins"] == []
    assert client.post(_pin_url(conversation, ids[0])).status_code == 200


def test_a_folded_pin_rides_after_the_summary_and_survives_undo(
    client: TestClient, store: Store, parse_sse
) -> None:
    # Ten exchanges: the fold must save more than the summary's framing adds.
    conversation, ids = _conversation(client, store, pairs=10)
    client.post(_pin_url(conversation, ids[0]))
    reply = client.post(f"/api/conversations/{conversation}/compact")
    assert reply.status_code == 200
    completed = next(e for e in parse_sse(reply.text) if e.name == "compaction.completed").data
    assert completed["apiStartIndex"] > 0

    def first_text() -> str:
        view = client.get(f"/api/conversations/{conversation}/context").json()["apiMessages"]
        return view[0]["parts"][0]["text"]

    text = first_text()
    assert text.index("</summary>") < text.index("Pinned by the person")
    assert ("question 0 " * 20).strip() in text
    client.post(f"/api/conversations/{conversation}/compactions/{completed['version']}/undo")
    # No fold now: the pinned message is in the view itself, once.
    view = client.get(f"/api/conversations/{conversation}/context").json()["apiMessages"]
    assert sum(("question 0 " * 20).strip() in m["parts"][0]["text"] for m in view) == 1


def test_export_and_import_keep_pins(client: TestClient, store: Store) -> None:
    conversation, ids = _conversation(client, store)
    client.post(_pin_url(conversation, ids[3]))
    data = client.get(f"/api/conversations/{conversation}/export").json()
    assert [m["index"] for m in data["messages"] if m["pinnedAt"]] == [3]
    copy_id = client.post("/api/conversations/import", json=data).json()["id"]
    pins = client.get(f"/api/conversations/{copy_id}").json()["pins"]
    assert [p["index"] for p in pins] == [3]
    assert pins[0]["messageId"] != ids[3]
