"""A hand-off is running work, like a turn: while its summary is written, the
conversation takes no send, edit, regeneration, pin or second hand-off, and Stop or a
delete ends it. Over a real socket, with the summary held mid-stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import httpx2
import pytest
from fastapi import FastAPI

from foldline.core.messages import assistant, user
from foldline.server.runner import start_server_in_thread
from foldline.store import Store

from .conftest import AUTH

WAIT_SECONDS = 10.0


@pytest.fixture
def http(app: FastAPI) -> Iterator[httpx2.Client]:
    server = start_server_in_thread(app, "127.0.0.1", 0)
    with httpx2.Client(base_url=server.url, headers=AUTH, timeout=WAIT_SECONDS) as client:
        yield client
    server.stop()


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def _start_handoff(http: httpx2.Client, conversation: str) -> tuple[threading.Thread, list]:
    answers: list[httpx2.Response] = []
    thread = threading.Thread(
        target=lambda: answers.append(
            http.post(f"/api/conversations/{conversation}/handoff", json={"keepLast": 1})
        )
    )
    thread.start()
    return thread, answers


def _held_handoff(
    http: httpx2.Client, store: Store, model
) -> tuple[str, list, threading.Thread, list]:
    """A conversation of six messages whose hand-off is running, its summary held."""
    conversation = http.post("/api/conversations", json={}).json()["id"]
    records = store.append_messages(
        conversation, [m for n in range(3) for m in (user(f"q{n}"), assistant(f"a{n}"))]
    )
    model.hold = True
    thread, answers = _start_handoff(http, conversation)
    _wait_for(model.first_delta_sent.is_set, "the hand-off's summary to start")
    return conversation, answers, thread, records


def test_nothing_changes_the_conversation_while_a_hand_off_runs(
    http: httpx2.Client, store: Store, model
) -> None:
    conversation, answers, thread, records = _held_handoff(http, store, model)
    base = f"/api/conversations/{conversation}"
    refused = {
        "send": http.post(f"{base}/messages", json={"content": "meanwhile"}),
        "edit": http.post(f"{base}/messages/{records[4].id}/edit", json={"content": "x"}),
        "regenerate": http.post(f"{base}/messages/{records[5].id}/regenerate"),
        "pin": http.post(f"{base}/messages/{records[0].id}/pin"),
        "second hand-off": http.post(f"{base}/handoff", json={}),
    }
    assert {name: r.status_code for name, r in refused.items()} == dict.fromkeys(refused, 409)
    model.release.set()
    thread.join(WAIT_SECONDS)
    assert answers[0].status_code == 201, answers[0].text
    assert len(http.get("/api/conversations").json()["items"]) == 2
    assert len(store.list_messages(conversation)) == 6
    # Once it is done, the conversation takes a send again.
    model.hold = False
    assert http.post(f"{base}/messages", json={"content": "now"}).status_code == 200


def test_stop_or_delete_ends_a_running_hand_off_and_creates_nothing(
    http: httpx2.Client, store: Store, model
) -> None:
    conversation, answers, thread, _ = _held_handoff(http, store, model)
    assert http.post(f"/api/conversations/{conversation}/cancel").json() == {"cancelled": True}
    thread.join(WAIT_SECONDS)
    assert answers[0].status_code == 409
    assert answers[0].json()["error"]["code"] == "handoff_stopped"
    assert len(http.get("/api/conversations").json()["items"]) == 1

    model.first_delta_sent.clear()
    thread, answers = _start_handoff(http, conversation)
    _wait_for(model.first_delta_sent.is_set, "the second hand-off's summary to start")
    assert http.delete(f"/api/conversations/{conversation}").status_code == 204
    thread.join(WAIT_SECONDS)
    assert answers[0].status_code in (404, 409)
    assert http.get("/api/conversations").json()["items"] == []
