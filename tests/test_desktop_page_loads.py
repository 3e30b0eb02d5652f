"""Which page the window shows, decided from Qt's reports of its loads, in every order.

The window opens on a starting page and then loads the app. pywebview's "loaded" event,
the window's current URL and the load that actually finished do not come in a fixed
order; these tests drive each order by hand, through the same hooks the Qt window uses
(with stand-ins for Qt's objects), and check the `loaded` status and which conversation
is remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from foldline_desktop.page_loads import PageLoads, same_origin
from foldline_desktop.qt_hooks import (
    LOAD_STARTED,
    LOAD_SUCCEEDED,
    READ_CURRENT_CONVERSATION,
    connect_page_hooks,
)
from foldline_desktop.window import DesktopWindow
from foldline_desktop.window_state import WindowState

APP = "http://127.0.0.1:8123"
APP_PAGE = f"{APP}/"
# What Qt reports for a page given as HTML with the window's base URL.
STARTING_PAGE = "about:blank"
STARTING_PAGE_LOADING = "data:text/html;charset=UTF-8,%3Ctitle%3EFoldline%3C%2Ftitle%3E"


class FakeSignal:
    def __init__(self) -> None:
        self.slots: list[Callable[..., None]] = []

    def connect(self, slot: Callable[..., None]) -> None:
        self.slots.append(slot)

    def emit(self, *args: object) -> None:
        for slot in self.slots:
            slot(*args)


class FakeLoadingInfo:
    """Stands in for QWebEngineLoadingInfo: the status and URL of one load."""

    def __init__(self, status: str, url: str, error_page: bool = False) -> None:
        self._status = status
        self._url = url
        self._error_page = error_page

    def status(self) -> SimpleNamespace:
        return SimpleNamespace(name=self._status)

    def url(self) -> SimpleNamespace:
        return SimpleNamespace(toString=lambda: self._url)

    def isErrorPage(self) -> bool:
        return self._error_page


class FakePage:
    """Stands in for QWebEnginePage; the page's answers are given by the test, late."""

    def __init__(self) -> None:
        self.loadingChanged = FakeSignal()
        self.downloads = FakeSignal()
        self.questions: list[Callable[[object], None]] = []

    def profile(self) -> SimpleNamespace:
        return SimpleNamespace(downloadRequested=self.downloads)

    def runJavaScript(self, script: str, callback: Callable[[object], None]) -> None:
        assert script == READ_CURRENT_CONVERSATION
        self.questions.append(callback)

    def answer(self, value: object) -> None:
        """The oldest question asked of the page is answered now."""
        self.questions.pop(0)(value)


class FakeWebView:
    def __init__(self) -> None:
        self.the_page = FakePage()
        self.titleChanged = FakeSignal()

    def page(self) -> FakePage:
        return self.the_page


class Shell:
    """A `DesktopWindow` with no display, its Qt hooks connected to stand-ins."""

    def __init__(self, remembered: str | None = None) -> None:
        state = WindowState(last_conversation_id=remembered)
        self.window = DesktopWindow(Path("/nonexistent"), "token", state, "<p>starting</p>")
        self.view = FakeWebView()
        self.page = self.view.the_page
        connect_page_hooks(
            SimpleNamespace(webview=self.view),
            self.window._loads,
            self.window.remember_conversation,
        )

    def qt_reports(self, status: str, url: str, error_page: bool = False) -> None:
        self.page.loadingChanged.emit(FakeLoadingInfo(status, url, error_page))

    def pywebview_loaded(self) -> None:
        self.window._on_loaded()

    def title_changes(self) -> None:
        self.view.titleChanged.emit("Foldline")


