"""Hostile files against a real `foldline serve`: while each is read, another
conversation's `GET` keeps answering.

For every hostile file (PDFs that inflate, with 100,000 pages, a page tree 5,000 deep,
4,500 dangling references; 20 large images; a 2 MB text file) the script sends it in a
message of one conversation and, while that request runs, reads another conversation
every 50 ms (after one read of it first and the launch's model-list refresh, so the
server's start-up costs are not counted against the file). It prints the send's status
and time, the other reads' median and worst time (the goal: under 200 ms), and the peak
resident memory of the process that read the PDF (each PDF is read in a child process
of its own), and the server's own peak.

    PYTHONPATH=backend python benchmarks/hostile_files_bench.py [--only WORDS]

`--only 100,000` runs just the cases whose name contains those words.

Results go to docs/benchmarks.md, `## Hostile files`.
"""

from __future__ import annotations

import base64
import io
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from foldline.pdf_reading import read_pdf_isolated
from foldline.testing import hostile_files

TOKEN = "benchmark-token-0123456789abcdefghijklmnop"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG_TOML = """\
[defaults]
model = "bench-model"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."bench-model"]
provider = "local"
context_window = 1000000
max_output_tokens = 1024
vision = true

[compaction]
auto_title = false
"""


def _large_png(n: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (3000, 3000), (n, 90, 200)).save(buffer, "PNG")
    return buffer.getvalue()


def _file(name: str, media_type: str, data: bytes) -> dict[str, str]:
    return {"name": name, "mediaType": media_type, "dataBase64": base64.b64encode(data).decode()}


CASES: dict[str, Callable[[], list[dict[str, str]]]] = {
    "PDF, inflating text (10 kB)": lambda: [
        _file("a.pdf", "application/pdf", hostile_files.inflating_pdf())
    ],
    "PDF, 100,000 pages": lambda: [
        _file("b.pdf", "application/pdf", hostile_files.many_pages_pdf())
    ],
    "PDF, page tree 5,000 deep": lambda: [
        _file("c.pdf", "application/pdf", hostile_files.deep_page_tree_pdf())
    ],
    "PDF, 4,500 dangling references": lambda: [
        _file("d.pdf", "application/pdf", hostile_files.warning_pdf())
    ],
    "20 images of 3000x3000 px": lambda: [
        _file(f"i{n}.png", "image/png", _large_png(n)) for n in range(20)
    ],
    "a 2 MB text file": lambda: [_file("t.txt", "text/plain", ("word " * 419_000).encode())],
}


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _wait_for_the_model_lists(client: httpx2.Client, limit: float = 60.0) -> None:
    """Until the launch's refresh of the model lists has an answer (here a failure: the
    configured server does not exist)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        providers = client.get("/api/models").json()["providers"]
        if all(p["fetchedAt"] or p["error"] for p in providers):
            return
        time.sleep(0.1)


def main() -> None:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    cases = {name: make for name, make in CASES.items() if only in name}
    data_dir = Path(tempfile.mkdtemp(prefix="foldline-hostile-"))
    (data_dir / "config.toml").write_text(CONFIG_TOML)
    env = {**os.environ, "FOLDLINE_TOKEN": TOKEN}
    server = subprocess.Popen(
        [sys.executable, "-m", "foldline.cli", "serve", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    base = line.split(" at ")[1].split("/#")[0]
    client = httpx2.Client(base_url=base, headers=AUTH, timeout=600)
    other = client.post("/api/conversations", json={"title": "other"}).json()["id"]
    # A fresh server's first read of a conversation, and its launch's background work
    # (the model lists asked, importing the provider SDK: a second of CPU that holds the
    # GIL in long stretches), are the launch's costs, not a hostile file's: both are
    # let finish before the cases.
    assert client.get(f"/api/conversations/{other}").status_code == 200
    _wait_for_the_model_lists(client)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print(f"server pid {server.pid}", flush=True)
    for name, make in cases.items():
        files = make()
        target = client.post("/api/conversations", json={}).json()["id"]
        answer: list[Any] = []

        def send(
            files: list[dict[str, str]] = files, target: str = target, answer: list[Any] = answer
        ) -> None:
            started = time.perf_counter()
            reply = client.post(
                f"/api/conversations/{target}/messages",
                json={"content": "read this", "attachments": files},
            )
            answer.append((reply.status_code, time.perf_counter() - started))

        thread = threading.Thread(target=send)
        thread.start()
        reads: list[float] = []
        while thread.is_alive():
            started = time.perf_counter()
            assert client.get(f"/api/conversations/{other}").status_code == 200
            reads.append(time.perf_counter() - started)
            time.sleep(0.05)
        thread.join()
        status, took = answer[0]
        median = statistics.median(reads) * 1000 if reads else 0.0
        worst = max(reads) * 1000 if reads else 0.0
        print(
            f"{name:34} send {status} in {took:5.1f} s; other GET x{len(reads):3}: "
            f"median {median:5.1f} ms, max {worst:6.1f} ms; server peak RSS "
            f"{_peak_rss_mib(server.pid):.0f} MiB",
            flush=True,
        )
    for name, make in [(n, m) for n, m in cases.items() if n.startswith("PDF")]:
        data = base64.b64decode(make()[0]["dataBase64"])
        started = time.perf_counter()
        try:
            read = read_pdf_isolated("x.pdf", data)
            outcome = f"{read.pages} pages, {len(read.text):,} characters"
            rss = read.peak_rss_kib / 1024
        except Exception as refusal:
            outcome, rss = f"refused ({str(refusal)[7:70]})", float("nan")
        print(
            f"{name:34} read alone in {time.perf_counter() - started:5.1f} s: {outcome}; "
            f"reader's peak RSS {rss:.0f} MiB",
            flush=True,
        )
    server.terminate()
    server.wait(30)


if __name__ == "__main__":
    main()
