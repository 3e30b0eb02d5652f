"""The real `foldline` console script opening its real Qt window on a virtual X display.

Each test starts `Xvfb` on a free display, launches `.venv/bin/foldline --data-dir TMP`
as a user would, finds the window by its title the way a window manager does, looks at
its pixels, and closes it with `WM_DELETE_WINDOW` (the close button's message) or
SIGTERM. What the page requested comes from the running app's status command (an
in-memory record of method, path and status; no access log is written).

The screenshot is kept in `test-artifacts/desktop-window.png` for a person to look at.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from devtools import DevToolsPage

from foldline_desktop.instance import (
    InstanceLock,
    read_instance_record,
    send_command,
)
from foldline_desktop.window_state import WINDOW_STATE_FILE
from foldline_desktop.xvfb import (
    VirtualDisplay,
    WindowInfo,
    list_windows,
    request_close,
    take_screenshot,
    wait_for_window,
)

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
FOLDLINE = Path(sys.executable).parent / "foldline"
TOKEN = "desktop-e2e-token-0123456789abcdef"
# Generous: Qt WebEngine's first start on a busy two-core CI machine takes seconds.
WINDOW_TIMEOUT = 90.0
EXIT_TIMEOUT = 10.0


@pytest.fixture
def display() -> Iterator[VirtualDisplay]:
    with VirtualDisplay() as virtual:
        yield virtual


class RunningApp:
    """One `foldline` process on one data dir, with helpers to watch it."""

    def __init__(self, data_dir: Path, display: VirtualDisplay) -> None:
        self.data_dir = data_dir
        self.display = display
        environ = {
            key: value
            for key, value in os.environ.items()
            if key
            not in ("WAYLAND_DISPLAY", "FOLDLINE_DATA_DIR", "XDG_DATA_HOME", "XDG_CACHE_HOME")
        }
        # A home of its own, to check that nothing is written there besides the data dir.
        self.home = data_dir.parent / f"{data_dir.name}-home"
        self.home.mkdir(exist_ok=True)
        environ.update(DISPLAY=display.name, FOLDLINE_TOKEN=TOKEN, HOME=str(self.home))
        self.environ = environ
        self.output_path = data_dir.parent / f"{data_dir.name}-output.txt"
        self._output = self.output_path.open("wb")
        self.process = subprocess.Popen(
            [str(FOLDLINE), "--data-dir", str(data_dir)],
            env=environ,
            stdout=self._output,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.output_path.read_text(encoding="utf-8", errors="replace")

    def log(self) -> str:
        path = self.data_dir / "logs" / "foldline.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def diagnostics(self) -> str:
        windows = list_windows(self.display.name) if self.display.running else "Xvfb is gone"
        return (
            f"--- windows ---\n{windows}\n--- output ---\n{self.output()}\n"
            f"--- log ---\n{self.log()}"
        )

    def window(self) -> WindowInfo:
        window = wait_for_window(self.display.name, "Foldline", WINDOW_TIMEOUT)
        assert window is not None, f"no Foldline window appeared\n{self.diagnostics()}"
        return window

    def status(self) -> dict[str, Any]:
        record = read_instance_record(self.data_dir, wait_seconds=10)
        assert record is not None, f"no instance record\n{self.diagnostics()}"
        answer = send_command(record, "status")
        assert isinstance(answer, dict)
        return answer

    def wait_for_status(self, condition: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + WINDOW_TIMEOUT
        status = self.status()
        while not condition(status):
            assert time.monotonic() < deadline, (
                f"status never matched: {status}\n{self.diagnostics()}"
            )
            time.sleep(0.2)
            status = self.status()
        return status

    def wait_for_exit(self) -> int:
        try:
            return self.process.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"foldline did not exit within {EXIT_TIMEOUT} s\n{self.diagnostics()}")

    def helper_processes(self) -> set[int]:
        """Qt WebEngine's renderer, GPU and utility processes started by this app."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                parent = _parent_pid(int(entry.name))
                if parent is not None:
                    children.setdefault(parent, []).append(int(entry.name))
        found: set[int] = set()
        pending = [self.process.pid]
        while pending:
            for child in children.get(pending.pop(), []):
                if child not in found:
                    found.add(child)
                    pending.append(child)
        return found

    def close_window(self, window: WindowInfo) -> None:
        """Click the close button (`WM_DELETE_WINDOW`, as a window manager sends it)."""
        request_close(self.display.name, window.window_id)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._output.close()


