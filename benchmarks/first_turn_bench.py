"""The first turn after launch against later turns: time to the first streamed token.

Each run starts `foldline serve` as a new process (a cold Python: nothing imported) on a
fresh data dir whose config points at the fake provider server (`foldline.testing`,
real SDKs over loopback, answering at once), waits until the server is healthy and then
`--delay` seconds (0: a message sent the instant the app is up; 2: a person who takes a
moment to type), and sends three messages in one new conversation. For each it measures
from the POST to the first `assistant.delta` event, and to `done`.

    .venv/bin/python benchmarks/first_turn_bench.py --runs 5 --wire anthropic --delay 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

from foldline.testing import DEFAULT_LIMITS, FakeProviderServer, ScriptedModel

FOLDLINE = Path(sys.executable).parent / "foldline"
KEY = "sk-bench-first-turn"
TIMEOUT = 60.0

CONFIG = {
    "openai": """\
[defaults]
model = "fake-model"

[providers.fake]
kind = "openai-compatible"
base_url = "{url}"
api_key = "{key}"

[models."fake-model"]
provider = "fake"
context_window = 200000
max_output_tokens = 1000

[compaction]
auto_title = false
""",
    "anthropic": """\
[defaults]
model = "claude-sonnet-5"

[providers.anthropic]
base_url = "{url}"
api_key = "{key}"

[compaction]
auto_title = false
""",
}


def one_run(fake: FakeProviderServer, wire: str, delay: float, turns: int) -> list[dict]:
    url = fake.openai_url if wire == "openai" else fake.anthropic_url
    with tempfile.TemporaryDirectory() as root:
        data_dir = Path(root)
        (data_dir / "config.toml").write_text(CONFIG[wire].format(url=url, key=KEY))
        environ = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
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
            base, token = line.strip().split(" at ", 1)[1].split("/#token=", 1)
            headers = {"Authorization": f"Bearer {token}"}
            with httpx2.Client(base_url=base, headers=headers, timeout=TIMEOUT) as http:
                deadline = time.monotonic() + TIMEOUT
                while True:
                    try:
                        if http.get("/api/health").status_code == 200:
                            break
                    except httpx2.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError("the server did not become healthy")
                    time.sleep(0.02)
                time.sleep(delay)
                conversation = http.post("/api/conversations", json={}).json()["id"]
                return [turn(http, conversation, f"question {n}") for n in range(turns)]
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def turn(http: httpx2.Client, conversation: str, text: str) -> dict:
    started = time.monotonic()
    first = None
    path = f"/api/conversations/{conversation}/messages"
    with http.stream("POST", path, json={"content": text}) as stream:
        for line in stream.iter_lines():
            if first is None and line == "event: assistant.delta":
                first = time.monotonic() - started
            if line == "event: done":
                break
    if first is None:
        raise RuntimeError("the turn streamed no text")
    return {"first token": first, "done": time.monotonic() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--wire", choices=["openai", "anthropic"], default="anthropic")
    args = parser.parse_args()
    script = ScriptedModel(when_empty="echo")
    models = {"fake-model": DEFAULT_LIMITS, "claude-sonnet-5": DEFAULT_LIMITS}
    with FakeProviderServer(script, models=models, api_key=KEY) as fake:
        runs = [one_run(fake, args.wire, args.delay, args.turns) for _ in range(args.runs)]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print(f"wire {args.wire}, delay {args.delay} s, {args.runs} runs")
    rows = {}
    for index in range(args.turns):
        for key in ("first token", "done"):
            values = [run[index][key] for run in runs]
            rows[f"turn {index + 1} {key}"] = (
                statistics.median(values),
                min(values),
                max(values),
            )
    for name, (median, low, high) in rows.items():
        print(f"| {name} | {median:.3f} s | {low:.3f} s | {high:.3f} s |")
    print(json.dumps({name: round(values[0], 4) for name, values in rows.items()}))


if __name__ == "__main__":
    main()
