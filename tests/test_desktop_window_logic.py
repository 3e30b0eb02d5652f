"""The window's bookkeeping that needs no display: what it remembers and when."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from foldline_desktop.qt_hooks import shielded
from foldline_desktop.window import DesktopWindow
from foldline_desktop.window_state import WindowState


def _window(state: WindowState | None = None) -> DesktopWindow:
    return DesktopWindow(Path("/nonexistent"), "token", state or WindowState(), "<p>starting</p>")


def test_an_early_none_from_the_page_does_not_forget_the_remembered_conversation() -> None:
    window = _window(WindowState(last_conversation_id="kept"))
    # The page's first answer comes before its scripts reopened the conversation.
    window.remember_conversation(None)
    assert window.state.last_conversation_id == "kept"


def test_the_page_switching_and_closing_conversations_is_followed() -> None:
    window = _window(WindowState(last_conversation_id="old"))
    window.remember_conversation("new")
    assert window.state.last_conversation_id == "new"
    # Now that the page has spoken, "none" means the user closed the conversation.
    window.remember_conversation(None)
    assert window.state.last_conversation_id is None


def test_moves_and_resizes_are_remembered_but_not_while_maximized() -> None:
    window = _window()
    window._on_moved(10, 20)
    window._on_resized(1000, 700)
    assert (window.state.x, window.state.y, window.state.width, window.state.height) == (
        10,
        20,
        1000,
        700,
    )
    window._on_maximized()
    window._on_resized(1920, 1080)
    window._on_moved(0, 0)
    window._on_restored()
    state = window.state
    assert (state.x, state.y, state.width, state.height, state.maximized) == (
        10,
        20,
        1000,
        700,
        False,
    )


def test_raising_a_window_that_is_not_open_is_an_error_not_a_hang() -> None:
    with pytest.raises(RuntimeError, match="not open"):
        _window().raise_window()


def test_a_failing_qt_callback_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    # PyQt aborts the whole process on an exception escaping a slot.
    @shielded
    def broken(value: object) -> None:
        raise ValueError(f"bad {value}")

    with caplog.at_level(logging.ERROR):
        broken(7)
    assert "a window callback failed" in caplog.text
    assert "bad 7" in caplog.text


def test_a_callback_during_teardown_is_quietly_ignored(caplog: pytest.LogCaptureFixture) -> None:
    @shielded
    def late() -> None:
        raise RuntimeError("wrapped C/C++ object of type WebPage has been deleted")

    with caplog.at_level(logging.DEBUG):
        late()
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]


class _PywebviewWindow:
    """Records what pywebview's window was asked to load."""

    def __init__(self) -> None:
        self.loaded: list[tuple[str, str]] = []
        self.changed = threading.Condition()

    def load_html(self, page: str, base_uri: str) -> None:
        assert base_uri == "about:blank"
        self._record(("html", page))

    def load_url(self, url: str) -> None:
        self._record(("url", url))

    def _record(self, page: tuple[str, str]) -> None:
        with self.changed:
            self.loaded.append(page)
            self.changed.notify_all()


def test_pages_asked_for_before_the_window_shows_never_wait_and_the_newest_is_loaded() -> None:
    window = DesktopWindow(Path("/nonexistent"), "token", WindowState(), "<p>first</p>")
    native = _PywebviewWindow()
    pages = threading.Thread(target=window._load_pages, args=(native, ("html", "<p>first</p>")))
    pages.start()
    # The start reports its stages while the window is still being built: no call waits.
    window.show_html("<p>database</p>")
    window.show_html("<p>server</p>")
    window.open_app("http://127.0.0.1:5")
    assert native.loaded == []
    window._on_shown()
    with native.changed:
        assert native.changed.wait_for(lambda: native.loaded, timeout=10)
    window.show_html("<p>why it stopped</p>")
    with native.changed:
        assert native.changed.wait_for(lambda: len(native.loaded) == 2, timeout=10)
    # Only the newest page of those asked for before it showed was loaded.
    assert native.loaded == [
        ("url", "http://127.0.0.1:5/#token=token"),
        ("html", "<p>why it stopped</p>"),
    ]
    # Closing ends the thread.
    with window._page_changed:
        window._closed = True
        window._page_changed.notify_all()
    pages.join(10)
    assert not pages.is_alive()
