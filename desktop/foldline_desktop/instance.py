"""One desktop window per data directory; a second launch raises the first one's window.

Two windows on one data directory would each run a turn loop on the same conversations
and fight over folds, so the first launch takes an exclusive OS lock on
`<data-dir>/foldline.lock` and writes `<data-dir>/instance.json` (mode 0600): its pid,
the loopback port of a small control listener, and a random secret. A second launch
finds the lock taken, reads the record and sends `<secret> raise` to that port; the first
instance brings its window to the front and the second exits with status 0. The secret
means only someone who can read the data directory can poke the window. A `status`
command reports what the page has loaded (its title and the paths it requested), for
diagnosis and for the desktop tests.

The OS lock (flock / msvcrt) dies with its process, so a crash never leaves a stale lock
behind that the user would have to delete by hand.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)

LOCK_FILE = "foldline.lock"
INSTANCE_FILE = "instance.json"
RAISE_COMMAND = "raise"
STATUS_COMMAND = "status"
_REPLY_DENIED = b"denied\n"
# A request line is a secret (43 characters) plus a command; anything longer is not ours.
_MAX_REQUEST_BYTES = 256
_MAX_REPLY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class InstanceRecord:
    """What a running window publishes for later launches."""

    pid: int
    control_port: int
    secret: str


class InstanceLock:
    """The exclusive per-data-dir lock; `acquire()` is False when another launch holds it."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._lock_path = data_dir / LOCK_FILE
        self._record_path = data_dir / INSTANCE_FILE
        self._handle: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def acquire(self) -> bool:
        self._data_dir.mkdir(parents=True, exist_ok=True)
        handle = open(self._lock_path, "a+b")  # noqa: SIM115 - held open for the app's lifetime
        try:
            _lock_exclusively(handle)
        except OSError:
            handle.close()
            return False
        self._handle = handle
        return True

    def publish(self, record: InstanceRecord) -> None:
        """Write the record readable by the owner only (it holds the control secret)."""
        temporary = self._record_path.with_suffix(".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(asdict(record), handle)
        os.replace(temporary, self._record_path)

    def release(self) -> None:
        if self._handle is None:
            return
        self._record_path.unlink(missing_ok=True)
        _unlock(self._handle)
        self._handle.close()
        self._handle = None


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_exclusively(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock_exclusively(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def read_instance_record(data_dir: Path, wait_seconds: float = 3.0) -> InstanceRecord | None:
    """The running instance's record; waits briefly because the lock is taken before the
    record is written, so a launch racing the first one's start-up may look too early."""
    path = data_dir / INSTANCE_FILE
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return InstanceRecord(
                pid=int(data["pid"]),
                control_port=int(data["control_port"]),
                secret=str(data["secret"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)


class ControlError(RuntimeError):
    """The running instance did not answer, refused, or sent something unreadable."""


def send_command(record: InstanceRecord, command: str, timeout: float = 5.0) -> object:
    """Run `command` in the running instance and return its JSON answer."""
    try:
        with socket.create_connection(("127.0.0.1", record.control_port), timeout=timeout) as conn:
            conn.sendall(f"{record.secret} {command}\n".encode())
            reply = conn.makefile("rb").readline(_MAX_REPLY_BYTES).decode("utf-8", "replace")
    except OSError as error:
        raise ControlError(f"no answer from pid {record.pid}: {error}") from error
    status, _, payload = reply.rstrip("\n").partition(" ")
    if status != "ok":
        raise ControlError(f"pid {record.pid} refused {command!r}")
    try:
        return json.loads(payload)
    except ValueError as error:
        raise ControlError(f"unreadable answer from pid {record.pid}") from error


def ask_to_raise(record: InstanceRecord, timeout: float = 3.0) -> bool:
    """Ask the running instance to bring its window to the front; True if it agreed."""
    try:
        send_command(record, RAISE_COMMAND, timeout)
    except ControlError:
        return False
    return True


class ControlListener:
    """A loopback listener that runs a named command when a caller presents the secret.

    Each command returns a JSON-serialisable value, sent back as `ok <json>`; a wrong
    secret, an unknown command or a failing command get `denied`.
    """

    def __init__(self, commands: Mapping[str, Callable[[], object]]) -> None:
        self._commands = dict(commands)
        self.secret = secrets.token_urlsafe(32)
        self._socket = socket.create_server(("127.0.0.1", 0))
        # accept() wakes up at least this often to notice stop().
        self._socket.settimeout(0.2)
        self.port: int = self._socket.getsockname()[1]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="foldline-control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=2.0)
        self._socket.close()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(2.0)
        try:
            line = conn.makefile("rb").readline(_MAX_REQUEST_BYTES).decode("utf-8", "replace")
            secret, _, command = line.strip().partition(" ")
            allowed = hmac.compare_digest(secret.encode(), self.secret.encode())
            handler = self._commands.get(command)
            if not allowed or handler is None:
                conn.sendall(_REPLY_DENIED)
                logger.warning("refused a control request (wrong secret or unknown command)")
                return
            try:
                result = handler()
            except Exception:
                # The window may be mid-close; the caller still gets an honest answer.
                logger.exception("control command %r failed", command)
                conn.sendall(_REPLY_DENIED)
                return
            conn.sendall(b"ok " + json.dumps(result).encode() + b"\n")
        except OSError as error:
            logger.warning("control connection failed: %s", error)
