"""Streams over a real socket: one turn at a time, disconnects, Stop.

These run the app under uvicorn (`start_server_in_thread`) because only a real
connection can be dropped mid-stream; the fake model is held after its first delta so
each test acts at a known point of the turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx2
import pytest
from fastapi import FastAPI

from foldline.server.runner import RunningServer, start_server_in_thread

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


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def _read_until(lines: Iterator[str], event_name: str) -> list[str]:
    seen = []
    for line in lines:
        seen.append(line)
        if line == f"event: {event_name}":
            return seen
    raise AssertionError(f"the stream ended before {event_name}: {seen}")


def _messages(http: httpx2.Client, conversation: str) -> list[dict]:
    return http.get(f"/api/conversations/{conversation}/messages").json()["items"]


def test_a_second_send_while_a_turn_runs_is_409(http: httpx2.Client, model) -> None:
    model.hold = True
    conversation = http.post("/api/conversations", json={}).json()["id"]
    path = f"/api/conversations/{conversation}/messages"
    with http.stream("POST", path, json={"content": "first"}) as stream:
        lines = stream.iter_lines()
        _read_until(lines, "assistant.delta")
        second = http.post(path, json={"content": "second"})
        assert second.status_code == 409
        assert second.json()["error"]["code"] == "turn_in_progress"
        assert "wait" in second.json()["error"]["message"].lower()
        fold = http.post(f"/api/conversations/{conversation}/compact", json={})
        assert fold.status_code == 409
        other = http.post("/api/conversations", json={}).json()["id"]
        model.release.set()  # other conversations are not blocked by this one
        elsewhere = http.post(f"/api/conversations/{other}/messages", json={"content": "x"})
        assert elsewhere.status_code == 200
        rest = [line for line in lines if line]
    assert rest[-2:] == ["event: done", "data: {}"]
    assert [m["parts"][0]["text"] for m in _messages(http, conversation)][:1] == ["first"]
    after = http.post(path, json={"content": "third"})
    assert after.status_code == 200


def test_a_client_that_disconnects_does_not_lose_the_turn(
    live: RunningServer, http: httpx2.Client, model, chat_service
) -> None:
    model.hold = True
    conversation = http.post("/api/conversations", json={}).json()["id"]
    path = f"/api/conversations/{conversation}/messages"
    connections = live.server.server_state.connections
    with http.stream("POST", path, json={"content": "keep going"}) as stream:
        # Keep a reference to the line iterator: a dropped, half-read iterator closes the
        # connection as soon as it is garbage-collected.
        lines = stream.iter_lines()
        _read_until(lines, "assistant.delta")
        open_while_streaming = len(connections)
        assert open_while_streaming >= 1
    del lines
    # The client closed the half-read response: the server sees the connection go while
    # the model is still held mid-answer.
    _wait_for(lambda: len(connections) < open_while_streaming, "the server to see the disconnect")
    assert chat_service.is_running(conversation)
    model.release.set()

    def answered() -> bool:
        items = _messages(http, conversation)
        return len(items) == 2 and items[1]["status"] == "complete"

    _wait_for(answered, "the turn to finish without its client")
    items = _messages(http, conversation)
    assert items[1]["parts"] == [{"kind": "text", "text": model.reply}]
    # The answer is stored complete a moment before the turn's task ends.
    _wait_for(lambda: not chat_service.is_running(conversation), "the turn to end")
    assert http.post(path, json={"content": "next"}).status_code == 200


def test_stop_keeps_the_partial_answer_marked_interrupted(http: httpx2.Client, model) -> None:
    model.hold = True
    conversation = http.post("/api/conversations", json={}).json()["id"]
    path = f"/api/conversations/{conversation}/messages"
    with http.stream("POST", path, json={"content": "long story"}) as stream:
        lines = stream.iter_lines()
        _read_until(lines, "assistant.delta")
        cancelled = http.post(f"/api/conversations/{conversation}/cancel")
        assert cancelled.json() == {"cancelled": True}
        rest = [line for line in lines if line]
    assert rest[-2:] == ["event: done", 'data: {"cancelled": true}']
    items = _messages(http, conversation)
    assert items[1]["status"] == "interrupted"
    partial = items[1]["parts"][0]["text"]
    assert partial and model.reply.startswith(partial) and partial != model.reply
    assert http.post(f"/api/conversations/{conversation}/cancel").json() == {"cancelled": False}


def test_retry_after_stop_streams_and_is_exclusive_like_a_send(http: httpx2.Client, model) -> None:
    model.hold = True
    conversation = http.post("/api/conversations", json={}).json()["id"]
    base = f"/api/conversations/{conversation}"
    with http.stream("POST", f"{base}/messages", json={"content": "long story"}) as stream:
        lines = stream.iter_lines()
        _read_until(lines, "assistant.delta")
        http.post(f"{base}/cancel")
        assert [line for line in lines if line][-2:] == ["event: done", 'data: {"cancelled": true}']
    partial = _messages(http, conversation)[1]["parts"][0]["text"]

    # Continue finishes the stopped answer in place.
    with http.stream("POST", f"{base}/retry") as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()
        _read_until(lines, "assistant.delta")
        # While the retried answer runs, neither another retry nor a send may start.
        for path, body in ((f"{base}/retry", None), (f"{base}/messages", {"content": "x"})):
            refused = http.post(path, json=body)
            assert refused.status_code == 409
            assert refused.json()["error"]["code"] == "turn_in_progress"
        model.release.set()
        rest = [line for line in lines if line]
    assert rest[-2:] == ["event: done", "data: {}"]
    items = _messages(http, conversation)
    assert [(m["role"], m["status"], m["continued"]) for m in items] == [
        ("user", "complete", False),
        ("assistant", "complete", True),
    ]
    assert items[1]["parts"] == [{"kind": "text", "text": partial + model.reply}]
    # The answer is complete now: there is nothing left to retry.
    assert http.post(f"{base}/retry").status_code == 400


def test_stopping_the_server_ends_open_streams_and_keeps_the_partial_answer(
    live: RunningServer, model, store
) -> None:
    model.hold = True
    with httpx2.Client(base_url=live.url, headers=AUTH, timeout=WAIT_SECONDS) as http:
        conversation = http.post("/api/conversations", json={}).json()["id"]
        path = f"/api/conversations/{conversation}/messages"
        with http.stream("POST", path, json={"content": "x"}) as stream:
            lines = stream.iter_lines()
            _read_until(lines, "assistant.delta")
            live.stop()
            assert not live.running
            # The stream was closed by the server, not left hanging.
            with pytest.raises(httpx2.HTTPError):
                list(lines)
    answer = store.list_messages(conversation)[1]
    assert answer.status == "interrupted"
    assert answer.message.text and model.reply.startswith(answer.message.text)


def test_deleting_a_conversation_stops_its_turn_first(http: httpx2.Client, model, store) -> None:
    model.hold = True
    conversation = http.post("/api/conversations", json={}).json()["id"]
    path = f"/api/conversations/{conversation}/messages"
    with http.stream("POST", path, json={"content": "doomed"}) as stream:
        lines = stream.iter_lines()
        _read_until(lines, "assistant.delta")
        assert http.delete(f"/api/conversations/{conversation}").status_code == 204
        rest = [line for line in lines if line]
    assert rest[-2] == "event: done"
    assert http.get(f"/api/conversations/{conversation}").status_code == 404
    assert store.list_conversations() == []


def test_a_second_reader_gets_the_replay_then_follows_to_the_end(
    http: httpx2.Client, model
) -> None:
    model.hold = True
    conversation = http.post("/api/conversations", json={}).json()["id"]
    events = f"/api/conversations/{conversation}/events"
    # Nothing runs yet: an empty stream, at once.
    idle = http.get(events)
    assert idle.status_code == 200
    assert idle.text == ""
    path = f"/api/conversations/{conversation}/messages"
    with http.stream("POST", path, json={"content": "first"}) as sender:
        sent = sender.iter_lines()
        before = _read_until(sent, "assistant.delta")
        # A reload while the answer is held: everything so far, replayed in order.
        with http.stream("GET", events) as follower:
            followed = follower.iter_lines()
            replayed = _read_until(followed, "assistant.delta")
            assert [line for line in replayed if line.startswith("event:")] == [
                line for line in before if line.startswith("event:")
            ]
            model.release.set()
            rest = [line for line in followed if line]
        sender_rest = [line for line in sent if line]
    # Both readers saw the same events to the end.
    assert rest == sender_rest
    assert rest[-2:] == ["event: done", "data: {}"]
    assert "event: message.completed" in rest
    assert http.get(events).text == ""


def test_events_of_an_unknown_conversation_are_404_and_need_the_token(
    http: httpx2.Client, live: RunningServer
) -> None:
    assert http.get("/api/conversations/nope/events").status_code == 404
    anonymous = httpx2.get(f"{live.url}/api/conversations/nope/events", timeout=WAIT_SECONDS)
    assert anonymous.status_code == 401
