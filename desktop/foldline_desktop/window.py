"""The pywebview window: its URL, geometry tracking, raising, and a graceful SIGTERM.

Everything here that talks to pywebview runs on the main thread (`webview.start` insists)
except the event handlers, which pywebview calls on short-lived threads; the geometry they
report is therefore kept under a lock and written to `window.json` only after the GUI loop
has returned.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import FrameType
from urllib.parse import quote

from foldline_desktop.page_loads import PageLoads
from foldline_desktop.qt_hooks import install_hooks
from foldline_desktop.window_state import Rect, WindowState, place_window

logger = logging.getLogger(__name__)

WINDOW_TITLE = "Foldline"
# The page's own background, so the window does not flash white before the CSS loads.
BACKGROUND_COLOR = "#FFFFFF"


def page_url(server_url: str, token: str, conversation_id: str | None) -> str:
    """The URL the window loads: the token and the conversation travel in the fragment.

    A fragment is never sent to the server, so neither the token nor the conversation id
    can appear in an access log; the page reads them and clears the fragment at once.
    """
    fragment = f"token={quote(token, safe='')}"
    if conversation_id:
        fragment += f"&c={quote(conversation_id, safe='')}"
    return f"{server_url.rstrip('/')}/#{fragment}"


QT_STORAGE_DIRS = {"XDG_DATA_HOME": "qt-data", "XDG_CACHE_HOME": "qt-cache"}
"""Where Qt writes under the data dir (inside `webview/`) instead of the home directory."""


def prepare_qt_environment(
    environ: dict[str, str] | os._Environ[str], data_dir: Path | None = None
) -> None:
    """Set what Qt WebEngine needs before it is imported.

    With `data_dir`, Qt's own storage (the default web profile's directory, its caches)
    goes under `<data-dir>/webview/` instead of `~/.local/share/foldline/QtWebEngine` and
    `~/.cache/foldline`: a launch with `--data-dir` leaves nothing of it elsewhere. The
    process' previous values are kept in `FOLDLINE_ORIGINAL_<NAME>` so that
    `restore_user_environment` can hand them back once the window exists (programs the
    app starts later, such as MCP servers, must see the person's own directories).
    """
    if data_dir is not None:
        for name, folder in QT_STORAGE_DIRS.items():
            environ.setdefault(f"FOLDLINE_ORIGINAL_{name}", environ.get(name, ""))
            environ[name] = str(data_dir / "webview" / folder)
    # Chromium refuses to start its sandbox as root (containers, CI): the renderer then
    # dies and the window stays blank. The flag is appended, never overwriting the user's.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        _add_chromium_flag(environ, "--no-sandbox")
    if sys.platform.startswith("linux") and not has_gpu_device():
        # Without a GPU, OpenGL would run on the CPU through Mesa's llvmpipe: it loads
        # LLVM and compiles shaders into the app's process (about 100 MB at rest under
        # Xvfb) to draw no faster than Chromium's own software compositor. So Qt gets no
        # OpenGL at all and Qt Quick (which hosts the page) draws in software. Values the
        # person set themselves are kept.
        environ.setdefault("QT_XCB_GL_INTEGRATION", "none")
        environ.setdefault("QT_QUICK_BACKEND", "software")
        _add_chromium_flag(environ, "--disable-gpu")
    if runs_without_sandbox(environ):
        # Without the sandbox a separate renderer process isolates nothing (it runs with
        # the app's own rights), yet it and the two zygotes it is forked from cost about
        # 40 MB of duplicated memory at rest. So Chromium runs in the app's process.
        _add_chromium_flag(environ, "--single-process")
    # pywebview otherwise tries GTK first and prints a traceback when it is missing.
    environ.setdefault("PYWEBVIEW_GUI", "qt")


def has_gpu_device(dev: Path = Path("/dev")) -> bool:
    """True when Linux exposes a GPU to this process: a render node
    (`/dev/dri/renderD*`), or NVIDIA's own driver (`/dev/nvidiactl`) without one."""
    if (dev / "nvidiactl").exists():
        return True
    try:
        return any(node.name.startswith("renderD") for node in (dev / "dri").iterdir())
    except OSError:
        return False


def runs_without_sandbox(environ: Mapping[str, str]) -> bool:
    """True when Qt WebEngine's Chromium will start without its sandbox."""
    return (
        "--no-sandbox" in environ.get("QTWEBENGINE_CHROMIUM_FLAGS", "").split()
        or environ.get("QTWEBENGINE_DISABLE_SANDBOX") == "1"
    )


def _add_chromium_flag(environ: dict[str, str] | os._Environ[str], flag: str) -> None:
    flags = environ.get("QTWEBENGINE_CHROMIUM_FLAGS", "")
    if flag not in flags.split():
        environ["QTWEBENGINE_CHROMIUM_FLAGS"] = f"{flags} {flag}".strip()


def restore_user_environment(environ: dict[str, str] | os._Environ[str]) -> None:
    """Undo the storage redirection of `prepare_qt_environment` (Qt has read it by now)."""
    for name in QT_STORAGE_DIRS:
        original = environ.pop(f"FOLDLINE_ORIGINAL_{name}", None)
        if original is None:
            continue
        if original:
            environ[name] = original
        else:
            environ.pop(name, None)


class DesktopWindow:
    """One window; `run()` blocks until the window is closed.

    The window opens at once on a page of its own (what the start waits for, see
    `starting_page`); `show_html` replaces it (a new stage, or why the start was given
    up) and `open_app` loads the app once its server answers. Both may be called from
    any thread at any time and never wait: the newest page asked for is the one the
    window gets, from a thread of the window's own once it is shown.
    """

    def __init__(self, data_dir: Path, token: str, state: WindowState, first_page: str) -> None:
        self._data_dir = data_dir
        self._token = token
        self._lock = threading.Lock()
        self._state = state
        # Qt reports moves while pywebview builds the window, before ours; the placement
        # must use what was remembered, not those.
        self._remembered = state
        self._window: object | None = None
        self._bring_to_front: Callable[[], None] | None = None
        self._page_reported_conversation = False
        # Which page the window shows, from Qt's reports of its loads (see page_loads).
        self._loads = PageLoads()
        # What the window should show: ("html", a page) or ("url", the app's URL). The
        # window's own thread loads it once the window is shown and while it is open.
        self._wanted: tuple[str, str] = ("html", first_page)
        self._shown = False
        self._closed = False
        self._page_changed = threading.Condition(self._lock)

    @property
    def state(self) -> WindowState:
        with self._lock:
            return self._state

    def remember_conversation(self, conversation_id: str | None) -> None:
        """Called with what the page reports; "none" counts only once it reported one.

        The page is read as soon as it loads, before its scripts have reopened the
        remembered conversation; taking that early "none" at its word would forget the
        conversation if the window were closed in that moment.
        """
        with self._lock:
            if conversation_id is None and not self._page_reported_conversation:
                return
            self._page_reported_conversation = True
            changed = self._state.last_conversation_id != conversation_id
            self._state = replace(self._state, last_conversation_id=conversation_id)
        if changed:
            logger.info("open conversation is now %s", conversation_id or "none")

    @property
    def loaded(self) -> bool:
        return self._loads.app_loaded

    def raise_window(self) -> None:
        """Bring the window to the front (a second `foldline` launch asked for it)."""
        bring_to_front = self._bring_to_front
        if self._window is None or bring_to_front is None:
            raise RuntimeError("the window is not open")
        bring_to_front()
        logger.info("raised the window for a second launch")

    def close(self) -> None:
        window = self._window
        if window is not None:
            window.destroy()  # type: ignore[attr-defined]

    def show_html(self, page: str) -> None:
        """Show `page` (a page of the window's own, no network) instead of the current one."""
        self._want(("html", page))

    def open_app(self, server_url: str) -> None:
        """Load the app from its server (which answers by now)."""
        # Known before the load is asked for, so its report is recognised as the app's.
        self._loads.app_opened(server_url)
        with self._lock:
            conversation = self._state.last_conversation_id
        self._want(("url", page_url(server_url, self._token, conversation)))

    def _want(self, page: tuple[str, str]) -> None:
        with self._page_changed:
            self._wanted = page
            self._page_changed.notify_all()

    def _next_page(self, shown: tuple[str, str]) -> tuple[str, str] | None:
        """The page to load once the window is shown and it differs from `shown`; None
        once the window is closed."""
        with self._page_changed:
            self._page_changed.wait_for(
                lambda: self._closed or (self._shown and self._wanted != shown)
            )
            return None if self._closed else self._wanted

    def _load_pages(self, window: object, shown: tuple[str, str]) -> None:
        """Give the window the newest page asked for, each time that changes.

        pywebview's `load_html` and `load_url` wait for the window to be shown, but give
        up after 20 s, which a slow machine's first window can take; and the caller (the
        server's start) must not wait for the window. So this thread does the waiting."""
        while (page := self._next_page(shown)) is not None:
            shown = page
            kind, value = page
            try:
                if kind == "url":
                    window.load_url(value)  # type: ignore[attr-defined]
                else:
                    window.load_html(value, base_uri="about:blank")  # type: ignore[attr-defined]
            except Exception as error:  # the window closing under the call
                logger.info("the window could not load its next page: %s", error)

    def run(self) -> None:
        import webview

        state = self.state
        with self._lock:
            first = self._wanted
        # A quick start may have the app ready before the window exists.
        kind, value = first
        window = webview.create_window(
            WINDOW_TITLE,
            url=value if kind == "url" else None,
            html=value if kind == "html" else None,
            width=state.width,
            height=state.height,
            # Placed on the GUI thread before it shows (see _on_before_show), in global
            # coordinates; pywebview's own x/y are relative to one screen.
            maximized=state.maximized,
            min_size=(480, 360),
            background_color=BACKGROUND_COLOR,
            text_select=True,
        )
        if window is None:
            raise RuntimeError("pywebview refused to create the window")
        self._window = window
        window.events.moved += self._on_moved
        window.events.resized += self._on_resized
        window.events.maximized += self._on_maximized
        window.events.restored += self._on_restored
        window.events.loaded += self._on_loaded
        window.events.shown += self._on_shown
        window.events.before_show += self._on_before_show
        window.events.closing += self._on_closing

        storage = self._data_dir / "webview"
        storage.mkdir(parents=True, exist_ok=True)
        previous_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        threading.Thread(
            target=self._load_pages, args=(window, first), name="window-pages", daemon=True
        ).start()
        try:
            webview.start(gui="qt", private_mode=False, storage_path=str(storage))
            logger.info("window closed")
        finally:
            with self._page_changed:
                self._closed = True
                self._page_changed.notify_all()
            signal.signal(signal.SIGTERM, previous_sigterm)
            self._window = None
            self._bring_to_front = None

    # pywebview event handlers (called on pywebview's threads).

    def _on_moved(self, x: int, y: int) -> None:
        with self._lock:
            if not self._state.maximized:
                self._state = self._state.with_geometry(x, y, self._state.width, self._state.height)

    def _on_resized(self, width: int, height: int) -> None:
        with self._lock:
            if not self._state.maximized:
                x = self._state.x if self._state.x is not None else 0
                y = self._state.y if self._state.y is not None else 0
                self._state = self._state.with_geometry(x, y, width, height)

    def _on_maximized(self) -> None:
        with self._lock:
            self._state = replace(self._state, maximized=True)

    def _on_restored(self) -> None:
        with self._lock:
            self._state = replace(self._state, maximized=False)

    def _on_loaded(self) -> None:
        # The web profile and its storage exist by now: Qt no longer needs the redirection.
        # Whether this was the app's page is not decided here: pywebview's "loaded" can come
        # while the window still names the page before (see page_loads).
        restore_user_environment(os.environ)

    def _on_before_show(self, window: object) -> None:
        # Runs on the GUI thread, after pywebview built its Qt window and before it shows.
        native = window.native  # type: ignore[attr-defined]
        self._bring_to_front = install_hooks(native, self._loads, self.remember_conversation)
        place = place_window(self._remembered, _usable_screen_areas())
        native.resize(place.width, place.height)
        native.move(place.x, place.y)

    def _on_closing(self) -> None:
        logger.info("window closing")

    def _on_shown(self) -> None:
        logger.info("window shown")
        with self._page_changed:
            self._shown = True
            self._page_changed.notify_all()

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        # Close through the window's own path so the server stops and the state is saved,
        # exactly as when the user clicks the close button.
        logger.info("received SIGTERM; closing the window")
        self.close()


def _usable_screen_areas() -> list[Rect]:
    """Each screen's area without panels and docks, the primary screen first."""
    from PyQt6.QtGui import QGuiApplication

    primary = QGuiApplication.primaryScreen()
    # False sorts first: the primary screen leads, the others keep their order.
    screens = sorted(QGuiApplication.screens(), key=lambda screen: screen != primary)
    areas = []
    for screen in screens:
        area = screen.availableGeometry()
        areas.append(Rect(area.x(), area.y(), area.width(), area.height()))
    return areas
