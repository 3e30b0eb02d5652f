"""Edit, regenerate, switch branches and the edit preview over HTTP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import Store


def _messages(client: TestClient, conversation: str) -> list[dict]:
    reply = client.get(f"/api/conversations/{conversation}/messages")
    assert reply.status_code == 200, reply.text
    return reply.json()["items"]


def _text(message: dict) -> str:
    return "".join(part["text"] for part in message["parts"] if part["kind"] == "text")


def _conversation_with_two_turns(client: TestClient) -> str:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    for text in ("first question", "second question"):
        sent = client.post(f"/api/conversations/{conversation}/messages", json={"content": text})
        assert sent.status_code == 200, sent.text
    return conversation


def test_messages_carry_their_parent_and_siblings(client: TestClient) -> None:
    conversation = _conversation_with_two_turns(client)
    history = _messages(client, conversation)
    assert [m["parentId"] for m in history] == [None, *[m["id"] for m in history[:-1]]]
    assert all(m["siblingIds"] == [m["id"]] for m in history)
    body = client.get(f"/api/conversations/{conversation}").json()
    assert body["activeLeafId"] == history[-1]["id"]


def test_edit_switch_back_and_regenerate(client: TestClient, parse_sse) -> None:
    conversation = _conversation_with_two_turns(client)
    base = f"/api/conversations/{conversation}"
    old = _messages(client, conversation)

    preview = client.get(f"{base}/messages/{old[2]['id']}/edit-preview")
    assert preview.status_code == 200, preview.text
    assert set(preview.json()) == {
        "folded",
        "foldsKept",
        "foldsDropped",
        "viewTokens",
        "contextWindow",
    }
    assert preview.json()["folded"] is False

    edited = client.post(f"{base}/messages/{old[2]['id']}/edit", json={"content": "edited"})
    assert edited.status_code == 200, edited.text
    assert edited.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(edited.text)
    assert events[-1].name == "done"
    created = [e.data["message"] for e in events if e.name == "message.created"]
    assert [m["role"] for m in created] == ["user", "assistant"]
    assert created[0]["siblingIds"] == [old[2]["id"], created[0]["id"]]

    new = _messages(client, conversation)
    assert [_text(m) for m in new[:3]] == ["first question", _text(old[1]), "edited"]
    assert new[2]["siblingIds"] == [old[2]["id"], new[2]["id"]]
    assert client.get(base).json()["activeLeafId"] == new[-1]["id"]

    switched = client.put(f"{base}/active-leaf", json={"messageId": old[2]["id"]})
    assert switched.status_code == 200, switched.text
    assert switched.json()["activeLeafId"] == old[-1]["id"]
    assert switched.json()["messageCount"] == 4
    assert [m["id"] for m in _messages(client, conversation)] == [m["id"] for m in old]

    regenerated = client.post(f"{base}/messages/{old[3]['id']}/regenerate")
    assert regenerated.status_code == 200, regenerated.text
    created = [
        e.data["message"] for e in parse_sse(regenerated.text) if e.name == "message.created"
    ]
    assert [m["role"] for m in created] == ["assistant"]
    history = _messages(client, conversation)
    assert history[3]["siblingIds"] == [old[3]["id"], created[0]["id"]]
    assert [m["id"] for m in history[:3]] == [m["id"] for m in old[:3]]


def test_wrong_messages_are_refused_with_a_reason(client: TestClient) -> None:
    conversation = _conversation_with_two_turns(client)
    base = f"/api/conversations/{conversation}"
    old = _messages(client, conversation)

    answer_edit = client.post(f"{base}/messages/{old[1]['id']}/edit", json={"content": "x"})
    assert answer_edit.status_code == 400
    assert answer_edit.json()["error"]["code"] == "wrong_message"
    question_regen = client.post(f"{base}/messages/{old[0]['id']}/regenerate")
    assert question_regen.status_code == 400
    assert client.post(
        f"{base}/messages/{old[0]['id']}/edit", json={"content": ""}
    ).status_code in (
        400,
        422,
    )
    for reply in (
        client.post(f"{base}/messages/nope/edit", json={"content": "x"}),
        client.post(f"{base}/messages/nope/regenerate"),
        client.get(f"{base}/messages/nope/edit-preview"),
        client.put(f"{base}/active-leaf", json={"messageId": "nope"}),
        client.put("/api/conversations/nope/active-leaf", json={"messageId": old[0]["id"]}),
    ):
        assert reply.status_code == 404, reply.text

    # After an edit, the first version is off the active path: it cannot be edited
    # until the person switches back to it.
    client.post(f"{base}/messages/{old[2]['id']}/edit", json={"content": "edited"})
    off_path = client.post(f"{base}/messages/{old[2]['id']}/edit", json={"content": "again"})
    assert off_path.status_code == 400
    assert off_path.json()["error"]["code"] == "not_on_path"


def test_search_hits_say_which_branch_they_are_on(client: TestClient) -> None:
    conversation = _conversation_with_two_turns(client)
    base = f"/api/conversations/{conversation}"
    old = _messages(client, conversation)
    client.post(f"{base}/messages/{old[2]['id']}/edit", json={"content": "about a wombat"})
    found = client.get("/api/conversations", params={"q": "second question"}).json()["items"]
    assert [item["id"] for item in found] == [conversation]
    assert found[0]["searchHit"]["messageId"] == old[2]["id"]
    assert found[0]["searchHit"]["onActivePath"] is False
    here = client.get("/api/conversations", params={"q": "wombat"}).json()["items"]
    assert here[0]["searchHit"]["onActivePath"] is True


def test_the_fold_list_and_the_meter_follow_the_branch(client: TestClient, store: Store) -> None:
    conversation = _conversation_with_two_turns(client)
    base = f"/api/conversations/{conversation}"
    old = _messages(client, conversation)
    fold = CompactionState(
        version=1,
        compacted_at="2025-01-01T00:00:00Z",
        summary_message="the first exchange",
        api_start_index=2,
        summarized_range=SummarizedRange(from_index=0, to_index=2, message_count=2),
        strategy="structured",
        trigger="manual",
        tokens_before=100,
        tokens_after=10,
    )
    store.commit_fold(conversation, fold, expected_version=0)

    client.post(f"{base}/messages/{old[0]['id']}/edit", json={"content": "a new start"})
    # The fold of the old branch is not offered for Redo on the new one.
    assert client.get(f"{base}/compactions").json() == {
        "items": [],
        "currentVersion": 0,
        "redoVersion": None,
    }
    context = client.get(f"{base}/context").json()
    assert context["compaction"] is None and context["messagesInHistory"] == 2
    assert client.post(f"{base}/compactions/1/undo").status_code == 409

    client.put(f"{base}/active-leaf", json={"messageId": old[0]["id"]})
    folds = client.get(f"{base}/compactions").json()
    assert [(f["version"], f["isCurrent"]) for f in folds["items"]] == [(1, True)]
    context = client.get(f"{base}/context").json()
    assert context["compaction"]["version"] == 1 and context["messagesInHistory"] == 4
    assert client.post(f"{base}/compactions/1/undo").status_code == 200


def test_the_list_says_when_a_conversation_has_other_versions(client: TestClient) -> None:
    conversation = client.post("/api/conversations", json={"title": "Versions"}).json()["id"]
    base = f"/api/conversations/{conversation}"
    client.post(f"{base}/messages", json={"content": "first try"})
    client.post(f"{base}/messages", json={"content": "second"})
    listed = client.get("/api/conversations").json()["items"][0]
    assert (listed["messageCount"], listed["hasOtherVersions"]) == (4, False)
    first = client.get(f"{base}/messages").json()["items"][0]
    client.post(f"{base}/messages/{first['id']}/edit", json={"content": "a new start"})
    # The path is shorter now (2 messages), and the list says the others still exist.
    listed = client.get("/api/conversations").json()["items"][0]
    assert (listed["messageCount"], listed["hasOtherVersions"]) == (2, True)
