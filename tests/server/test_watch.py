"""The watch stream: an open page hears of every turn started in its conversation, from
any client, even one that ended before the page's stream woke, and the stream ends when
the server stops instead of holding it up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

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
        assert events_of(lines, 4) == [
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
            assert events_of(lines, 1) == ["turn.started"]
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
    # The stream is open once the server has a waiter for this conversation.
    service = live.server.config.app.state.chat_service
    pause = threading.Event()
    for _ in range(500):
        if service.watch._waiting:
            break
        pause.wait(0.01)
    live.stop()
    # Ended by the server (not by uvicorn's cancel after its graceful timeout, which
    # would log "timeout graceful shutdown exceeded").
    assert ended.wait(WAIT_SECONDS)
    assert "graceful shutdown exceeded" not in caplog.text


def test_a_turn_that_started_and_ended_between_waits_is_not_missed() -> None:
    from foldline.chat.watching import ConversationWatch

    async def scenario() -> list[object]:
        watch = ConversationWatch()
        seen = watch.starts("c")
        # A turn starts (and may end) while the stream is busy sending, not waiting.
        watch.started("c", "turn-1")
        missed = await asyncio.wait_for(watch.next_start("c", seen), 1)
        seen = watch.starts("c")
        waiter = asyncio.ensure_future(watch.next_start("c", seen))
        await asyncio.sleep(0)
        watch.started("c", "turn-2")
        return [missed, await asyncio.wait_for(waiter, 1)]

    assert asyncio.run(scenario()) == [None, "turn-2"]
