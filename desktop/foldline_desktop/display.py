"""Can this machine show a Qt window? If not, why not, and which `apt-get` line fixes it.

Two things can stop the window: no display at all (a server, an SSH session, CI), and a
display without the system libraries Qt WebEngine links against (a minimal Debian). The
second is nasty: an ImportError is the lucky case, but a missing `libxcb-cursor0` makes
Qt abort the whole process from inside its platform plugin, where Python cannot catch
it. So the probe also loads the X11 platform plugin with `dlopen` first, which fails
politely with the name of the missing library instead.
"""

from __future__ import annotations

import ctypes
import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

# The Debian packages Qt WebEngine needs on a minimal Debian 12 (the supported platform); keep this
# list and QT_APT_PACKAGES in desktop/install.sh identical (a test compares them).
QT_APT_PACKAGES: tuple[str, ...] = (
    "libgl1",
    "libegl1",
    "libfontconfig1",
    "libglib2.0-0",
    "libdbus-1-3",
    "libnss3",
    "libasound2",
    "libxkbcommon-x11-0",
    "libxcb-cursor0",
    "libxcb-icccm4",
    "libxcb-image0",
    "libxcb-keysyms1",
    "libxcb-randr0",
    "libxcb-render-util0",
    "libxcb-shape0",
    "libxcb-xkb1",
    "libxcomposite1",
    "libxdamage1",
    "libxrandr2",
    "libxtst6",
    "libxkbfile1",
)

INSTALL_HINT = "sudo apt-get install -y " + " ".join(QT_APT_PACKAGES)


def has_display(environ: Mapping[str, str], platform: str = sys.platform) -> bool:
    """True when a window could be shown: always on macOS and Windows, else X11 or Wayland."""
    if platform in ("darwin", "win32"):
        return True
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


@dataclass(frozen=True)
class QtProblem:
    """Why the Qt window cannot open: `detail` is the loader's own message."""

    detail: str
    fix: str

    def one_line(self) -> str:
        return f"the desktop window is unavailable ({self.detail}); to fix: {self.fix}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _xcb_plugin_path() -> Path | None:
    """The X11 platform plugin shipped in the PyQt6-Qt6 wheel, if that wheel is installed."""
    try:
        qt_package = importlib.import_module("PyQt6")
    except ImportError:
        return None
    for root in qt_package.__path__:
        plugin = Path(root) / "Qt6" / "plugins" / "platforms" / "libqxcb.so"
        if plugin.exists():
            return plugin
    return None


def x_display_problem(display: str) -> str | None:
    """None when an X server accepts a connection on `display`; otherwise why not.

    Qt aborts the process when it cannot connect (a stale `DISPLAY` in an SSH session, a
    stopped Xvfb), so ask libxcb first: it reports the failure as a value.
    """
    try:
        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError as error:
        return _first_line(error)
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.restype = ctypes.c_int
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.restype = None
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)
    # xcb_connect always returns a connection object, in error or not; it must be freed.
    failed = xcb.xcb_connection_has_error(connection)
    xcb.xcb_disconnect(connection)
    return f"cannot connect to the X display {display}" if failed else None


def probe_qt(
    environ: Mapping[str, str],
    import_module: Callable[[str], object] = importlib.import_module,
    load_library: Callable[[str], object] = ctypes.CDLL,
    display_problem: Callable[[str], str | None] = x_display_problem,
) -> QtProblem | None:
    """None when the Qt WebEngine window can be created; otherwise what is missing.

    The importer, the library loader and the display check are parameters so tests can
    stand in for a machine that lacks a library.
    """
    x_display = environ.get("DISPLAY")
    if sys.platform.startswith("linux") and x_display and not environ.get("WAYLAND_DISPLAY"):
        problem = display_problem(x_display)
        if problem is not None:
            fix = (
                INSTALL_HINT if ".so" in problem else "check that DISPLAY names a running X server"
            )
            return QtProblem(problem, fix)
    for module in ("webview", "qtpy", "PyQt6.QtWidgets", "PyQt6.QtWebEngineWidgets"):
        try:
            import_module(module)
        except ImportError as error:
            if "shared object" in str(error) or ".so" in str(error):
                return QtProblem(_first_line(error), INSTALL_HINT)
            return QtProblem(_first_line(error), 'reinstall with `.venv/bin/pip install -e "."`')
    if sys.platform.startswith("linux") and environ.get("DISPLAY"):
        plugin = _xcb_plugin_path()
        if plugin is not None:
            try:
                load_library(str(plugin))
            except OSError as error:
                return QtProblem(_first_line(error), INSTALL_HINT)
    return None
