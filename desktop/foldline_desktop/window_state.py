"""What the desktop shell remembers between launches: `<data-dir>/window.json`.

The file holds the window's size and position, the last conversation the page opened,
and the port the server last listened on. The port matters because the page's origin is
`http://127.0.0.1:<port>`: reusing it keeps the page's localStorage (drafts, UI
preferences) across launches, which a fresh random port would silently lose.

A missing, unreadable or hand-mangled file is never fatal: each field falls back to its
default on its own, so one bad value does not cost the user the rest.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

WINDOW_STATE_FILE = "window.json"
DEFAULT_WIDTH = 1200
DEFAULT_HEIGHT = 800
# Smaller than this and the sidebar and the chat no longer fit side by side.
MIN_WIDTH = 480
MIN_HEIGHT = 360
# Anything larger than this is a corrupted file, not a real monitor.
MAX_EDGE = 16384
# Conversation ids are short opaque strings; a cap keeps a corrupted file from
# injecting an arbitrarily long value into the URL fragment.
MAX_CONVERSATION_ID_LENGTH = 128


@dataclass(frozen=True)
class WindowState:
    """The remembered window; `x`/`y` are None until the window has been placed once."""

    width: int = DEFAULT_WIDTH
    height: int = DEFAULT_HEIGHT
    x: int | None = None
    y: int | None = None
    maximized: bool = False
    last_conversation_id: str | None = None
    last_port: int | None = None

    def with_geometry(self, x: int, y: int, width: int, height: int) -> WindowState:
        return replace(self, x=x, y=y, width=width, height=height)


@dataclass(frozen=True)
class Rect:
    """A rectangle in global screen coordinates (a screen's usable area, or a window)."""

    x: int
    y: int
    width: int
    height: int

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height


def place_window(state: WindowState, screens: Sequence[Rect]) -> Rect:
    """Where the window opens, given the screens' usable areas (the primary one first).

    The remembered place is kept when its top-left corner is on a screen, with the size
    shrunk to that screen and the window pulled fully onto it. Otherwise (first run, or a
    monitor unplugged since) the window is centred on the primary screen: a window
    opened off-screen is one the user cannot reach.
    """
    if not screens:
        return Rect(state.x or 0, state.y or 0, state.width, state.height)
    if state.x is not None and state.y is not None:
        for screen in screens:
            if screen.contains(state.x, state.y):
                width = min(state.width, screen.width)
                height = min(state.height, screen.height)
                x = min(state.x, screen.x + screen.width - width)
                y = min(state.y, screen.y + screen.height - height)
                return Rect(x, y, width, height)
    primary = screens[0]
    width = min(state.width, primary.width)
    height = min(state.height, primary.height)
    return Rect(
        primary.x + (primary.width - width) // 2,
        primary.y + (primary.height - height) // 2,
        width,
        height,
    )


def _int_in_range(value: Any, low: int, high: int) -> int | None:
    # bool is an int subclass; `true` in the JSON is a mistake, not a size.
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return None


def state_from_json(data: Any) -> WindowState:
    """A `WindowState` from parsed JSON, keeping each valid field and defaulting the rest."""
    if not isinstance(data, dict):
        return WindowState()
    default = WindowState()
    width = _int_in_range(data.get("width"), MIN_WIDTH, MAX_EDGE) or default.width
    height = _int_in_range(data.get("height"), MIN_HEIGHT, MAX_EDGE) or default.height
    x = _int_in_range(data.get("x"), -MAX_EDGE, MAX_EDGE)
    y = _int_in_range(data.get("y"), -MAX_EDGE, MAX_EDGE)
    if x is None or y is None:
        x = y = None
    maximized = data.get("maximized") is True
    conversation = data.get("last_conversation_id")
    if not (
        isinstance(conversation, str)
        and 0 < len(conversation) <= MAX_CONVERSATION_ID_LENGTH
        and conversation.isprintable()
    ):
        conversation = None
    # Ports below 1024 need privileges; a remembered one there is corrupt.
    port = _int_in_range(data.get("last_port"), 1024, 65535)
    return WindowState(
        width=width,
        height=height,
        x=x,
        y=y,
        maximized=maximized,
        last_conversation_id=conversation,
        last_port=port,
    )


def load_window_state(data_dir: Path) -> WindowState:
    path = data_dir / WINDOW_STATE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return WindowState()
    except OSError as error:
        logger.warning("could not read %s: %s", path, error)
        return WindowState()
    try:
        return state_from_json(json.loads(text))
    except json.JSONDecodeError as error:
        logger.warning("ignoring malformed %s: %s", path, error)
        return WindowState()


def save_window_state(data_dir: Path, state: WindowState) -> None:
    """Write atomically: a crash while saving leaves the previous file, never half of one."""
    path = data_dir / WINDOW_STATE_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=".window-", suffix=".json", dir=data_dir)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(asdict(state), handle, indent=2)
            handle.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
