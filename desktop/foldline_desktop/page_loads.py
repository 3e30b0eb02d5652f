"""Which page the window shows, told only by Qt's own reports of the loads it made.

The window shows pages of its own first (the starting page, replaced at each stage) and
then the app from its server. Two things depend on which of them is shown, and both used
to read the window's current URL at the moment they were asked, which races the loads:

- the app's page counts as loaded (the `status` command's `loaded`) when a load of the
  app's URL has finished. pywebview's own "loaded" event can come while the window still
  names the page before, or name the app while a starting page is still loading (Qt's
  `page.url()` shows a navigation's URL as soon as it is asked for);
- the open conversation is read from the app's page only. The starting page has none, and
  its late answer of "none" must not be taken for the app's.

So `PageLoads` is told of each load as Qt reports it (`QWebEnginePage.loadingChanged`,
whose report carries the URL of the load that finished, not whatever the window names by
then), and decides from those reports alone. It holds no Qt object, so the tests feed it
every order of events directly. Its methods may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)


def same_origin(url: str, origin: str) -> bool:
    """True when `url` is served by `origin` (scheme, host and port all equal).

    Compared as parts, not as a prefix: `http://127.0.0.1:80` is no prefix of the app's
    page at `http://127.0.0.1:8000/`.
    """
    page, app = urlsplit(url), urlsplit(origin)
    return (page.scheme, page.netloc) == (app.scheme, app.netloc) and page.scheme in (
        "http",
        "https",
    )


class PageLoads:
    """The window's loads as Qt reported them: is the app shown, has it ever loaded.

    A conversation read is asked of the page with a ticket (`read_ticket`); its answer
    counts only if no load was reported since (`answer_counts`). Qt does not report the
    start of every load (a navigation that replaces one still loading may only report its
    end), so any report at all, not only a start, makes an older question stale.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._app_origin: str | None = None
        self._showing_app = False
        self._app_loaded = False
        # Bumped by every report of a load: a ticket from before it is stale.
        self._reports = 0

    def app_opened(self, server_url: str) -> None:
        """The window is asked to load the app from `server_url` (before it loads it)."""
        with self._lock:
            self._app_origin = server_url

    def load_started(self) -> None:
        """A load began: until one finishes, the window shows no page to ask."""
        with self._lock:
            self._reports += 1
            self._showing_app = False

    def load_failed(self) -> None:
        """A load failed or was stopped: the window shows an error page or a half page."""
        with self._lock:
            self._reports += 1
            self._showing_app = False

    def load_succeeded(self, url: str) -> None:
        """A load of `url` finished: the window now shows that page."""
        with self._lock:
            self._reports += 1
            origin = self._app_origin
            self._showing_app = origin is not None and same_origin(url, origin)
            first = self._showing_app and not self._app_loaded
            self._app_loaded = self._app_loaded or self._showing_app
        if first:
            # The log shows when the app became usable, which is what a slow start is read
            # from. The page's URL is not logged: its fragment may still hold the token.
            logger.info("window page loaded from %s", origin)

    @property
    def showing_app(self) -> bool:
        """The last load reported was the app's, and it finished."""
        with self._lock:
            return self._showing_app

    @property
    def app_loaded(self) -> bool:
        """The app's page has finished loading at least once."""
        with self._lock:
            return self._app_loaded

    def read_ticket(self) -> int | None:
        """A ticket to ask the shown page for its conversation; None unless it is the app."""
        with self._lock:
            return self._reports if self._showing_app else None

    def answer_counts(self, ticket: int) -> bool:
        """The answer to the question asked with `ticket` comes from the app's page: no
        load was reported since it was asked."""
        with self._lock:
            return self._showing_app and ticket == self._reports