def _parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces; the fields after it are
    # state, then the parent pid.
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def launch(display: VirtualDisplay) -> Iterator[Callable[[Path], RunningApp]]:
    started: list[RunningApp] = []

    def start(data_dir: Path) -> RunningApp:
        app = RunningApp(data_dir, display)
        started.append(app)
        return app

    yield start
    for app in started:
        app.kill()


def _served(status: dict[str, Any], predicate: Callable[[str], bool]) -> list[str]:
    return [
        seen["path"]
        for seen in status["requests"]
        # 304: a later launch revalidates its cached copy, which the server confirmed.
        if seen["status"] in (200, 304) and seen["method"] == "GET" and predicate(seen["path"])
    ]


def page_is_running(status: dict[str, Any]) -> bool:
    """The page, its scripts, and at least one authenticated API call were served."""
    return (
        status["loaded"]
        and bool(_served(status, lambda path: path == "/"))
        and bool(_served(status, lambda path: path.endswith(".js")))
        and bool(_served(status, lambda path: path.startswith("/api/") and path != "/api/health"))
    )


def _api(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        url,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as reply:
        return json.loads(reply.read())


def test_window_opens_on_the_app_a_second_launch_raises_it_and_close_exits(
    tmp_path: Path, display: VirtualDisplay, launch: Callable[[Path], RunningApp]
) -> None:
    data_dir = tmp_path / "data"
    app = launch(data_dir)
    window = app.window()
    status = app.wait_for_status(page_is_running)

    # First run: the data dir got its config and its log.
    assert (data_dir / "config.toml").is_file()
    assert "server ready at http://127.0.0.1:" in app.log()
    # Qt WebEngine's storage went under the data dir, not the home directory.
    assert not (app.home / ".local" / "share" / "foldline").exists()
    assert not (app.home / ".cache" / "foldline").exists()
    assert (data_dir / "webview" / "qt-data").is_dir()

    # The window shows the app, not a blank or an error page: look at its pixels once the
    # page has had its scripts and API answers, retrying while it is still painting.
    deadline = time.monotonic() + 30
    while True:
        shot = take_screenshot(display.name).crop(window.x, window.y, window.width, window.height)
        if shot.distinct_colors() >= 30 and shot.luminance_stddev() >= 8:
            break
        assert time.monotonic() < deadline, (
            f"the window stayed blank: {shot.distinct_colors()} colours, "
            f"contrast {shot.luminance_stddev():.1f}\n{app.diagnostics()}"
        )
        time.sleep(0.5)
    ARTIFACTS.mkdir(exist_ok=True)
    shot.write_png(ARTIFACTS / "desktop-window.png")
    assert window.width >= 480 and window.height >= 360

    # A second launch on the same data dir raises this window and exits at once.
    second = subprocess.run(
        [str(FOLDLINE), "--data-dir", str(data_dir)],
        env=app.environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert "already open" in second.stdout
    assert "raised the window for a second launch" in app.log()
    assert len([w for w in list_windows(display.name) if w.title == "Foldline"]) == 1

    # The user closes the window: the server stops, the state is saved, the process ends,
    # and so do the browser engine's helper processes.
    helpers = app.helper_processes()
    if os.geteuid() == 0:
        # As root Chromium has no sandbox, and then runs in the app's own process.
        assert not helpers, f"Chromium should run in one process without its sandbox: {helpers}"
    else:
        assert helpers, "Qt WebEngine should run its renderer in helper processes"
    app.close_window(window)
    assert app.wait_for_exit() == 0, app.diagnostics()
    deadline = time.monotonic() + EXIT_TIMEOUT
    while any(_alive(pid) for pid in helpers):
        assert time.monotonic() < deadline, f"helper processes left running: {helpers}"
        time.sleep(0.1)
    log = app.log()
    stopped = [line for line in log.splitlines() if "server stopped in" in line]
    assert stopped, log
    assert float(stopped[-1].rsplit(" in ", 1)[1].split()[0]) < 2.0
    assert "threads still running at exit" not in log
    assert TOKEN not in log
    assert TOKEN not in app.output()
    saved = json.loads((data_dir / WINDOW_STATE_FILE).read_text(encoding="utf-8"))
    assert (saved["width"], saved["height"]) == (window.width, window.height)
    assert saved["last_port"] == int(status["url"].rsplit(":", 1)[1])
    # Nothing is left holding the data dir.
    assert not (data_dir / "instance.json").exists()
    lock = InstanceLock(data_dir)
    assert lock.acquire()
    lock.release()


def test_reopening_restores_the_place_and_the_conversation(
    tmp_path: Path, display: VirtualDisplay, launch: Callable[[Path], RunningApp]
) -> None:
    data_dir = tmp_path / "data"
    first = launch(data_dir)
    first.window()
    status = first.wait_for_status(page_is_running)
    # A configured model, so the app opens on conversations rather than on onboarding. No
    # server listens on the discard port: nothing here talks to a model.
    _api(
        f"{status['url']}/api/settings",
        "PUT",
        {
            "providers": {
                "local": {"kind": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}
            },
            "models": {"e2e-model": {"provider": "local"}},
            "defaults": {"model": "e2e-model"},
        },
    )
    conversation = _api(
        f"{status['url']}/api/conversations", "POST", {"title": "Kept across launches"}
    )
    first.process.send_signal(signal.SIGTERM)
    assert first.wait_for_exit() == 0, first.diagnostics()

    # What the shell remembers from a session in which the user moved and resized the
    # window and had this conversation open.
    state_path = data_dir / WINDOW_STATE_FILE
    state = json.loads(state_path.read_text(encoding="utf-8"))
    state.update(x=70, y=40, width=900, height=640, last_conversation_id=conversation["id"])
    state_path.write_text(json.dumps(state), encoding="utf-8")

    second = launch(data_dir)
    window = second.window()
    assert (window.x, window.y, window.width, window.height) == (70, 40, 900, 640)
    reopened = second.wait_for_status(
        lambda status: (
            page_is_running(status)
            and bool(
                _served(status, lambda path: path == f"/api/conversations/{conversation['id']}")
            )
            and status["conversation"] == conversation["id"]
        )
    )
    # Same port as before, so the page's own storage (same origin) carried over too.
    assert reopened["url"] == status["url"]

    second.close_window(window)
    assert second.wait_for_exit() == 0, second.diagnostics()
    saved = json.loads(state_path.read_text(encoding="utf-8"))
    assert saved["last_conversation_id"] == conversation["id"]
    assert (saved["x"], saved["y"], saved["width"], saved["height"]) == (70, 40, 900, 640)


def test_the_window_streams_an_answer_and_closes_while_idle(
    tmp_path: Path,
    display: VirtualDisplay,
    launch: Callable[[Path], RunningApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The person types in the window's own page and the answer streams into it, with the
    memory settings the window runs with (software drawing without a GPU, Chromium in
    the app's process without a sandbox). The page is driven through Chromium's DevTools
    port, which Qt WebEngine opens when asked."""
    from foldline.testing import FakeProviderServer

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    devtools_port = _free_port()
    monkeypatch.setenv("QTWEBENGINE_REMOTE_DEBUGGING", f"127.0.0.1:{devtools_port}")
    with FakeProviderServer(delta_delay=0.3) as fake:
        (data_dir / "config.toml").write_text(
            '[defaults]\nmodel = "window-model"\n\n'
            + fake.providers_toml()
            + '[models."window-model"]\nprovider = "fake-compat"\n',
            encoding="utf-8",
        )
        app = launch(data_dir)
        window = app.window()
        app.wait_for_status(page_is_running)
        page = DevToolsPage(devtools_port)
        try:
            # The message box is in the page's HTML from the start; the app takes the
            # send only once its start-up has run (it then leaves the "loading" state).
            # A send before that is a plain form submit that reloads the page.
            page.wait_for(
                "(() => { const app = document.querySelector('#app');"
                " return app !== null && app.dataset.state !== 'loading'; })()"
            )
            page.evaluate(
                "(() => { const box = document.querySelector('#composer-input');"
                " box.value = 'hello from the window';"
                " box.dispatchEvent(new Event('input', {bubbles: true}));"
                " document.querySelector('#composer-form').requestSubmit(); })()"
            )
            # The answer is drawn while it streams (the fake sends a piece every 0.3 s).
            page.wait_for("document.querySelector('.message.assistant.streaming') !== null")
            answer = page.wait_for(
                "(() => { const all = document.querySelectorAll('.message.assistant');"
                " const last = all[all.length - 1];"
                " return last && !last.classList.contains('streaming') && last.textContent; })()"
            )
        finally:
            page.close()
        assert "echo: hello from the window" in answer
        ARTIFACTS.mkdir(exist_ok=True)
        take_screenshot(display.name).crop(
            window.x, window.y, window.width, window.height
        ).write_png(ARTIFACTS / "desktop-window-answer.png")
        app.close_window(window)
        assert app.wait_for_exit() == 0, app.diagnostics()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Loaded at start-up by the `foldline` process of the test below (through PYTHONPATH): the
# database check waits until the test opens the FIFO named in SLOW_START_GATE for writing,
# which makes the start's first stage as slow as the test wants, without a clock.
SLOW_DATABASE_HOOK = """
import os

import foldline.store.doctor as doctor

_check_database = doctor.check_database


def _slow_check_database(path):
    with open(os.environ["SLOW_START_GATE"], "rb"):
        pass
    _check_database(path)


doctor.check_database = _slow_check_database
"""


def test_a_slow_start_shows_the_starting_page_with_its_stage_then_the_app(
    tmp_path: Path,
    display: VirtualDisplay,
    launch: Callable[[Path], RunningApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The window opens before the server answers, on its own page naming what the start
    waits for (here the database, held up by the test), and loads the app once it is up."""
    from foldline_desktop.starting_page import OPENING_DATABASE

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SLOW_DATABASE_HOOK, encoding="utf-8")
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    monkeypatch.setenv("SLOW_START_GATE", str(gate))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")])
    )
    devtools_port = _free_port()
    monkeypatch.setenv("QTWEBENGINE_REMOTE_DEBUGGING", f"127.0.0.1:{devtools_port}")
    app = launch(tmp_path / "data")
    try:
        window = app.window()
        status = app.wait_for_status(lambda status: status["starting"] == OPENING_DATABASE)
        assert status["url"] is None and not status["loaded"]
        page = DevToolsPage(devtools_port)
        try:
            stage = page.wait_for(
                "(() => { const line = document.getElementById('stage');"
                " return line && line.textContent; })()"
            )
            assert stage == f"Waiting for {OPENING_DATABASE}"
            assert "Foldline is starting" in page.evaluate("document.body.innerText")
            # Painted: the heading and the line stand out from the white page.
            deadline = time.monotonic() + 30
            while True:
                shot = take_screenshot(display.name).crop(
                    window.x, window.y, window.width, window.height
                )
                if shot.distinct_colors() >= 4 and shot.luminance_stddev() >= 2:
                    break
                assert time.monotonic() < deadline, (
                    f"the starting page stayed blank\n{app.diagnostics()}"
                )
                time.sleep(0.2)
            ARTIFACTS.mkdir(exist_ok=True)
            shot.write_png(ARTIFACTS / "desktop-starting.png")
        finally:
            page.close()
    finally:
        # Opening the FIFO for writing lets the database check go on, also when an
        # assertion above failed. It blocks until the app opens its end, so in a thread.
        threading.Thread(target=lambda: gate.open("wb").close(), daemon=True).start()
    status = app.wait_for_status(page_is_running)
    assert status["starting"] is None
    page = DevToolsPage(devtools_port)
    try:
        origin = page.wait_for("document.readyState === 'complete' && location.origin")
        assert origin == status["url"]
        assert page.evaluate("document.getElementById('stage') === null")
    finally:
        page.close()
    app.close_window(window)
    assert app.wait_for_exit() == 0, app.diagnostics()
