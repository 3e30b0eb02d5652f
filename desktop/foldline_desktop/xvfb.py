"""A virtual X display for the desktop tests and the start-up benchmark.

`VirtualDisplay` runs Debian's `Xvfb` on a display number it picks itself
(`-displayfd`), so parallel runs never collide. The rest talks X11 through python-xlib
(a test dependency) exactly as a window manager or a user would: find a top-level window
by title, read its geometry, ask it to close with `WM_DELETE_WINDOW` (what the title
bar's close button sends), and grab the screen's pixels for a screenshot.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCREEN_WIDTH = 1280
SCREEN_HEIGHT = 800


class XvfbUnavailable(RuntimeError):
    """Xvfb is not installed or did not start."""


class VirtualDisplay:
    """`with VirtualDisplay() as display:` gives `display.name` such as `:3`."""

    def __init__(self, width: int = SCREEN_WIDTH, height: int = SCREEN_HEIGHT) -> None:
        self.width = width
        self.height = height
        self.name = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> None:
        executable = shutil.which("Xvfb")
        if executable is None:
            raise XvfbUnavailable("Xvfb is not installed (bash desktop/install.sh --test)")
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                [
                    executable,
                    "-displayfd",
                    str(write_end),
                    "-screen",
                    "0",
                    f"{self.width}x{self.height}x24",
                    "-nolisten",
                    "tcp",
                    # Without it the server resets whenever its last client disconnects,
                    # and a client connecting during the reset is refused.
                    "-noreset",
                ],
                pass_fds=(write_end,),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            os.close(write_end)
            write_end = -1
            number = _read_display_number(read_end, timeout)
        finally:
            if write_end != -1:
                os.close(write_end)
            os.close(read_end)
        if number is None:
            self.stop()
            raise XvfbUnavailable("Xvfb did not report a display number")
        self.name = f":{number}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(5)
            self._process = None

    def __enter__(self) -> VirtualDisplay:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _read_display_number(read_end: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    collected = b""
    os.set_blocking(read_end, False)
    while time.monotonic() < deadline:
        try:
            chunk = os.read(read_end, 64)
        except BlockingIOError:
            time.sleep(0.02)
            continue
        if not chunk:
            break
        collected += chunk
        if collected.endswith(b"\n"):
            return int(collected.strip())
    return None


@dataclass(frozen=True)
class WindowInfo:
    window_id: int
    title: str
    x: int
    y: int
    width: int
    height: int


def _open(display_name: str) -> Any:
    from Xlib import display as xdisplay

    return xdisplay.Display(display_name)


def _title(connection: Any, window: Any) -> str:
    utf8_name = window.get_full_property(
        connection.intern_atom("_NET_WM_NAME"), connection.intern_atom("UTF8_STRING")
    )
    if utf8_name is not None and utf8_name.value:
        value = utf8_name.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    name = window.get_wm_name()
    if isinstance(name, bytes):
        return name.decode("latin-1")
    return name or ""


def list_windows(display_name: str) -> list[WindowInfo]:
    """Mapped top-level windows (direct children of the root window) with their titles."""
    from Xlib import X
    from Xlib.error import XError

    connection = _open(display_name)
    try:
        root = connection.screen().root
        windows: list[WindowInfo] = []
        for child in root.query_tree().children:
            try:
                if child.get_attributes().map_state != X.IsViewable:
                    continue
                geometry = child.get_geometry()
                position = root.translate_coords(child, 0, 0)
                windows.append(
                    WindowInfo(
                        window_id=child.id,
                        title=_title(connection, child),
                        x=position.x,
                        y=position.y,
                        width=geometry.width,
                        height=geometry.height,
                    )
                )
            except XError:
                # The window went away while we looked at it.
                continue
        return windows
    finally:
        connection.close()


def wait_for_window(display_name: str, title: str, timeout: float) -> WindowInfo | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for window in list_windows(display_name):
            if window.title == title:
                return window
        time.sleep(0.1)
    return None


def request_close(display_name: str, window_id: int) -> None:
    """Send `WM_DELETE_WINDOW`, as a window manager does when the user clicks close."""
    from Xlib import X
    from Xlib.protocol import event

    connection = _open(display_name)
    try:
        window = connection.create_resource_object("window", window_id)
        protocols = connection.intern_atom("WM_PROTOCOLS")
        delete = connection.intern_atom("WM_DELETE_WINDOW")
        message = event.ClientMessage(
            window=window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])
        )
        window.send_event(message, event_mask=X.NoEventMask)
        # A round trip, not a flush: the server has handled the event before this
        # connection closes.
        connection.sync()
    finally:
        connection.close()


@dataclass(frozen=True)
class Screenshot:
    width: int
    height: int
    rgb: bytes

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        offset = (y * self.width + x) * 3
        red, green, blue = self.rgb[offset : offset + 3]
        return red, green, blue

    def crop(self, x: int, y: int, width: int, height: int) -> Screenshot:
        x0, y0 = max(x, 0), max(y, 0)
        x1, y1 = min(x + width, self.width), min(y + height, self.height)
        rows = [
            self.rgb[(row * self.width + x0) * 3 : (row * self.width + x1) * 3]
            for row in range(y0, y1)
        ]
        return Screenshot(max(x1 - x0, 0), max(y1 - y0, 0), b"".join(rows))

    def distinct_colors(self) -> int:
        return len({self.rgb[i : i + 3] for i in range(0, len(self.rgb), 3)})

    def luminance_stddev(self) -> float:
        count = self.width * self.height
        if count == 0:
            return 0.0
        values = [
            (299 * self.rgb[i] + 587 * self.rgb[i + 1] + 114 * self.rgb[i + 2]) / 1000
            for i in range(0, len(self.rgb), 3)
        ]
        mean = sum(values) / count
        return (sum((value - mean) ** 2 for value in values) / count) ** 0.5

    def write_png(self, path: Path) -> None:
        """A plain 8-bit RGB PNG, written without an imaging library."""
        raw = b"".join(
            b"\x00" + self.rgb[row * self.width * 3 : (row + 1) * self.width * 3]
            for row in range(self.height)
        )

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        path.write_bytes(
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 6))
            + chunk(b"IEND", b"")
        )


def take_screenshot(display_name: str) -> Screenshot:
    """The whole screen, read from the X server (24-bit TrueColor, as Xvfb runs it)."""
    from Xlib import X

    connection = _open(display_name)
    try:
        screen = connection.screen()
        width, height = screen.width_in_pixels, screen.height_in_pixels
        image = screen.root.get_image(0, 0, width, height, X.ZPixmap, 0xFFFFFFFF)
        data = image.data if isinstance(image.data, bytes) else bytes(image.data, "latin-1")
    finally:
        connection.close()
    # ZPixmap at depth 24 is 32 bits per pixel, little-endian BGRX.
    rgb = bytearray(width * height * 3)
    rgb[0::3] = data[2::4]
    rgb[1::3] = data[1::4]
    rgb[2::3] = data[0::4]
    return Screenshot(width, height, bytes(rgb))
