"""What the shell adds to pywebview's Qt window: native "Save as" for downloads, and
knowing which conversation the page has open.

Why not pywebview's `js_api` bridge: pywebview builds the page's `window.pywebview.api`
functions with `new Function(...)` and runs `evaluate_js` through `eval`, and the app's
Content-Security-Policy (`script-src 'self'`, no `unsafe-eval`) rightly forbids both. So
the page stays a plain web page that behaves the same in a browser:

- export is an ordinary download (`<a download>` on a blob); Qt WebEngine hands it to
  `handle_download`, which asks for the place with the system's Save dialog;
- import is an ordinary `<input type=file>`, which Qt WebEngine already answers with the
  system's Open dialog;
- the open conversation is read from the page's own localStorage with Qt's
  `runJavaScript` (not subject to the page's CSP) whenever the page title changes, which
  the UI does on every conversation switch. The shell remembers it in `window.json` and
  passes it back next launch as `#c=<id>`;
- which page the window shows, and whether the app's page has loaded, is learned from
  Qt's reports of each load (`loadingChanged`), kept in `page_loads.PageLoads`.

The functions take the Qt objects as duck-typed parameters so tests can drive them with
stand-ins; only `install_hooks` touches PyQt6 itself.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foldline_desktop.page_loads import PageLoads

logger = logging.getLogger(__name__)

# The UI's localStorage key for the open conversation (frontend/js/main.js CURRENT_KEY).
CURRENT_CONVERSATION_KEY = "foldline.currentConversation"
READ_CURRENT_CONVERSATION = f"window.localStorage.getItem({CURRENT_CONVERSATION_KEY!r})"
DEFAULT_DOWNLOAD_NAME = "foldline-export"
MAX_CONVERSATION_ID_LENGTH = 128
# The names of `QWebEngineLoadingInfo.LoadStatus` members this module tells apart.
LOAD_STARTED = "LoadStartedStatus"
LOAD_SUCCEEDED = "LoadSucceededStatus"

AskSavePath = Callable[[str], Path | None]


def shielded(function: Callable[..., None]) -> Callable[..., None]:
    """Log instead of raise: PyQt aborts the whole process on an exception in a slot.

    A `RuntimeError` about a deleted C++ object only means the window is closing.
    """

    @functools.wraps(function)
    def call(*args: object) -> None:
        try:
            function(*args)
        except RuntimeError as error:
            if "has been deleted" in str(error):
                logger.debug("ignored a Qt callback during teardown: %s", error)
            else:
                logger.exception("a window callback failed")
        except Exception:
            logger.exception("a window callback failed")

    return call


def safe_file_name(suggested: object) -> str:
    """A bare file name for the Save dialog: a page must not choose the directory."""
    text = suggested if isinstance(suggested, str) else ""
    base = Path(text.replace("\\", "/")).name.strip()
    cleaned = "".join(ch for ch in base if ch.isprintable())
    return cleaned[:200] or DEFAULT_DOWNLOAD_NAME


def handle_download(download: Any, ask_save_path: AskSavePath) -> Path | None:
    """Accept a download into the file the user picks, or cancel it; returns the file."""
    name = safe_file_name(download.suggestedFileName())
    target = ask_save_path(name)
    if target is None:
        download.cancel()
        logger.info("download of %s cancelled in the Save dialog", name)
        return None
    download.setDownloadDirectory(str(target.parent))
    download.setDownloadFileName(target.name)
    download.accept()
    logger.info("saving a download to %s", target)
    return target


def conversation_from_storage(value: object) -> str | None:
    """The conversation id read from the page, if it looks like one."""
    if (
        isinstance(value, str)
        and 0 < len(value) <= MAX_CONVERSATION_ID_LENGTH
        and value.isprintable()
    ):
        return value
    return None


def qt_save_dialog(parent: Any) -> AskSavePath:
    """The system's Save dialog, starting in the home directory with the suggested name."""

    def ask(suggested_name: str) -> Path | None:
        from PyQt6.QtWidgets import QFileDialog

        chosen, _ = QFileDialog.getSaveFileName(
            parent, "Save as", str(Path.home() / suggested_name)
        )
        return Path(chosen) if chosen else None

    return ask


