"""`request_close` (the close button of the tests and benchmarks) is never lost.

The X server closes a client whose socket has hung up without reading what it still
had to read (its poll loop treats the hang-up as an error). A close sent with a flush
and the connection closed at once was therefore dropped now and then, 11% of the time
here under load, and the window then "did not exit" in the startup benchmark (a few
percent of launches): the app never heard of that close. A round trip before closing
the connection makes the server handle the event first.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from foldline_desktop.xvfb import VirtualDisplay, request_close

pytestmark = pytest.mark.e2e

CLOSES = 200


@pytest.fixture
def display() -> Iterator[VirtualDisplay]:
    with VirtualDisplay() as virtual:
        yield virtual


def test_every_close_reaches_the_window(display: VirtualDisplay) -> None:
    from Xlib import X
    from Xlib import display as xdisplay

    owner = xdisplay.Display(display.name)
    try:
        screen = owner.screen()
        window = screen.root.create_window(0, 0, 10, 10, 0, screen.root_depth)
        window.map()
        owner.sync()
        for _ in range(CLOSES):
            request_close(display.name, window.id)
        received = 0
        deadline = time.monotonic() + 10
        while received < CLOSES and time.monotonic() < deadline:
            while owner.pending_events():
                if owner.next_event().type == X.ClientMessage:
                    received += 1
            time.sleep(0.01)
        assert received == CLOSES
    finally:
        owner.close()
