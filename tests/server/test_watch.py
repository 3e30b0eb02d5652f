"""The watch stream: an open page hears of every turn started in its conversation and of
every other change to it (a branch switch, a pin, a fold undone or brought back, a
rename, a hand-off, a deletion), from any page or client, numbered so the page can tell
whether what it shows is current; of changes to the list made elsewhere; and the stream
ends when the server stops instead of holding it up."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from foldline.chat import watching
from foldline.chat.watching import ConversationWatch
from foldline.core.messages import assistant, user
from foldline.server.announce import MUTATING, change_of
from foldline.server.runner import RunningServer, start_server_in_thread
from foldline.store import Store

from .conftest import AUTH

WAIT_SECONDS = 10.0


@pytest.fixture
def live(app: FastAPI) -> Iterator[RunningServer]:
    server = start_server_in_thread(app, "127.0.0.1", 0)
    yield server
    server.stop()


@pytest.fixture
def http(live: RunningServer) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=live.url, headers=AUTH, timeout=WAIT_SECONDS) as client:
        yield client


def events_of(lines: Iterator[str], count: int) -> list[str]:
    names = []
    for line in lines:
        if line.startswith("event: "):
            names.append(line.removeprefix("event: "))
            if len(names) == count:
                break
    return names


def test_turns_sent_by_another_client_are_announced_in_order(
    http: httpx2.Client, live: RunningServer
) -> None:
    conversation = http.post("/api/conversations", json={}).json()["id"]
    path = f"/api/conversations/{conversation}"
    with http.stream("GET", f"{path}/watch") as watch:
        lines = watch.iter_lines()
        # Two quick turns from another client, one after the other.
        for text in ("one", "two"):
            with httpx2.Client(base_url=live.url, headers=AUTH, timeout=WAIT_SECONDS) as other:
                assert "event: done" in other.post(f"{path}/messages", json={"content": text}).text
        assert events_of(lines, 5) == [
            "watch.opened",
            "turn.started",
            "turn.finished",
            "turn.started",
            "turn.finished",
        ]


def test_a_page_watching_during_a_turn_hears_of_it_at_once(http: httpx2.Client, model) -> None:
    model.hold = True
    conversation = http.post("/api/conversations", json={}).json()["id"]
    path = f"/api/conversations/{conversation}"
    with http.stream("POST", f"{path}/messages", json={"content": "held"}) as sender:
        sent = sender.iter_lines()
        for line in sent:
            if line == "event: assistant.delta":
                break
        with http.stream("GET", f"{path}/watch") as watch:
            lines = watch.iter_lines()
            assert events_of(lines, 2) == ["watch.opened", "turn.started"]
            model.release.set()
            assert events_of(lines, 1) == ["turn.finished"]
        list(sent)


def test_an_unknown_conversation_is_404(http: httpx2.Client) -> None:
    assert http.get("/api/conversations/nope/watch").status_code == 404


def test_stopping_the_server_ends_open_watch_streams(
    http: httpx2.Client, live: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    conversation = http.post("/api/conversations", json={}).json()["id"]
    ended = threading.Event()

    def read() -> None:
        with http.stream("GET", f"/api/conversations/{conversation}/watch") as watch:
            for _ in watch.iter_lines():
                pass
        ended.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # The stream is open once the server has a stream waiting for changes.
    service = live.server.config.app.state.chat_service
    pause = threading.Event()
    for _ in range(500):
        if service.watch._wake is not None:
            break
        pause.wait(0.01)
    live.stop()
    # Ended by the server (not by uvicorn's cancel after its graceful timeout, which
    # would log "timeout graceful shutdown exceeded").
    assert ended.wait(WAIT_SECONDS)
    assert "graceful shutdown exceeded" not in caplog.text


def test_a_turn_that_started_and_ended_between_waits_is_not_missed() -> None:
    async def scenario() -> list[list[str]]:
        watch = ConversationWatch()
        seen = watch.revision
        # A turn starts and ends while the stream is busy sending, not waiting.
        watch.started("c")
        watch.finished("c")
        first = await asyncio.wait_for(watch.changes_after(seen), 1)
        seen = first[-1].revision
        waiter = asyncio.ensure_future(watch.changes_after(seen))
        await asyncio.sleep(0)
        watch.started("c")
        return [[change.kind for change in first], [c.kind for c in await waiter]]

    assert asyncio.run(scenario()) == [
        ["turn.started", "turn.finished"],
        ["turn.started"],
    ]


def test_a_stream_that_fell_behind_is_told_it_missed_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watching, "KEPT_CHANGES", 3)

    async def scenario() -> list[tuple[int, str]]:
        watch = ConversationWatch()
        for _ in range(5):
            watch.changed("c", "pins")
        return [(c.revision, c.kind) for c in await watch.changes_after(0)]

    assert asyncio.run(scenario()) == [(2, "missed"), (3, "pins"), (4, "pins"), (5, "pins")]


def announced(lines: Iterator[str], count: int) -> list[tuple[str, dict[str, Any]]]:
    """The next `count` events of a watch stream: (name, data)."""
    events: list[tuple[str, dict[str, Any]]] = []
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((name, json.loads(line.removeprefix("data: "))))
            if len(events) == count:
                break
    return events


def test_every_change_to_a_conversation_is_announced_with_its_kind_revision_and_page(
    http: httpx2.Client, store: Store
) -> None:
    conversation = http.post(
        "/api/conversations", json={"settings": {"compaction": {"keep_recent_tokens": 0}}}
    ).json()["id"]
    path = f"/api/conversations/{conversation}"
    # Answers long enough that a fold saves more than its summary and the recall tools.
    messages = []
    for i in range(6):
        messages += [user(f"question {i} " * 20), assistant(f"answer {i} " * 80)]
    store.append_messages(conversation, messages)
    first = http.get(f"{path}/messages").json()["items"][1]
    page_a = {"X-Foldline-Page": "page-a"}
    with http.stream("GET", f"{path}/watch") as watch:
        lines = watch.iter_lines()
        assert announced(lines, 1)[0][0] == "watch.opened"
        # A fold (a turn), undone and brought back; a pin and an unpin; a second version
        # of an answer and a switch back to the first; a rename; a hand-off.
        compacted = http.post(f"{path}/compact").text
        assert "compaction.completed" in compacted, compacted
        assert http.post(f"{path}/compactions/1/undo", headers=page_a).status_code == 200
        assert http.post(f"{path}/compactions/1/redo").status_code == 200
        assert http.post(f"{path}/messages/{first['id']}/pin", headers=page_a).is_success
        assert http.delete(f"{path}/messages/{first['id']}/pin").is_success
        assert "event: done" in http.post(f"{path}/messages/{first['id']}/regenerate").text
        switched = http.put(f"{path}/active-leaf", json={"messageId": first["id"]})
        assert switched.is_success, switched.text
        assert http.patch(path, json={"title": "Renamed"}, headers=page_a).is_success
        assert http.post(f"{path}/handoff", json={}).status_code == 201
        events = announced(lines, 11)
        revision = http.get(path).json()["revision"]
        assert http.delete(path, headers=page_a).status_code == 204
        deleted = announced(lines, 1)
    assert [(name, data.get("kind")) for name, data in events] == [
        ("turn.started", None),
        ("turn.finished", None),
        ("conversation.changed", "fold"),
        ("conversation.changed", "fold"),
        ("conversation.changed", "pins"),
        ("conversation.changed", "pins"),
        ("turn.started", None),
        ("turn.finished", None),
        ("conversation.changed", "branch"),
        ("conversation.changed", "updated"),
        ("conversation.changed", "handoff"),
    ]
    revisions = [data["revision"] for _, data in events]
    assert revisions == sorted(set(revisions))
    # The conversation as read now is as current as the last change announced.
    assert revision == revisions[-1]
    origins = [data.get("origin") for name, data in events if name == "conversation.changed"]
    assert origins == ["page-a", "", "page-a", "", "", "page-a", ""]
    assert deleted == [
        ("conversation.changed", {"kind": "deleted", "revision": revision + 1, "origin": "page-a"})
    ]


def test_the_list_changes_of_other_conversations_are_announced_but_not_their_details(
    http: httpx2.Client, store: Store
) -> None:
    watched = http.post("/api/conversations", json={}).json()["id"]
    other = http.post("/api/conversations", json={}).json()["id"]
    store.append_messages(other, [user("question"), assistant("answer")])
    answer = http.get(f"/api/conversations/{other}/messages").json()["items"][1]
    with http.stream("GET", f"/api/conversations/{watched}/watch") as watch:
        lines = watch.iter_lines()
        assert announced(lines, 1)[0][0] == "watch.opened"
        # Not for the list: a pin, a refused change.
        assert http.post(f"/api/conversations/{other}/messages/{answer['id']}/pin").is_success
        assert http.patch(f"/api/conversations/{other}", json={"title": ""}).status_code == 422
        assert http.delete("/api/conversations/nope").status_code == 404
        created = http.post("/api/conversations", json={}, headers={"X-Foldline-Page": "p1"})
        assert http.patch(f"/api/conversations/{other}", json={"title": "New name"}).is_success
        assert http.post("/api/projects", json={"name": "Work"}).is_success
        assert http.delete(f"/api/conversations/{created.json()['id']}").status_code == 204
        events = announced(lines, 4)
    assert events == [
        ("conversations.changed", {"kind": "created", "conversationId": None, "origin": "p1"}),
        ("conversations.changed", {"kind": "updated", "conversationId": other, "origin": ""}),
        ("conversations.changed", {"kind": "project", "conversationId": None, "origin": ""}),
        (
            "conversations.changed",
            {"kind": "deleted", "conversationId": created.json()["id"], "origin": ""},
        ),
    ]
    assert http.get(f"/api/conversations/{watched}").json()["revision"] == 0


# Routes under /api/conversations that change a conversation only through a turn or fold
# (announced by the chat service as it starts and ends), or change nothing stored.
TURN_OR_NO_CHANGE = {
    ("POST", "/api/conversations/{conversation_id}/messages"),
    ("POST", "/api/conversations/{conversation_id}/retry"),
    ("POST", "/api/conversations/{conversation_id}/messages/{message_id}/edit"),
    ("POST", "/api/conversations/{conversation_id}/messages/{message_id}/regenerate"),
    ("POST", "/api/conversations/{conversation_id}/compact"),
    ("POST", "/api/conversations/{conversation_id}/cancel"),
    ("POST", "/api/conversations/{conversation_id}/tool-calls/{call_id}/approval"),
    ("POST", "/api/conversations/{conversation_id}/elicitations/{elicitation_id}"),
}


def test_every_route_that_changes_a_conversation_is_announced(app: FastAPI) -> None:
    """A route added later must say what it changes, or be a turn."""
    changing = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        if path.startswith("/api/conversations")
        for method in operations
        if method.upper() in MUTATING
    }
    unannounced = {(method, path) for method, path in changing if change_of(method, path) is None}
    assert unannounced == TURN_OR_NO_CHANGE
    assert change_of("DELETE", "/api/projects/{project_id}/notes/{note_id}") == "project"


def test_a_page_showing_no_conversation_hears_of_the_list_changing(http: httpx2.Client) -> None:
    with http.stream("GET", "/api/watch") as watch:
        lines = watch.iter_lines()
        assert announced(lines, 1) == [("watch.opened", {})]
        created = http.post("/api/conversations", json={}).json()["id"]
        assert http.patch(f"/api/conversations/{created}", json={"title": "Named"}).is_success
        assert http.delete(f"/api/conversations/{created}").status_code == 204
        events = announced(lines, 3)
    assert [(name, data["kind"]) for name, data in events] == [
        ("conversations.changed", "created"),
        ("conversations.changed", "updated"),
        ("conversations.changed", "deleted"),
    ]