def install_hooks(
    browser_view: Any, loads: PageLoads, on_conversation: Callable[[str | None], None]
) -> Callable[[], None]:
    """Connect the hooks to pywebview's Qt window (`window.native`); GUI thread only.

    Returns a function, callable from any thread, that brings the window to the front.
    """
    connect_page_hooks(browser_view, loads, on_conversation)
    return _front_raiser(browser_view)


def record_load(loads: PageLoads, info: Any) -> None:
    """Tell `loads` of one of Qt's load reports (a `QWebEngineLoadingInfo`).

    The report's own URL is the page that finished; `page.url()` read at that moment could
    already name the next page asked for. The status is matched by its name so that the
    decision can be driven without Qt in the tests (tests/test_desktop_page_loads.py checks
    that the names are Qt's).
    """
    status = info.status().name
    if status == LOAD_SUCCEEDED and not info.isErrorPage():
        loads.load_succeeded(info.url().toString())
    elif status == LOAD_STARTED:
        loads.load_started()
    else:  # failed, stopped, or an error page
        loads.load_failed()


def connect_page_hooks(
    browser_view: Any, loads: PageLoads, on_conversation: Callable[[str | None], None]
) -> None:
    """Downloads, the window's loads and the open conversation (duck-typed for tests)."""
    page = browser_view.webview.page()
    ask = qt_save_dialog(browser_view)

    @shielded
    def on_download(download: Any) -> None:
        handle_download(download, ask)

    @shielded
    def on_result(ticket: int, value: object) -> None:
        # An answer can arrive after the page it was asked of has gone: the window's own
        # starting page (no storage, so "none") answering after the app loaded would
        # otherwise forget the conversation the app reopened.
        if loads.answer_counts(ticket):
            on_conversation(conversation_from_storage(value))

    @shielded
    def read_current(*_: object) -> None:
        # Only the app's page knows the open conversation; the starting page the window
        # shows while the server starts has none to report.
        ticket = loads.read_ticket()
        if ticket is not None:
            # Fetched each time: pywebview deletes the page while the window closes, and
            # the title can still change during that teardown.
            browser_view.webview.page().runJavaScript(
                READ_CURRENT_CONVERSATION, lambda value: on_result(ticket, value)
            )

    @shielded
    def on_loading_changed(info: Any) -> None:
        record_load(loads, info)
        read_current()

    page.profile().downloadRequested.connect(on_download)
    # The UI sets the document title on every conversation switch, and a load finishing
    # covers the first page; both are cheap to answer (one localStorage read).
    browser_view.webview.titleChanged.connect(read_current)
    page.loadingChanged.connect(on_loading_changed)


def _front_raiser(browser_view: Any) -> Callable[[], None]:
    """A thread-safe "raise this window", delivered to the GUI thread by a queued signal.

    pywebview's own route (toggling "always on top") changes the window flags, which
    makes Qt destroy and recreate the native window; raising and activating does not.
    """
    from PyQt6.QtCore import QObject, Qt, pyqtSignal

    class Raiser(QObject):
        requested = pyqtSignal()

    @shielded
    def bring_to_front() -> None:
        if browser_view.isMinimized():
            browser_view.showNormal()
        browser_view.show()
        browser_view.raise_()
        browser_view.activateWindow()

    raiser = Raiser(browser_view)  # parented: lives exactly as long as the window
    # PyQt's stubs leave out `connect`'s second argument, the connection type.
    raiser.requested.connect(bring_to_front, Qt.ConnectionType.QueuedConnection)  # pyright: ignore[reportCallIssue]
    return raiser.requested.emit
