"""The start beside the window: the stages the starting page shows, then the app or why not.

A real server is started on a temporary data dir; the window is a stand-in that records
the pages it is given. A slow stage is held up by the test (an event), so the page is
seen while the start waits there, with no clock involved.
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldline.server import runner
from foldline_desktop import server_handle
from foldline_desktop.starting_page import (
    OPENING_DATABASE,
    SERVER_ANSWERING,
    StartStages,
    starting_html,
    stopped_html,
)
from foldline_desktop.window_start import WindowStart

TOKEN = "window-start-token-0123456789abcdef"
RUNNER_STAGES = {
    "loading the app",
    "the app's start-up (opening the database, checking and migrating it)",
    "the server to listen",
}


class RecordingWindow:
    """Records the pages and the app URL the start gives the window, and when."""

    def __init__(self) -> None:
        self.pages: list[str] = []
        self.app_url: str | None = None
        self.changed = threading.Condition()

    def show_html(self, page: str) -> None:
        with self.changed:
            self.pages.append(page)
            self.changed.notify_all()

    def open_app(self, server_url: str) -> None:
        with self.changed:
            self.app_url = server_url
            self.changed.notify_all()

    def wait_for_page(self, text: str) -> str:
        with self.changed:
            assert self.changed.wait_for(
                lambda: any(text in page for page in self.pages), timeout=60
            ), self.pages
            return next(page for page in self.pages if text in page)

    def stages(self) -> list[str]:
        return [
            html.unescape(match.group(1))
            for page in self.pages
            if (match := re.search(r'id="stage">Waiting for (.*?)</p>', page))
        ]


@pytest.fixture
def started() -> Iterator[list[WindowStart]]:
    starts: list[WindowStart] = []
    yield starts
    for start in starts:
        start.done.wait(60)
        if start.server is not None:
            start.server.stop()


def test_stages_are_shown_once_each_in_the_order_they_come() -> None:
    shown: list[str] = []
    seconds = iter([0.0, 3.0, 7.5, 9.0])
    stages = StartStages(shown.append, clock=lambda: next(seconds))
    for stage in ["the database", "the database", "the <server>", "the <server>", "the end"]:
        stages.waiting_for(stage)
    assert shown == [
        starting_html("the database", 3.0),
        starting_html("the <server>", 7.5),
        starting_html("the end", 9.0),
    ]
    assert stages.stage == "the end"
    # The stage is text, never markup; the seconds so far go on counting in the page.
    assert "Waiting for the &lt;server&gt;" in shown[1]
    assert 'data-seconds="7"' in shown[1]


def test_a_slow_database_stage_is_shown_then_the_server_stages_then_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[WindowStart]
) -> None:
    import foldline.server.app as app_module

    release = threading.Event()
    check_database = app_module.check_database

    def slow_check(path: Path) -> None:
        assert release.wait(60)
        check_database(path)

    monkeypatch.setattr(app_module, "check_database", slow_check)
    window = RecordingWindow()
    start = WindowStart(tmp_path, TOKEN, None, window, started_at=0.0)
    started.append(start)
    start.begin()

    page = window.wait_for_page("database")
    assert f"Waiting for {html.escape(OPENING_DATABASE)}" in page
    assert start.stages.stage == OPENING_DATABASE
    assert window.app_url is None and start.server is None
    release.set()

    assert start.done.wait(60)
    assert start.failure is None and start.server is not None
    assert window.app_url == start.server.url
    assert server_handle.server_is_healthy(start.server.url)
    # The database, then what the server itself waited for, then its first answer; each
    # shown once.
    stages = window.stages()
    assert stages[0] == OPENING_DATABASE and stages[-1] == SERVER_ANSWERING
    assert set(stages[1:-1]) <= RUNNER_STAGES and stages[1:-1]
    assert len(stages) == len(set(stages))


def test_a_start_that_cannot_open_the_database_says_why_in_the_window(
    tmp_path: Path, started: list[WindowStart]
) -> None:
    (tmp_path / "foldline.db").write_bytes(b"not a database at all" * 100)
    window = RecordingWindow()
    start = WindowStart(tmp_path, TOKEN, None, window, started_at=0.0)
    started.append(start)
    start.begin()
    assert start.done.wait(60)
    assert start.server is None and window.app_url is None
    assert start.failure is not None and "foldline.db" in start.failure
    page = window.pages[-1]
    assert "Foldline could not start" in page
    assert html.escape(start.failure) in page
    assert str(tmp_path / "logs" / "foldline.log") in page


STEP_SECONDS = 10.0


class _FakeClock:
    """`time.monotonic` for the runner: every reading is ten seconds later. The reading
    that makes the runner give up (past the limit after the first) also lets
    the start-up go on, so the thread given up ends at once instead of after the
    runner's few seconds of grace."""

    def __init__(self, past_the_limit: threading.Event) -> None:
        self.now = 0.0
        self.past_the_limit = past_the_limit

    def __call__(self) -> float:
        self.now += STEP_SECONDS
        if self.now - STEP_SECONDS > runner.STUCK_START_SECONDS:
            self.past_the_limit.set()
        return self.now


def test_a_stuck_start_is_given_up_after_the_limit_naming_its_stage_in_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[WindowStart]
) -> None:
    import foldline.server.app as app_module

    # The app's start-up does not end within the limit; the runner's clock runs ten
    # seconds per reading, so its five minutes pass in about thirty polls.
    release = threading.Event()

    def stuck(app: object) -> None:
        release.wait(60)

    monkeypatch.setattr(app_module, "schedule_refresh", stuck)
    monkeypatch.setattr(runner, "clock", _FakeClock(release))
    window = RecordingWindow()
    start = WindowStart(tmp_path, TOKEN, None, window, started_at=0.0)
    started.append(start)
    start.begin()
    try:
        assert start.done.wait(60)
    finally:
        release.set()
    assert start.server is None and start.failure is not None
    assert f"within {runner.STUCK_START_SECONDS:.0f} s" in start.failure
    assert "waiting for the app's start-up" in start.failure
    assert window.pages[-1] == stopped_html(start.failure, tmp_path / "logs" / "foldline.log")
    assert "the app's start-up" in window.stages()[-1]
