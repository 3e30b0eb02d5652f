"""`foldline serve`: the headless server for a browser.

It prints exactly one line, the URL that opens the UI already signed in; the token is in
the URL *fragment*, which browsers never send to the server, so it cannot reach an access
log, a proxy or a Referer header. The token never appears anywhere else: it is
registered with the log redaction of `foldline.logging_setup`, and uvicorn's access log
is off.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import sys
import threading
from types import FrameType

from foldline.logging_setup import register_secret, setup_logging
from foldline.paths import DataDirUnusable, prepare_data_dir
from foldline.server.runner import bind_socket, start_server_in_thread, url_host
from foldline.server.security import loopback_hosts, resolve_token

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_DATA_DIR = 3
"""The data directory cannot be used (read-only, not ours, cannot be created)."""

WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts_for(host: str, port: int) -> list[str]:
    """The Host header values to accept when bound to `host:port`.

    Loopback: only the loopback names with this port. A specific remote address: those
    plus that address. A wildcard bind (0.0.0.0, ::) is reached under names we cannot
    know, so every Host is accepted there and the token is the only guard left; the
    start-up warning says so.
    """
    hosts = loopback_hosts(port)
    if is_loopback(host):
        return hosts
    if host in WILDCARD_HOSTS:
        return ["*"]
    return [*hosts, f"{url_host(host)}:{port}"]


def _say_starting(seconds: float, stage: str) -> None:
    # A slow start is shown as one, not taken for a failure; on stderr, so the one line
    # on stdout stays the address.
    print(
        f"Foldline is still starting ({seconds:.0f} s): waiting for {stage}",
        file=sys.stderr,
        flush=True,
    )


def open_url(host: str, port: int, token: str) -> str:
    """The URL to print: 127.0.0.1 for loopback and wildcard binds, else the bound host."""
    shown = "127.0.0.1" if host in WILDCARD_HOSTS or host.lower() == "localhost" else host
    return f"http://{url_host(shown)}:{port}/#token={token}"


def run_serve(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; returns the process exit code."""
    from foldline.server.app import create_app

    host: str = args.host
    if not is_loopback(host) and not args.allow_remote:
        print(
            f"foldline serve: refusing to listen on {host!r}, which is not a loopback "
            "address: anyone who can reach it could try the API. Use --allow-remote if "
            "you really mean it.",
            file=sys.stderr,
        )
        return EXIT_USAGE

    try:
        data_dir = prepare_data_dir(args.data_dir)
        log_path = setup_logging(data_dir)
    except DataDirUnusable as error:
        print(f"foldline serve: {error}", file=sys.stderr)
        return EXIT_DATA_DIR
    log = logging.getLogger("foldline.server")
    log.info("foldline serve starting on %s (data dir %s)", host, data_dir)
    token = resolve_token()
    register_secret(token)

    try:
        sock = bind_socket(host, args.port)
    except OSError as error:
        print(f"foldline serve: cannot listen on {host}:{args.port}: {error}", file=sys.stderr)
        return EXIT_FAILED
    port = sock.getsockname()[1]

    if not is_loopback(host):
        print(
            f"WARNING: Foldline is listening on {host}:{port}, reachable from other "
            "machines. Anyone with the token can read and write every conversation, and "
            "traffic is not encrypted.",
            file=sys.stderr,
            flush=True,
        )

    stop_requested = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    # Installed before the server starts, so an early Ctrl-C still shuts down cleanly.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            app = create_app(
                data_dir=data_dir, token=token, allowed_hosts=allowed_hosts_for(host, port)
            )
            server = start_server_in_thread(app, host, port, sock=sock, on_wait=_say_starting)
        except Exception as error:
            # A broken config.toml or database is the person's to fix: say what, not a
            # traceback (the log has it).
            logging.getLogger("foldline.server").exception("foldline serve could not start")
            sock.close()
            print(f"foldline serve: could not start: {error}", file=sys.stderr)
            print(f"(details in {log_path})", file=sys.stderr)
            return EXIT_FAILED
        log.info("listening on %s:%s", host, port)
        print(f"Foldline is running at {open_url(host, port, token)}", flush=True)
        while server.running and not stop_requested.wait(0.25):
            pass
        log.info("stopping (%s)", "signal" if stop_requested.is_set() else "server ended")
        server.stop()
        return EXIT_OK if stop_requested.is_set() else EXIT_FAILED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
