"""The window's own pages while the server starts: what it waits for, or why it stopped.

The window opens at once, before the server answers, so a slow machine shows that the app
is starting instead of nothing. Its page is an HTML string of its own (no network, no
file): what the start waits for, and a count of the seconds it has taken, which the
page's one small script keeps going between two stages. A start given up shows why,
with where the log is, in the same window.

`StartStages` turns the start's reports into pages: it shows a stage once, when it
changes, so the page is not reloaded every few seconds for the same stage.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from pathlib import Path

STARTING_TITLE = "Foldline"
"""The same title as the app's window: a second launch and the tests find it by it."""

OPENING_DATABASE = "the database to open (it is checked, and migrated when needed)"
SERVER_ANSWERING = "the server's first answer"

_STYLE = """
html, body { margin: 0; height: 100%; background: #FFFFFF; color: #1f2328;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { display: flex; flex-direction: column; justify-content: center; align-items: center;
  height: 100%; padding: 0 2rem; box-sizing: border-box; text-align: center; }
h1 { font-size: 1.4rem; font-weight: 600; margin: 0 0 0.75rem; }
p { margin: 0.25rem 0; max-width: 40rem; }
.stage { color: #1f2328; }
.quiet { color: #59636e; font-size: 0.9rem; }
.why { white-space: pre-wrap; text-align: left; background: #f6f8fa; border-radius: 6px;
  padding: 0.75rem 1rem; margin: 0.75rem 0; font: 13px/1.45 ui-monospace, monospace; }
"""

_COUNTER = """
<script>
  const counter = document.getElementById("seconds");
  const shownAt = Date.now() - Number(counter.dataset.seconds) * 1000;
  setInterval(() => {
    counter.textContent = String(Math.floor((Date.now() - shownAt) / 1000));
  }, 1000);
</script>
"""


def _page(body: str, script: str = "") -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{STARTING_TITLE}</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main>{script}</body></html>"
    )


def starting_html(stage: str, seconds: float) -> str:
    """The page while the start waits for `stage`, `seconds` after it began."""
    whole = int(seconds)
    return _page(
        "<h1>Foldline is starting…</h1>"
        f'<p class="stage" id="stage">Waiting for {html.escape(stage)}</p>'
        f'<p class="quiet"><span id="seconds" data-seconds="{whole}">{whole}</span> s so far. '
        "A busy or slow computer can take a while; the app opens here when it is ready.</p>",
        _COUNTER,
    )


def stopped_html(reason: str, log_file: Path) -> str:
    """The page of a start that was given up: why, and where the log is."""
    return _page(
        "<h1>Foldline could not start</h1>"
        f'<p class="why" id="why">{html.escape(reason)}</p>'
        f'<p class="quiet">The log has the details: {html.escape(str(log_file))}</p>'
        '<p class="quiet">Close this window and start Foldline again; if it stops the same '
        "way, <code>foldline doctor</code> checks the database.</p>"
    )


class StartStages:
    """What the start waits for, shown in the window once per change of stage.

    `show` receives the page's HTML; the stages come from the start's thread (the
    runner's stage watch, the health wait), in the order they happen.
    """

    def __init__(
        self, show: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._show = show
        self._clock = clock
        self._began = clock()
        self._lock = threading.Lock()
        self._stage: str | None = None

    @property
    def stage(self) -> str | None:
        """The stage shown last (None before the first)."""
        with self._lock:
            return self._stage

    def waiting_for(self, stage: str) -> None:
        """The start now waits for `stage`; the page changes only when the stage does."""
        with self._lock:
            if stage == self._stage:
                return
            self._stage = stage
        self._show(starting_html(stage, self._clock() - self._began))
