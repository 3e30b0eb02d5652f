"""The in-process server behind the window: started on loopback, ready when healthy.

The window must not open on a server that is not answering yet (the user would see a
connection error page), so `start_local_server` returns only after `GET /api/health`
answers 200, and stops the server again if it never does.
"""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from foldline_desktop.request_log import RequestLog
from foldline_desktop.starting_page import OPENING_DATABASE, SERVER_ANSWERING

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
HEALTH_TIMEOUT_SECONDS = 120.0
"""How long a started server may take to answer its first health check: generous, since
a loaded machine can take many seconds, and a healthy start must not be given up."""


class RunningServerLike(Protocol):
    """What `foldline.server.runner.start_server_in_thread` returns."""

    url: str
    port: int

    def stop(self) -> None: ...


class ServerDidNotStart(RuntimeError):
    """The server thread started but `/api/health` never answered."""


def _direct_opener() -> urllib.request.OpenerDirector:
    # An http_proxy in the environment must not swallow requests to our own loopback server.
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def server_is_healthy(base_url: str, timeout: float = 1.0) -> bool:
    try:
        with _direct_opener().open(f"{base_url.rstrip('/')}/api/health", timeout=timeout) as reply:
            body = json.loads(reply.read().decode("utf-8"))
            return reply.status == 200 and body.get("status") == "ok"
    except (OSError, ValueError, urllib.error.URLError):
        return False


def wait_until_healthy(
    base_url: str,
    timeout: float = HEALTH_TIMEOUT_SECONDS,
    is_healthy: Callable[[str], bool] = server_is_healthy,
) -> bool:
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        if is_healthy(base_url):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        # Back off gently: the first answers usually come within ~100 ms.
        delay = min(delay * 2, 0.2)


def _bind_preferred(preferred_port: int | None) -> socket.socket:
    """A listening loopback socket, on the remembered port when it is still free."""
    from foldline.server.runner import bind_socket

    if preferred_port:
        try:
            return bind_socket(LOOPBACK, preferred_port)
        except OSError as error:
            logger.info("port %s is taken (%s); using a free one", preferred_port, error)
    return bind_socket(LOOPBACK, 0)


@dataclass(frozen=True)
class LocalServer:
    """The running server and the in-memory record of the requests it answered."""

    running: RunningServerLike
    requests: RequestLog

    @property
    def url(self) -> str:
        return self.running.url

    @property
    def port(self) -> int:
        return self.running.port

    def stop(self) -> None:
        self.running.stop()


def _say_starting(seconds: float, stage: str) -> None:
    # A slow machine's start is shown as one (the terminal and the log), never cut off.
    print(f"Foldline is still starting ({seconds:.0f} s): waiting for {stage}", flush=True)


def _no_stage(stage: str) -> None:
    del stage


def start_local_server(
    data_dir: Path,
    token: str,
    preferred_port: int | None,
    on_stage: Callable[[str], None] = _no_stage,
) -> LocalServer:
    """Build the app and serve it on loopback; returns once `/api/health` answers.

    `on_stage` hears what the start waits for each time that changes (the window's
    starting page shows it): the database, the server's own stages, its first answer."""
    from foldline.server.app import create_app
    from foldline.server.launch import allowed_hosts_for
    from foldline.server.runner import start_server_in_thread

    sock = _bind_preferred(preferred_port)
    port = sock.getsockname()[1]
    try:
        # The app opens the store as it is built: the database is checked and migrated.
        on_stage(OPENING_DATABASE)
        app = create_app(
            data_dir=data_dir, token=token, allowed_hosts=allowed_hosts_for(LOOPBACK, port)
        )
        requests = RequestLog(app)
        server = start_server_in_thread(
            requests, LOOPBACK, port, sock=sock, on_wait=_say_starting, on_stage=on_stage
        )
    except Exception as error:
        sock.close()
        raise ServerDidNotStart(f"could not start the server: {error}") from error
    on_stage(SERVER_ANSWERING)
    if wait_until_healthy(server.url):
        return LocalServer(server, requests)
    server.stop()
    raise ServerDidNotStart(
        f"the server at {server.url} did not answer within {HEALTH_TIMEOUT_SECONDS:.0f} s"
    )
