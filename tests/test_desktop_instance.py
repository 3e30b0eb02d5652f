"""One window per data dir: the lock, the published record, and the control channel."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from foldline_desktop.instance import (
    INSTANCE_FILE,
    RAISE_COMMAND,
    STATUS_COMMAND,
    ControlError,
    ControlListener,
    InstanceLock,
    InstanceRecord,
    ask_to_raise,
    read_instance_record,
    send_command,
)


def test_a_second_lock_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    first, second = InstanceLock(tmp_path), InstanceLock(tmp_path)
    assert first.acquire()
    try:
        assert not second.acquire()
        assert not second.held
    finally:
        first.release()
    assert second.acquire()
    second.release()


def test_other_data_dirs_are_independent(tmp_path: Path) -> None:
    first, other = InstanceLock(tmp_path / "a"), InstanceLock(tmp_path / "b")
    assert first.acquire() and other.acquire()
    first.release()
    other.release()


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    # A crashed app must not leave a lock the user has to delete by hand.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from pathlib import Path
                from foldline_desktop.instance import InstanceLock
                lock = InstanceLock(Path({str(tmp_path)!r}))
                assert lock.acquire()
                print("held", flush=True)
                time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not InstanceLock(tmp_path).acquire()
    finally:
        holder.kill()
        holder.wait(10)
    lock = InstanceLock(tmp_path)
    assert lock.acquire()
    lock.release()


def test_the_record_is_private_and_removed_on_release(tmp_path: Path) -> None:
    lock = InstanceLock(tmp_path)
    assert lock.acquire()
    lock.publish(InstanceRecord(pid=1234, control_port=40000, secret="s" * 43))
    path = tmp_path / INSTANCE_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_instance_record(tmp_path, wait_seconds=0) == InstanceRecord(1234, 40000, "s" * 43)
    lock.release()
    assert not path.exists()
    assert read_instance_record(tmp_path, wait_seconds=0) is None


@pytest.fixture
def listener() -> ControlListener:
    raised = threading.Event()
    control = ControlListener(
        {
            RAISE_COMMAND: raised.set,
            STATUS_COMMAND: lambda: {"title": "Foldline", "requests": ["/", "/api/health"]},
            "broken": lambda: 1 / 0,
        }
    )
    control.raised = raised  # type: ignore[attr-defined]
    control.start()
    yield control
    control.stop()


def _record(listener: ControlListener, secret: str | None = None) -> InstanceRecord:
    return InstanceRecord(os.getpid(), listener.port, secret or listener.secret)


def test_raise_with_the_secret_runs_the_handler(listener: ControlListener) -> None:
    assert ask_to_raise(_record(listener))
    assert listener.raised.wait(2)  # type: ignore[attr-defined]


def test_a_wrong_secret_is_refused_and_nothing_runs(listener: ControlListener) -> None:
    assert not ask_to_raise(_record(listener, secret="guessed-" + "x" * 35))
    assert not listener.raised.is_set()  # type: ignore[attr-defined]


def test_status_answers_with_json(listener: ControlListener) -> None:
    assert send_command(_record(listener), STATUS_COMMAND) == {
        "title": "Foldline",
        "requests": ["/", "/api/health"],
    }


def test_unknown_and_failing_commands_are_refused(listener: ControlListener) -> None:
    with pytest.raises(ControlError, match="refused"):
        send_command(_record(listener), "shutdown")
    with pytest.raises(ControlError, match="refused"):
        send_command(_record(listener), "broken")
    # The listener survives both and still answers.
    assert ask_to_raise(_record(listener))


def test_nobody_listening_is_reported_not_raised(tmp_path: Path) -> None:
    stopped = ControlListener({RAISE_COMMAND: lambda: None})
    port, secret = stopped.port, stopped.secret
    stopped.start()
    stopped.stop()
    assert not ask_to_raise(InstanceRecord(os.getpid(), port, secret), timeout=1)


def test_stop_leaves_no_thread_behind() -> None:
    before = {thread.name for thread in threading.enumerate()}
    control = ControlListener({RAISE_COMMAND: lambda: None})
    control.start()
    assert "foldline-control" in {thread.name for thread in threading.enumerate()}
    control.stop()
    assert {thread.name for thread in threading.enumerate()} <= before
