"""The server's start beside the open window: its stages on the starting page, then the app.

The window no longer waits for the server (a slow machine showed nothing for many
seconds): it opens on its own page at once while this starts the server in a thread of
its own. Each stage the start reaches replaces the page's "waiting for" line; once
`/api/health` answers the window loads the app. A start given up (stuck for minutes, or
failed) shows why in the same window, and the terminal and the log say it too.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import Protocol

from foldline_desktop.server_handle import LocalServer, ServerDidNotStart, start_local_server
from foldline_desktop.starting_page import StartStages, stopped_html

logger = logging.getLogger(__name__)


class StartingWindow(Protocol):
    """What the start needs of the window (`DesktopWindow`; a stand-in in tests)."""

    def show_html(self, page: str) -> None: ...

    def open_app(self, server_url: str) -> None: ...


class WindowStart:
    """Starts the server for `window` in a daemon thread; `server` is set once it answers."""

    def __init__(
        self,
        data_dir: Path,
        token: str,
        preferred_port: int | None,
        window: StartingWindow,
        started_at: float,
    ) -> None:
        self._data_dir = data_dir
        self._token = token
        self._preferred_port = preferred_port
        self._window = window
        self._started_at = started_at
        self.stages = StartStages(window.show_html)
        self.server: LocalServer | None = None
        self.failure: str | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="foldline-start", daemon=True)

    def begin(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            server = start_local_server(
                self._data_dir, self._token, self._preferred_port, on_stage=self.stages.waiting_for
            )
        except ServerDidNotStart as error:
            self._stopped(str(error))
            return
        except Exception as error:
            # Not foreseen, but the window must still say so rather than wait forever.
            logger.exception("the start failed")
            self._stopped(f"{type(error).__name__}: {error}")
            return
        self.server = server
        logger.info(
            "server ready at %s after %.2f s", server.url, time.monotonic() - self._started_at
        )
        self.done.set()
        self._window.open_app(server.url)

    def _stopped(self, reason: str) -> None:
        self.failure = reason
        logger.error("%s", reason)
        print(f"Foldline could not start its server: {reason}", file=sys.stderr, flush=True)
        self.done.set()
        from foldline.logging_setup import log_file_path

        self._window.show_html(stopped_html(reason, log_file_path(self._data_dir)))
