"""Running the app with uvicorn in a background thread (desktop shell, tests, `serve`).

The socket is bound before uvicorn starts, so port 0 yields a known free port without
a race, and the caller gets the URL back only once the server accepts connections.
A start has no fixed time limit that a slow machine could miss (a loaded laptop once
took over 15 s): the caller waits while the server thread lives, hears what it waits for
every few seconds, and only a start still not done after `STUCK_START_SECONDS` is given
up, with the stage it was stuck in.
`timeout_graceful_shutdown` bounds the stop: without it one open event stream kept
uvicorn alive for seconds after `should_exit`.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import uvicorn
from starlette.types import ASGIApp

log = logging.getLogger("foldline.server")

GRACEFUL_SHUTDOWN_SECONDS = 1
STUCK_START_SECONDS = 300.0
"""A start not done after five minutes is stuck, not slow: given up, saying where."""
WAIT_REPORT_SECONDS = 5.0
"""How often a caller hears that the start is still going, and what it waits for."""

clock: Callable[[], float] = time.monotonic
"""The clock a start is timed by (tests run it faster)."""

StartWaiting = Callable[[float, str], None]
"""Told (seconds so far, what the start waits for) while a start takes a while."""
StageChanged = Callable[[str], None]
"""Told what the start waits for, at once and again each time that changes (the
desktop window's starting page shows it)."""


def url_host(host: str) -> str:
    """The host as written in a URL: IPv6 literals in brackets."""
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]"
    except ValueError:
        pass
    return host


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: the OS picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio turns Nagle's algorithm off (TCP_NODELAY)
    # only on accepted sockets whose proto says TCP. With it on, a small answer written
    # as headers then body waited for the client's delayed ACK, ~40 ms per request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        # Same as uvicorn: a port left in TIME_WAIT by our previous run can be reused.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


@dataclass
class RunningServer:
    """A server running in a thread. `stop()` is idempotent and returns within ~2 s."""

    url: str
    host: str
    port: int
    server: uvicorn.Server = field(repr=False)
    thread: threading.Thread = field(repr=False)

    def stop(self, timeout: float = 5.0) -> None:
        # Streams that would stay open (pages watching a conversation) end first, so the
        # graceful shutdown does not wait for them.
        state = getattr(self.server.config.app, "state", None)
        before_stop = getattr(state, "before_stop", None)
        if callable(before_stop):
            before_stop()
        self.server.should_exit = True
        self.thread.join(timeout)
        if self.thread.is_alive():
            # Past the graceful timeout: close connections without waiting for them.
            self.server.force_exit = True
            self.thread.join(timeout)

    @property
    def running(self) -> bool:
        return self.thread.is_alive()


def make_uvicorn_server(app: ASGIApp) -> uvicorn.Server:
    """uvicorn configured so it never logs requests and never touches logging config.

    The access log is off: it would record every path and client, and nothing in a
    request should end up in a log file by default. `log_config=None` leaves logging to
    `foldline.logging_setup`, which scrubs secrets.
    """
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        server_header=False,
        # The app decides about proxies; uvicorn must not rewrite the client address.
        proxy_headers=False,
    )
    return uvicorn.Server(config)


def _run_until_stopped(server: uvicorn.Server, sock: socket.socket) -> None:
    try:
        server.run(sockets=[sock])
    except SystemExit:
        # uvicorn exits when the app's startup fails; in a thread that must not become an
        # unhandled exception. The caller sees the thread end and raises RuntimeError.
        log.error("the server stopped during startup")
    except OSError:
        # A start given up as stuck closes the socket while uvicorn may still be on its
        # way to listening on it; that late failure is the expected end of the thread.
        if not server.should_exit:
            raise
        log.info("a start given up as stuck ended when its socket was closed")


def startup_stage(server: uvicorn.Server) -> str:
    """What a start is waiting for, in words for the person."""
    if not server.config.loaded:
        return "loading the app"
    lifespan = getattr(server, "lifespan", None)
    startup = getattr(lifespan, "startup_event", None)
    if startup is None or not startup.is_set():
        return "the app's start-up (opening the database, checking and migrating it)"
    return "the server to listen"


def start_server_in_thread(
    app: ASGIApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    sock: socket.socket | None = None,
    startup_timeout: float = STUCK_START_SECONDS,
    on_wait: StartWaiting | None = None,
    on_stage: StageChanged | None = None,
) -> RunningServer:
    """Serve `app` on `host:port` (or on an already bound `sock`) from a daemon thread.

    Returns once the server accepts connections, however long a healthy start takes;
    `on_wait` hears every few seconds what it waits for, `on_stage` each new stage as
    soon as the start reaches it. Raises RuntimeError if it could
    not start (the thread ended) or is stuck (not started after `startup_timeout`,
    naming the stage), and OSError if the port cannot be bound.
    """
    sock = sock if sock is not None else bind_socket(host, port)
    bound_port = sock.getsockname()[1]
    server = make_uvicorn_server(app)
    thread = threading.Thread(
        target=_run_until_stopped,
        args=(server, sock),
        name=f"foldline-server-{bound_port}",
        daemon=True,
    )
    thread.start()
    began = clock()
    next_report = began + WAIT_REPORT_SECONDS
    stage_shown: str | None = None
    while not server.started:
        if on_stage is not None and (stage := startup_stage(server)) != stage_shown:
            stage_shown = stage
            on_stage(stage)
        if not thread.is_alive():
            sock.close()
            raise RuntimeError("the server thread stopped during startup (see the log)")
        now = clock()
        if now - began > startup_timeout:
            stage = startup_stage(server)
            server.should_exit = True
            thread.join(5)
            sock.close()
            raise RuntimeError(
                f"the server did not start within {startup_timeout:.0f} s: it was still "
                f"waiting for {stage} (see the log)"
            )
        if now >= next_report:
            next_report = now + WAIT_REPORT_SECONDS
            stage = startup_stage(server)
            log.info("still starting after %.0f s: waiting for %s", now - began, stage)
            if on_wait is not None:
                on_wait(now - began, stage)
        time.sleep(0.01)
    return RunningServer(
        url=f"http://{url_host(host)}:{bound_port}",
        host=host,
        port=bound_port,
        server=server,
        thread=thread,
    )
