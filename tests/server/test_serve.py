"""`foldline serve` as a real process: the one line, health, auth, signals, refusals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from foldline.server import launch

LINE = re.compile(r"^Foldline is running at http://127\.0\.0\.1:(\d+)/#token=([A-Za-z0-9_\-]+)$")
START_SECONDS = 30.0
EXIT_SECONDS = 10.0


class Serve:
    """A `foldline serve` subprocess and its one printed line."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "foldline.cli", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.first_line = self._read_first_line()

    def _read_first_line(self) -> str:
        # A reader thread, so a server that never prints fails the test instead of hanging it.
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(self.process.stdout.readline()))
        reader.start()
        reader.join(START_SECONDS)
        if not lines:
            self.process.kill()
            raise AssertionError("foldline serve printed nothing")
        return lines[0].rstrip("\n")

    def stop(self, sig: int) -> tuple[int, str, str]:
        self.process.send_signal(sig)
        out, err = self.process.communicate(timeout=EXIT_SECONDS)
        return self.process.returncode, out, err


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLDLINE_")}
    env.update(extra)
    return env


@pytest.fixture
def serve_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def running(serve_dir: Path) -> Iterator[Serve]:
    serve = Serve(["--data-dir", str(serve_dir)], _env())
    yield serve
    if serve.process.poll() is None:
        serve.process.kill()
        serve.process.communicate()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_one_line_answers_and_exits_cleanly_on_signals(
    serve_dir: Path, sig: int
) -> None:
    serve = Serve(["--data-dir", str(serve_dir)], _env())
    try:
        match = LINE.match(serve.first_line)
        assert match, serve.first_line
        port, token = match.groups()
        assert len(token) >= 43
        base = f"http://127.0.0.1:{port}"
        assert httpx2.get(f"{base}/api/health", timeout=5).json()["status"] == "ok"
        assert httpx2.get(f"{base}/api/conversations", timeout=5).status_code == 401
        authorized = httpx2.get(
            f"{base}/api/conversations", headers={"Authorization": f"Bearer {token}"}, timeout=5
        )
        assert authorized.status_code == 200
        assert httpx2.get(f"{base}/", timeout=5).status_code == 200  # the UI page
        # A hang fails through communicate()'s timeout in stop().
        code, out, err = serve.stop(sig)
        assert code == 0, err
    finally:
        if serve.process.poll() is None:
            serve.process.kill()
    assert out == ""  # nothing after the one line
    assert token not in err
    assert (serve_dir / "foldline.db").exists()
    assert (serve_dir / "config.toml").exists()
    log = serve_dir / "logs" / "foldline.log"
    assert not log.exists() or token not in log.read_text()


def test_environment_fixes_token_and_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "from-env"
    token = "a-fixed-token-for-scripts-0123456789"
    serve = Serve([], _env(FOLDLINE_TOKEN=token, FOLDLINE_DATA_DIR=str(data_dir)))
    try:
        match = LINE.match(serve.first_line)
        assert match and match.group(2) == token
        reply = httpx2.get(
            f"http://127.0.0.1:{match.group(1)}/api/conversations",
            headers={"Authorization": f"Bearer {token}"},
            timeout=5,
        )
        assert reply.status_code == 200
        assert (data_dir / "foldline.db").exists()
    finally:
        code, _, _ = serve.stop(signal.SIGTERM)
    assert code == 0


def test_a_fixed_port_is_used(tmp_path: Path) -> None:
    probe = launch.bind_socket("127.0.0.1", 0)
    port = probe.getsockname()[1]
    probe.close()
    serve = Serve(["--data-dir", str(tmp_path), "--port", str(port)], _env())
    try:
        match = LINE.match(serve.first_line)
        assert match and int(match.group(1)) == port
    finally:
        serve.stop(signal.SIGTERM)


def test_non_loopback_host_is_refused_without_allow_remote(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "foldline.cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--data-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=START_SECONDS,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "--allow-remote" in result.stderr
    assert not (tmp_path / "foldline.db").exists()


def test_allow_remote_warns_and_accepts_any_host(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # In-process, with the wildcard bind redirected to loopback: the test must not open a
    # port to the network.
    real_bind, real_start = launch.bind_socket, launch.start_server_in_thread
    seen_hosts: list[list[str]] = []
    monkeypatch.setattr(launch, "bind_socket", lambda host, port: real_bind("127.0.0.1", 0))
    monkeypatch.setattr(launch, "setup_logging", lambda data_dir: None)

    def start_then_ask_to_stop(app, host, port, *, sock, **options):  # type: ignore[no-untyped-def]
        server = real_start(app, "127.0.0.1", port, sock=sock, **options)
        reply = httpx2.get(f"{server.url}/api/health", headers={"Host": "my-box.lan:1"}, timeout=5)
        seen_hosts.append([str(reply.status_code)])
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM)).start()
        return server

    monkeypatch.setattr(launch, "start_server_in_thread", start_then_ask_to_stop)
    monkeypatch.setenv("FOLDLINE_TOKEN", "remote-token-0123456789")
    args = launch.argparse.Namespace(
        host="0.0.0.0", port=0, data_dir=str(tmp_path), allow_remote=True
    )
    assert launch.run_serve(args) == 0
    out, err = capsys.readouterr()
    assert "WARNING" in err and "reachable from other machines" in err
    assert re.match(r"^Foldline is running at http://127\.0\.0\.1:\d+/#token=remote-token", out)
    assert out.count("\n") == 1
    assert seen_hosts == [["200"]]  # a wildcard bind is reached under names we cannot know


def test_host_rules() -> None:
    assert launch.is_loopback("127.0.0.1") and launch.is_loopback("::1")
    assert launch.is_loopback("localhost") and launch.is_loopback("127.0.0.2")
    assert not launch.is_loopback("0.0.0.0") and not launch.is_loopback("192.168.1.2")
    assert launch.allowed_hosts_for("127.0.0.1", 5) == ["127.0.0.1:5", "localhost:5", "[::1]:5"]
    assert launch.allowed_hosts_for("0.0.0.0", 5) == ["*"]
    assert launch.allowed_hosts_for("192.168.1.2", 5)[-1] == "192.168.1.2:5"
    assert launch.open_url("::1", 5, "t") == "http://[::1]:5/#token=t"
    assert launch.open_url("0.0.0.0", 5, "t") == "http://127.0.0.1:5/#token=t"
