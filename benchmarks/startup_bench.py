"""Cold start of `foldline`: to a ready server, to a shown window, to a loaded page.

Each run starts the real console script as a new process (a "cold" start for Python:
nothing imported, though the OS file cache is warm after the first run) and measures,
from just before the process is spawned:

- server ready: `GET /api/health` answers 200 (the shell reuses the port remembered in
  `window.json`, which this benchmark writes, so it can poll before the app says where);
- window shown: a top-level X window titled "Foldline" is mapped (Xvfb, no window manager);
- page loaded: the page, its scripts and its first API call were served (from the app's
  `status` control command);

then closes the window (`WM_DELETE_WINDOW`) and measures until the process has exited.
`foldline serve` is measured the same way for comparison (to its printed address and a
healthy server). "First run" uses a fresh data dir (config, database, browser profile are
created); "repeat" reuses it.

    .venv/bin/python benchmarks/startup_bench.py --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foldline_desktop.instance import ControlError, read_instance_record, send_command
from foldline_desktop.server_handle import server_is_healthy
from foldline_desktop.xvfb import VirtualDisplay, list_windows, request_close

FOLDLINE = Path(sys.executable).parent / "foldline"
TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(condition: Callable[[], bool], what: str, started: float) -> float:
    while not condition():
        if time.monotonic() - started > TIMEOUT:
            raise TimeoutError(f"{what} not reached within {TIMEOUT} s")
        time.sleep(0.01)
    return time.monotonic() - started


def _page_running(data_dir: Path) -> bool:
    record = read_instance_record(data_dir, wait_seconds=0)
    if record is None:
        return False
    try:
        status: Any = send_command(record, "status", timeout=2)
    except ControlError:
        return False
    served = [seen["path"] for seen in status["requests"] if seen["status"] in (200, 304)]
    return bool(
        status["loaded"]
        and "/" in served
        and any(path.endswith(".js") for path in served)
        and any(path.startswith("/api/") and path != "/api/health" for path in served)
    )


def desktop_run(display: VirtualDisplay, data_dir: Path) -> dict[str, float]:
    port = _free_port()
    state_path = data_dir / "window.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    state["last_port"] = port
    data_dir.mkdir(parents=True, exist_ok=True)
    state_path.write_text(json.dumps(state))
    environ = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    environ["DISPLAY"] = display.name
    url = f"http://127.0.0.1:{port}"

    started = time.monotonic()
    process = subprocess.Popen(
        [str(FOLDLINE), "--data-dir", str(data_dir)],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        server_ready = _wait(lambda: server_is_healthy(url, timeout=0.5), "server", started)
        window_shown = _wait(
            lambda: any(w.title == "Foldline" for w in list_windows(display.name)),
            "window",
            started,
        )
        page_loaded = _wait(lambda: _page_running(data_dir), "page", started)
        window = next(w for w in list_windows(display.name) if w.title == "Foldline")
        # A person closes a window that has finished drawing.
        time.sleep(1.0)
        closed_at = time.monotonic()
        request_close(display.name, window.window_id)
        process.wait(TIMEOUT)
        exit_after_close = time.monotonic() - closed_at
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return {
        "server ready": server_ready,
        "window shown": window_shown,
        "page loaded": page_loaded,
        "exit after close": exit_after_close,
    }


def serve_run(data_dir: Path) -> dict[str, float]:
    environ = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    started = time.monotonic()
    process = subprocess.Popen(
        [str(FOLDLINE), "serve", "--data-dir", str(data_dir)],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        printed = time.monotonic() - started
        base = line.split(" at ", 1)[1].split("/#", 1)[0]
        healthy = _wait(lambda: server_is_healthy(base, timeout=0.5), "serve health", started)
        process.send_signal(signal.SIGTERM)
        process.wait(TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return {"address printed": printed, "server ready": healthy}


def _summary(runs: list[dict[str, float]]) -> dict[str, tuple[float, float, float]]:
    return {
        key: (
            statistics.median(run[key] for run in runs),
            min(run[key] for run in runs),
            max(run[key] for run in runs),
        )
        for key in runs[0]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as scratch, VirtualDisplay() as display:
        root = Path(scratch)
        results["desktop, first run"] = [
            desktop_run(display, root / f"fresh-{i}") for i in range(args.runs)
        ]
        results["desktop, repeat"] = [
            desktop_run(display, root / "fresh-0") for _ in range(args.runs)
        ]
        results["serve, first run"] = [serve_run(root / f"serve-{i}") for i in range(args.runs)]
        results["serve, repeat"] = [serve_run(root / "serve-0") for _ in range(args.runs)]

    print(f"python {platform.python_version()}, {os.cpu_count()} cores, ", end="")
    print(f"processor {platform.processor()!r}, load average {os.getloadavg()[0]:.1f}")
    print("| launch | milestone | median | min | max |")
    print("| --- | --- | --- | --- | --- |")
    for launch, runs in results.items():
        for milestone, (median, low, high) in _summary(runs).items():
            print(f"| {launch} | {milestone} | {median:.2f} s | {low:.2f} s | {high:.2f} s |")


if __name__ == "__main__":
    main()
