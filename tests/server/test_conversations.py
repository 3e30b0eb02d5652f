"""Conversations: create, list and search, read, patch, delete; bad input writes nothing."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import user
from foldline.core.settings import CompactionSettings
from foldline.store import Store


def test_create_read_and_list(client: TestClient) -> None:
    created = client.post(
        "/api/conversations",
        json={"title": "Trip", "model": "fake-model", "systemPrompt": "Be brief."},
    )
    assert created.status_code == 201
    body = created.json()
    assert body["title"] == "Trip"
    assert body["model"] == "fake-model"
    assert body["systemPrompt"] == "Be brief."
    assert body["messageCount"] == 0
    assert body["compaction"] is None
    assert set(body) >= {"id", "createdAt", "updatedAt", "settings"}

    read = client.get(f"/api/conversations/{body['id']}")
    assert read.status_code == 200
    assert read.json() == body

    listed = client.get("/api/conversations").json()
    assert listed["total"] == 1
    assert [item["id"] for item in listed["items"]] == [body["id"]]


def test_create_without_a_body_uses_defaults(client: TestClient) -> None:
    created = client.post("/api/conversations")
    assert created.status_code == 201
    assert created.json()["title"] == "New conversation"
    assert created.json()["model"] is None


def test_list_is_newest_first_and_searchable(client: TestClient, store: Store) -> None:
    first = client.post("/api/conversations", json={"title": "first"}).json()
    second = client.post("/api/conversations", json={"title": "second"}).json()
    store.append_message(first["id"], user("the zebra crossing"))  # now first is newest
    ids = [item["id"] for item in client.get("/api/conversations").json()["items"]]
    assert ids == [first["id"], second["id"]]
    found = client.get("/api/conversations", params={"q": "zebra"}).json()
    assert [item["id"] for item in found["items"]] == [first["id"]]
    assert client.get("/api/conversations", params={"q": "unicorn"}).json()["total"] == 0


def test_patch_changes_only_what_is_given(client: TestClient) -> None:
    created = client.post("/api/conversations", json={"title": "old", "model": "m1"}).json()
    patched = client.patch(f"/api/conversations/{created['id']}", json={"title": "new"})
    assert patched.status_code == 200
    assert patched.json()["title"] == "new"
    assert patched.json()["model"] == "m1"
    settings = {"compaction": {"threshold": 0.7}}
    again = client.patch(f"/api/conversations/{created['id']}", json={"settings": settings})
    assert again.json()["settings"] == settings
    assert again.json()["title"] == "new"


def test_delete_removes_it(client: TestClient) -> None:
    created = client.post("/api/conversations", json={}).json()
    deleted = client.delete(f"/api/conversations/{created['id']}")
    assert deleted.status_code == 204
    assert deleted.content == b""
    missing = client.get(f"/api/conversations/{created['id']}")
    assert missing.status_code == 404
    assert client.delete(f"/api/conversations/{created['id']}").status_code == 404


def test_unknown_ids_answer_404_in_the_error_shape(client: TestClient) -> None:
    for method, path in [
        ("GET", "/api/conversations/nope"),
        ("PATCH", "/api/conversations/nope"),
        ("DELETE", "/api/conversations/nope"),
        ("GET", "/api/conversations/nope/messages"),
        ("GET", "/api/conversations/nope/context"),
        ("GET", "/api/conversations/nope/compactions"),
        ("GET", "/api/conversations/nope/compactions/preview"),
        ("POST", "/api/conversations/nope/compactions/1/undo"),
        ("GET", "/api/conversations/nope/export"),
        ("POST", "/api/conversations/nope/cancel"),
        ("POST", "/api/conversations/nope/messages"),
        ("POST", "/api/conversations/nope/compact"),
    ]:
        body = {"content": "hi"} if path.endswith("/messages") and method == "POST" else {}
        reply = client.request(method, path, json=body)
        assert reply.status_code == 404, (method, path, reply.text)
        error = reply.json()["error"]
        assert error["code"] == "not_found"
        assert error["message"]


def test_malformed_json_is_400_and_writes_nothing(client: TestClient) -> None:
    for payload in (b"{not json", b'{"title": "x"', b"\xff\xfe", b"[1, 2"):
        reply = client.post(
            "/api/conversations", content=payload, headers={"Content-Type": "application/json"}
        )
        assert reply.status_code == 400, payload
        assert reply.json()["error"]["code"] == "invalid_json"
    assert client.get("/api/conversations").json()["total"] == 0


def test_wrong_types_and_unknown_fields_are_422_and_write_nothing(client: TestClient) -> None:
    for body in (
        {"title": 5},
        {"title": ""},
        {"title": "x" * 501},
        {"model": ["list"]},
        {"systemPrompt": {"no": 1}},
        {"settings": "not an object"},
        {"titel": "typo"},
        ["a", "list"],
        "a string",
    ):
        reply = client.post("/api/conversations", json=body)
        assert reply.status_code == 422, body
        error = reply.json()["error"]
        assert error["code"] == "invalid_request"
        assert error["details"]
    assert client.get("/api/conversations").json()["total"] == 0


def test_patch_with_bad_input_changes_nothing(client: TestClient) -> None:
    created = client.post("/api/conversations", json={"title": "kept"}).json()
    reply = client.patch(f"/api/conversations/{created['id']}", json={"title": 1, "model": "m"})
    assert reply.status_code == 422
    after = client.get(f"/api/conversations/{created['id']}").json()
    assert after["title"] == "kept" and after["model"] is None


def test_bad_query_values_are_422(client: TestClient) -> None:
    assert client.get("/api/conversations", params={"limit": "many"}).status_code == 422
    assert client.get("/api/conversations", params={"limit": 0}).status_code == 422
    created = client.post("/api/conversations", json={}).json()
    path = f"/api/conversations/{created['id']}/messages"
    assert client.get(path, params={"offset": -1}).status_code == 422
    assert client.get(path, params={"limit": 501}).status_code == 422


def test_oversize_bodies_are_413_and_write_nothing(client: TestClient) -> None:
    huge_title = "x" * (1024 * 1024 + 10)
    reply = client.post("/api/conversations", json={"title": huge_title})
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == "payload_too_large"

    def chunks():  # no Content-Length: the limit still holds
        for _ in range(20):
            yield b"x" * 65536

    streamed = client.post(
        "/api/conversations", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    assert client.get("/api/conversations").json()["total"] == 0


def test_method_not_allowed_is_405_in_the_error_shape(client: TestClient) -> None:
    reply = client.put("/api/conversations")
    assert reply.status_code == 405
    assert reply.json()["error"]["code"] == "method_not_allowed"


def test_search_results_carry_the_newest_matching_message_and_a_snippet(client) -> None:
    from foldline.core.messages import assistant, user

    store = client.app.state.store
    conversation = client.post("/api/conversations", json={"title": "Animals"}).json()["id"]
    filler = "words before the match " * 20
    store.append_messages(
        conversation,
        [
            user("The zebra crossing, first mention"),
            assistant(filler + "and here the Zebra appears again, near the end of it all"),
            user("nothing here"),
        ],
    )
    titled = client.post("/api/conversations", json={"title": "Zebra facts"}).json()["id"]
    items = {item["id"]: item for item in client.get("/api/conversations?q=zebra").json()["items"]}
    hit = items[conversation]["searchHit"]
    assert hit["index"] == 1
    assert "Zebra appears again" in hit["snippet"]
    assert hit["snippet"].startswith("…")
    assert len(hit["snippet"]) <= 142
    # Matched by its title only: no message hit.
    assert items[titled]["searchHit"] is None
    assert client.get("/api/conversations").json()["items"][0]["searchHit"] is None


@pytest.mark.parametrize(
    ("settings", "knob"),
    [
        ({"compaction": {"treshold": 0.5}}, "settings.compaction.treshold: unknown setting"),
        ({"compaction": {"threshold": 7}}, "settings.compaction.threshold"),
        ({"compaction": {"threshold": "x"}}, "settings.compaction.threshold"),
        ({"compaction": {"keep_recent_tokens": -1}}, "settings.compaction.keep_recent_tokens"),
        ({"compaction": {"keep_recent_tokens": 2**64}}, "settings.compaction.keep_recent_tokens"),
        ({"compaction": {"strategy": "poetry"}}, "settings.compaction.strategy"),
        ({"compaction": []}, "settings.compaction"),
        ({"compaction": {"reasoning_effort": "huge"}}, "settings.compaction.reasoning_effort"),
        ({"reasoning": {"effort": "extreme"}}, "settings.reasoning.effort"),
        ({"reasoning": {"effort": "low", "budget": 5}}, "settings.reasoning.budget"),
        ({"reasoning": {}}, "settings.reasoning.effort"),
        ({"reasoning": "high"}, "settings.reasoning"),
    ],
)
def test_invalid_conversation_settings_are_refused_naming_the_knob(
    client: TestClient, settings: dict, knob: str
) -> None:
    created = client.post("/api/conversations", json={"settings": settings})
    assert created.status_code == 422
    assert knob in created.json()["error"]["message"]
    conversation = client.post("/api/conversations", json={}).json()["id"]
    patched = client.patch(f"/api/conversations/{conversation}", json={"settings": settings})
    assert patched.status_code == 422
    assert knob in patched.json()["error"]["message"]
    assert client.get(f"/api/conversations/{conversation}").json()["settings"] == {}


def test_a_conversation_with_invalid_stored_settings_still_opens_on_the_defaults(
    client: TestClient, store: Store
) -> None:
    """Settings saved by an older version that did not check them: everything still
    answers, the context says why the defaults are used, and a turn still runs."""
    conversation = store.create_conversation(
        title="old", settings={"compaction": {"treshold": 0.5, "keep_recent_tokens": -1}}
    ).id
    base = f"/api/conversations/{conversation}"
    assert client.get(base).status_code == 200
    context = client.get(f"{base}/context")
    assert context.status_code == 200
    assert "settings.compaction.keep_recent_tokens" in context.json()["settingsNotice"]
    assert context.json()["thresholds"]["soft"] == CompactionSettings().threshold
    assert client.get(f"{base}/compactions/preview").status_code == 200
    assert client.get(f"{base}/export").status_code == 200
    turn = client.post(f"{base}/messages", json={"content": "hello"})
    assert turn.status_code == 200
    assert "event: done" in turn.text and "internal" not in turn.text.lower()
    # Saving valid settings clears the notice.
    fixed = client.patch(base, json={"settings": {"compaction": {"threshold": 0.6}}})
    assert fixed.status_code == 200
    assert client.get(f"{base}/context").json()["settingsNotice"] is None


def test_the_reasoning_effort_is_set_per_conversation(client: TestClient) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    base = f"/api/conversations/{conversation}"
    settings = {"reasoning": {"effort": "low"}, "compaction": {"threshold": 0.7}}
    patched = client.patch(base, json={"settings": settings})
    assert patched.status_code == 200
    assert client.get(base).json()["settings"] == settings


def test_the_model_view_shows_reasoning_only_where_it_is_sent(
    client: TestClient, store: Store
) -> None:
    from foldline.core.messages import Message, ReasoningPart, TextPart, user

    conversation = store.create_conversation(title="thinking").id
    thought = ReasoningPart(text="old thought", signature="sig")
    store.append_messages(
        conversation,
        [
            user("Hi"),
            Message(role="assistant", parts=(thought, TextPart(text="Hello."))),
            user("Again"),
        ],
    )
    context = client.get(f"/api/conversations/{conversation}/context").json()
    kinds = [part["kind"] for m in context["apiMessages"] for part in m["parts"]]
    assert "reasoning" not in kinds  # a finished turn's thinking is not sent
    assert "text" in kinds
