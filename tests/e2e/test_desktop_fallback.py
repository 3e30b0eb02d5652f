"""`foldline` with no display: one line saying so, then exactly `foldline serve`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

import pytest

from foldline_desktop.app import NO_DISPLAY_LINE

pytestmark = pytest.mark.e2e

FOLDLINE = Path(sys.executable).parent / "foldline"
START_TIMEOUT = 60.0


def _read_line(stream: IO[str], process: subprocess.Popen[str]) -> str:
    line = stream.readline()
    if not line:
        process.kill()
        pytest.fail(f"foldline ended early (status {process.wait(10)})")
    return line.rstrip("\n")


def _get(url: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(urllib.request.Request(url, headers=headers), timeout=10) as reply:
        return reply.status, json.loads(reply.read())


STALE_DISPLAY_LINE = (
    "Foldline: the desktop window is unavailable (cannot connect to the X display :4242); "
    "to fix: check that DISPLAY names a running X server; serving in the browser instead."
)


@pytest.mark.parametrize(
    ("display", "expected_first_line", "logged"),
    [
        (None, NO_DISPLAY_LINE, "no display; serving in the browser"),
        # A DISPLAY left over from an SSH session: Qt would abort, Foldline serves instead.
        (":4242", STALE_DISPLAY_LINE, "Qt unavailable: cannot connect to the X display :4242"),
    ],
    ids=["no-display", "stale-display"],
)
def test_without_a_usable_display_it_says_so_once_and_serves_for_the_browser(
    tmp_path: Path, display: str | None, expected_first_line: str, logged: str
) -> None:
    data_dir = tmp_path / "data"
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DISPLAY", "WAYLAND_DISPLAY", "FOLDLINE_TOKEN", "FOLDLINE_DATA_DIR")
    }
    if display is not None:
        environ["DISPLAY"] = display
    process = subprocess.Popen(
        [str(FOLDLINE), "--data-dir", str(data_dir)],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT
        first = _read_line(process.stdout, process)
        second = _read_line(process.stdout, process)
        assert time.monotonic() < deadline
        assert first == expected_first_line
        # From here on it is `foldline serve`: its one line with the address to open.
        prefix = "Foldline is running at "
        assert second.startswith(prefix), second
        url = second.removeprefix(prefix)
        base, _, fragment = url.partition("/#token=")
        assert base.startswith("http://127.0.0.1:") and fragment

        assert _get(f"{base}/api/health")[0] == 200
        status, conversations = _get(f"{base}/api/conversations", token=fragment)
        assert status == 200 and isinstance(conversations, (list, dict))
        assert (data_dir / "config.toml").is_file()

        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
        remaining_stdout = process.stdout.read()
        assert remaining_stdout == "", "one line, then only serve's own line"
        log = (data_dir / "logs" / "foldline.log").read_text(encoding="utf-8")
        assert logged in log
        assert fragment not in log
        # No window means no window state and no desktop lock.
        assert not (data_dir / "window.json").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