@pytest.fixture(autouse=True)
def _untouched_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # pywebview's "loaded" hands the person's own directories back to the environment.
    monkeypatch.delenv("FOLDLINE_ORIGINAL_XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("FOLDLINE_ORIGINAL_XDG_CACHE_HOME", raising=False)


@pytest.mark.parametrize("pywebview_first", [True, False], ids=["pywebview-first", "qt-first"])
def test_the_app_counts_as_loaded_whichever_of_the_two_events_comes_first(
    pywebview_first: bool,
) -> None:
    shell = Shell()
    shell.qt_reports(LOAD_SUCCEEDED, STARTING_PAGE)
    shell.pywebview_loaded()  # the starting page's own
    shell.window.open_app(APP)
    assert not shell.window.loaded
    if pywebview_first:
        # pywebview's "loaded" comes while the app's page is still loading (the failure
        # the polling of the window's URL papered over): it decides nothing.
        shell.pywebview_loaded()
        assert not shell.window.loaded
        shell.qt_reports(LOAD_SUCCEEDED, APP_PAGE)
    else:
        shell.qt_reports(LOAD_SUCCEEDED, APP_PAGE)
        shell.pywebview_loaded()
    assert shell.window.loaded


def test_a_starting_page_still_loading_while_the_window_names_the_app_is_not_the_app() -> None:
    # Qt names a navigation's URL as soon as it is asked for: reading the window's URL here
    # would say "the app" while the starting page is the one loading and answering.
    shell = Shell(remembered="c_kept")
    shell.window.open_app(APP)
    shell.qt_reports(LOAD_STARTED, STARTING_PAGE_LOADING)
    shell.pywebview_loaded()
    shell.title_changes()
    assert not shell.window.loaded
    assert shell.page.questions == []  # the starting page is never asked
    shell.qt_reports(LOAD_SUCCEEDED, APP_PAGE)
    assert shell.window.loaded
    shell.page.answer("c_kept")
    assert shell.window.state.last_conversation_id == "c_kept"


@pytest.mark.parametrize("answer_first", [True, False], ids=["answer-first", "next-load-first"])
def test_an_answer_counts_only_if_no_load_was_reported_since_it_was_asked(
    answer_first: bool,
) -> None:
    shell = Shell(remembered="c_old")
    shell.window.open_app(APP)
    shell.qt_reports(LOAD_SUCCEEDED, APP_PAGE)
    shell.page.answer("c_old")
    shell.title_changes()  # the person opens another conversation
    if answer_first:
        shell.page.answer("c_new")
        shell.qt_reports(LOAD_STARTED, STARTING_PAGE_LOADING)
        assert shell.window.state.last_conversation_id == "c_new"
    else:
        # The window moved on (and back to the app) before the answer came: it may be
        # from the page before, which had nothing open.
        shell.qt_reports(LOAD_STARTED, STARTING_PAGE_LOADING)
        shell.qt_reports(LOAD_SUCCEEDED, APP_PAGE)
        shell.page.answer(None)
        assert shell.window.state.last_conversation_id == "c_old"
        # The question asked of the app's page as it finished loading counts.
        shell.page.answer("c_new")
        assert shell.window.state.last_conversation_id == "c_new"


def test_the_starting_pages_title_never_asks_and_its_loads_never_count() -> None:
    shell = Shell(remembered="c_kept")
    shell.qt_reports(LOAD_SUCCEEDED, STARTING_PAGE)
    shell.title_changes()
    shell.window.show_html("<p>the next stage</p>")
    shell.qt_reports(LOAD_SUCCEEDED, STARTING_PAGE)
    shell.title_changes()
    assert shell.page.questions == []
    assert not shell.window.loaded
    assert shell.window.state.last_conversation_id == "c_kept"


def test_the_conversation_is_followed_on_the_app_after_it_loaded() -> None:
    shell = Shell()
    shell.window.open_app(APP)
    shell.qt_reports(LOAD_SUCCEEDED, APP_PAGE)
    shell.page.answer(None)  # before its scripts opened anything: not yet its word
    shell.title_changes()
    shell.page.answer("c_1")
    assert shell.window.state.last_conversation_id == "c_1"
    shell.title_changes()
    shell.page.answer(None)  # now "none" means the person closed it
    assert shell.window.state.last_conversation_id is None


@pytest.mark.parametrize(
    ("status", "url", "error_page"),
    [
        ("LoadFailedStatus", APP_PAGE, True),
        ("LoadStoppedStatus", APP_PAGE, False),
        (LOAD_SUCCEEDED, APP_PAGE, True),  # Chromium's error page for the app's URL
        (LOAD_SUCCEEDED, "http://127.0.0.1:81234/", False),  # not the app's port
        (LOAD_SUCCEEDED, "https://example.com/", False),
    ],
)
def test_loads_that_are_not_the_app_finishing_do_not_count(
    status: str, url: str, error_page: bool
) -> None:
    shell = Shell()
    shell.window.open_app(APP)
    shell.qt_reports(status, url, error_page)
    shell.title_changes()
    assert not shell.window.loaded
    assert shell.page.questions == []


def test_a_page_finishing_before_the_app_was_asked_for_is_not_the_app() -> None:
    loads = PageLoads()
    loads.load_succeeded(APP_PAGE)
    assert not loads.app_loaded and loads.read_ticket() is None
    loads.app_opened(APP)
    loads.load_succeeded(APP_PAGE)
    assert loads.app_loaded and loads.read_ticket() is not None


def test_the_app_stays_loaded_once_it_was_while_the_window_moves_on() -> None:
    loads = PageLoads()
    loads.app_opened(APP)
    loads.load_succeeded(APP_PAGE)
    loads.load_started()
    assert loads.app_loaded and not loads.showing_app
    loads.load_succeeded(APP_PAGE)  # a reload of the app
    assert loads.showing_app


@pytest.mark.parametrize(
    ("url", "origin", "same"),
    [
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000", True),
        ("http://127.0.0.1:8000/#token=x&c=y", "http://127.0.0.1:8000/", True),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:80", False),
        ("https://127.0.0.1:8000/", "http://127.0.0.1:8000", False),
        ("about:blank", "about:blank", False),
        ("data:text/html,x", "data:text/html,x", False),
    ],
)
def test_only_the_apps_own_origin_is_the_app(url: str, origin: str, same: bool) -> None:
    assert same_origin(url, origin) is same


def test_the_status_names_matched_are_qts() -> None:
    # The hooks tell Qt's load reports apart by their status names, so that these tests
    # need no Qt; this keeps the names honest.
    core: Any = pytest.importorskip("PyQt6.QtWebEngineCore")
    statuses = core.QWebEngineLoadingInfo.LoadStatus
    for name in (LOAD_STARTED, LOAD_SUCCEEDED, "LoadFailedStatus", "LoadStoppedStatus"):
        assert statuses[name].name == name
