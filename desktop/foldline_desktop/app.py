"""`foldline` with no subcommand: the desktop window, or the browser when there is none.

The order matters for start-up time and for honest errors:

1. data dir, log file and `config.toml` (first run creates them);
2. no display → one line, then exactly `foldline serve`;
3. Qt cannot work (a missing library, or a DISPLAY with no X server behind it) → one line
   with the reason and the fix (the `apt-get` line for libraries), then serve;
4. another window already open on this data dir → raise it and exit 0;
5. open the window on its starting page and start the server on loopback beside it; the
   page shows what the start waits for, the app loads once `/api/health` answers, and a
   start given up says why in the window (the process then ends with status 1);
6. window closed (or SIGTERM) → stop the server (bounded by uvicorn's graceful-shutdown
   timeout), save the window state, release the lock, end the process (status 0)
   without waiting for Qt WebEngine's slow teardown.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import NoReturn

from foldline_desktop.display import has_display, probe_qt
from foldline_desktop.instance import (
    RAISE_COMMAND,
    STATUS_COMMAND,
    ControlListener,
    InstanceLock,
    InstanceRecord,
    ask_to_raise,
    read_instance_record,
)
from foldline_desktop.malloc_arenas import limit_malloc_arenas
from foldline_desktop.starting_page import OPENING_DATABASE, starting_html
from foldline_desktop.window import DesktopWindow, prepare_qt_environment
from foldline_desktop.window_start import WindowStart
from foldline_desktop.window_state import load_window_state, save_window_state

logger = logging.getLogger(__name__)

NO_DISPLAY_LINE = (
    "Foldline: no display (DISPLAY and WAYLAND_DISPLAY are unset); serving in the browser instead."
)


EXIT_DATA_DIR = 3
"""The data directory cannot be used (the same code as `foldline serve`)."""


def _prepare_data_dir(data_dir_option: str | None) -> Path:
    from foldline.config_toml import ensure_config
    from foldline.logging_setup import setup_logging
    from foldline.paths import prepare_data_dir

    data_dir = prepare_data_dir(data_dir_option)
    setup_logging(data_dir)
    ensure_config(data_dir)
    return data_dir


def _serve_in_browser(data_dir: Path) -> int:
    """Behave exactly as `foldline serve --data-dir DATA_DIR` with its defaults."""
    from foldline.server.launch import run_serve
    from foldline.server.serve_options import default_serve_options

    return run_serve(default_serve_options(data_dir))


def _hand_over_to_running_instance(data_dir: Path) -> int:
    record = read_instance_record(data_dir)
    if record is not None and ask_to_raise(record):
        print(f"Foldline is already open (pid {record.pid}); brought its window to the front.")
        return 0
    pid = f" (pid {record.pid})" if record is not None else ""
    print(
        f"Foldline is already running on {data_dir}{pid} but did not answer; "
        "close it first, or use another --data-dir.",
        file=sys.stderr,
    )
    return 1


def _run_window(data_dir: Path, lock: InstanceLock, started_at: float) -> int:
    from foldline.logging_setup import register_secret
    from foldline.server.security import resolve_token

    token = resolve_token()
    register_secret(token)
    state = load_window_state(data_dir)
    window = DesktopWindow(data_dir, token, state, starting_html(OPENING_DATABASE, 0))
    start = WindowStart(data_dir, token, state.last_port, window, started_at)

    def status() -> dict[str, object]:
        server = start.server
        return {
            "url": server.url if server is not None else None,
            "starting": start.stages.stage if server is None else None,
            "loaded": window.loaded,
            "conversation": window.state.last_conversation_id,
            "requests": [asdict(seen) for seen in server.requests.recent()] if server else [],
        }

    listener = ControlListener({RAISE_COMMAND: window.raise_window, STATUS_COMMAND: status})
    listener.start()
    lock.publish(InstanceRecord(os.getpid(), listener.port, listener.secret))
    # The server starts beside the window, which shows what the start waits for.
    start.begin()
    try:
        window.run()
    finally:
        listener.stop()
        server = start.server
        if server is not None:
            stop_started = time.monotonic()
            server.stop()
            logger.info("server stopped in %.2f s", time.monotonic() - stop_started)
        state = window.state
        if server is not None:
            state = replace(state, last_port=server.port)
        save_window_state(data_dir, state)
    return 0 if start.server is not None else 1


def run_desktop(args: argparse.Namespace) -> int:
    """Entry point of `foldline` without a subcommand; returns the process exit status."""
    from foldline.paths import DataDirUnusable

    started_at = time.monotonic()
    try:
        data_dir = _prepare_data_dir(getattr(args, "data_dir", None))
    except DataDirUnusable as error:
        print(f"Foldline: {error}", file=sys.stderr)
        return EXIT_DATA_DIR
    try:
        return _run_desktop_in(data_dir, started_at)
    except Exception:
        # The traceback still reaches the terminal; the log keeps it for a bug report.
        logger.exception("foldline stopped on an unexpected error")
        raise


def _run_desktop_in(data_dir: Path, started_at: float) -> int:
    if not has_display(os.environ):
        logger.info("no display; serving in the browser")
        print(NO_DISPLAY_LINE, flush=True)
        return _serve_in_browser(data_dir)

    # Before Qt and the server start their threads: arenas are made per thread.
    limit_malloc_arenas()
    prepare_qt_environment(os.environ, data_dir)
    problem = probe_qt(os.environ)
    if problem is not None:
        logger.warning("Qt unavailable: %s", problem.detail)
        print(f"Foldline: {problem.one_line()}; serving in the browser instead.", flush=True)
        return _serve_in_browser(data_dir)

    lock = InstanceLock(data_dir)
    if not lock.acquire():
        return _hand_over_to_running_instance(data_dir)
    try:
        status = _run_window(data_dir, lock, started_at)
    finally:
        lock.release()
    _exit_skipping_qt_teardown(status)


def _wait_for_threads(timeout: float) -> None:
    """Give short-lived helper threads (pywebview's event handlers) a moment to finish, and
    name any non-daemon thread still running: the process must not depend on one."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(deadline - time.monotonic(), 0))
    leftovers = [
        thread.name
        for thread in threading.enumerate()
        if thread is not threading.current_thread() and not thread.daemon and thread.is_alive()
    ]
    if leftovers:
        logger.warning("threads still running at exit: %s", ", ".join(leftovers))


def _exit_skipping_qt_teardown(status: int) -> NoReturn:
    """End the process now that everything is saved and stopped.

    Letting the interpreter finalize Qt WebEngine after the window has closed took 3-4 s
    (more under load), during which the app looks hung, and it has nothing left to save:
    the server has stopped, the store committed every write, `window.json` is written
    and the page's only storage key is covered by it. The browser's helper processes
    exit on their own when their parent's connection closes.
    """
    _wait_for_threads(timeout=1.0)
    logger.info("exiting")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
