"""HTTP server benchmark: event-stream overhead, concurrent streams, `GET /context`.

The server runs in a child process (this script with `--serve`), so the client's work
does not compete with it for the GIL; both use the same fake model
(`foldline.testing.ScriptedModel`, a reply of `--deltas` text deltas, no delay in parts
1-3). It measures:

1. time to first event: from sending `POST /messages` to the first SSE event
   (`message.created`) and to the first `assistant.delta`, compared with asking the fake
   model directly for its first delta and with the chat service in-process (no HTTP);
2. `--streams` conversations streaming at once (each `--turns` turns in a row): errors,
   events per second, turn latency;
3. `GET /context` on a conversation of `--history` messages: requests per second and
   latency, one client and four at once;
4. reads while turns stream: the conversation list plus a `GET /context`, idle and while
   `--busy-streams` conversations of `--history` messages each stream turns (the goal:
   the p95 under load within 3x the idle median), and how late the server's event loop
   wakes a 5 ms sleep in each phase. Here the fake model waits `--delta-delay` seconds
   before each delta (0.03 s: 8 characters every 30 ms, a fast real model); with 0 the
   streams are a closed loop that takes every cycle the machine has, so the reads measure
   their share of the CPU, not what blocks them. `--only-reads` runs just this part;
   `--slow-callbacks FILE` writes every step of the server's loop over 20 ms to FILE.

Rerun: `.venv/bin/python benchmarks/server_bench.py` (about a minute on 2 shared cores).
Results go to docs/benchmarks.md, `## HTTP server`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2
from loop_instruments import LOOP_LAG_PATH, LoopLagProbe, record_slow_callbacks

from foldline.core.messages import assistant, user
from foldline.testing.scripted import ScriptedModel
from foldline.testing.steps import Reply

TOKEN = "benchmark-token-0123456789abcdefghijklmnop"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WARMUP = 5
"""Unmeasured first turns: the first ones load tokenizers and warm SQLite's caches."""
CONFIG_TOML = """\
[defaults]
model = "bench-model"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."bench-model"]
provider = "local"
context_window = 200000
max_output_tokens = 4096
"""


def fake_model(deltas: int, delay: float = 0.0) -> ScriptedModel:
    """Answers every call with `deltas` text deltas of 8 characters each, `delay`
    seconds before each one."""
    reply = Reply(text="lorem ip" * deltas, chunk_chars=8, delay=delay)
    return ScriptedModel(when_empty=reply)


# --- the server process ------------------------------------------------------------

SLOW_CALLBACKS_ENV = "FOLDLINE_BENCH_SLOW_CALLBACKS"
NO_FREEZE_ENV = "FOLDLINE_BENCH_NO_FREEZE"
"""Set (by `--no-freeze`): the server keeps every object in the garbage collector's full
passes, as a test's app does, instead of freezing its heap at start as the launched
app does (`foldline.server.heap_freeze`)."""


def serve(data_dir: Path, deltas: int, history: int, busy: int, delay: float) -> None:
    """Child process: build the app on a fake model, print `PORT CONVERSATION BUSY...`
    (`busy` more conversations of the same history, for part 4), serve until stdin
    closes."""
    if os.environ.get(SLOW_CALLBACKS_ENV):
        record_slow_callbacks(Path(os.environ[SLOW_CALLBACKS_ENV]))
    from foldline.chat.service import ChatService
    from foldline.server.app import create_app
    from foldline.server.config_source import ConfigSource
    from foldline.server.runner import start_server_in_thread
    from foldline.store import Store

    (data_dir / "config.toml").write_text(CONFIG_TOML, encoding="utf-8")
    store = Store(data_dir / "foldline.db")
    model = fake_model(deltas, delay)
    chat = ChatService(store, ConfigSource(data_dir), provider_factory=lambda c, m: model)
    words = " ".join(f"word{i}" for i in range(40))
    seeded = []
    for _ in range(1 + busy):
        conversation = store.create_conversation(title="context benchmark")
        store.append_messages(
            conversation.id,
            [
                user(f"{i} {words}") if i % 2 == 0 else assistant(f"{i} {words}")
                for i in range(history)
            ],
        )
        seeded.append(conversation.id)
    app = create_app(
        data_dir=data_dir,
        token=TOKEN,
        store=store,
        chat_service=chat,
        freeze_heap=not os.environ.get(NO_FREEZE_ENV),
    )
    server = start_server_in_thread(LoopLagProbe(app), "127.0.0.1", 0)
    print(server.port, *seeded, flush=True)
    sys.stdin.read()  # the parent closes our stdin to stop us
    server.stop()
    store.close()


class ServerProcess:
    def __init__(self, deltas: int, history: int, busy: int = 0, delay: float = 0.0) -> None:
        self.directory = tempfile.TemporaryDirectory()
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                self.directory.name,
                "--deltas",
                str(deltas),
                "--history",
                str(history),
                "--busy-streams",
                str(busy),
                "--delta-delay",
                str(delay),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        port, conversation, *busy_conversations = self.process.stdout.readline().split()
        self.url = f"http://127.0.0.1:{port}"
        self.seeded_conversation = conversation
        self.busy_conversations = busy_conversations

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
        self.directory.cleanup()


# --- measurements ------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def describe_ms(values: list[float]) -> str:
    return (
        f"p50 {percentile(values, 0.5) * 1000:7.2f} ms   "
        f"p99 {percentile(values, 0.99) * 1000:7.2f} ms   (n={len(values)})"
    )


def direct_first_delta(deltas: int, samples: int) -> list[float]:
    """The fake model alone: time from `stream()` to its first text delta."""
    from foldline.providers.base import ModelRequest, TextDelta

    model = fake_model(deltas)
    request = ModelRequest(model="bench-model", system="", messages=[user("hello")])

    async def once() -> float:
        started = time.perf_counter()
        async for event in model.stream(request):
            if isinstance(event, TextDelta):
                elapsed = time.perf_counter() - started
                break
        return elapsed

    async def run() -> list[float]:
        for _ in range(WARMUP):
            await once()
        return [await once() for _ in range(samples)]

    return asyncio.run(run())


def chat_service_first_delta(deltas: int, samples: int) -> list[float]:
    """The chat service in-process (store, gate, counting, no HTTP): `start_turn` to the
    first `assistant.delta` event."""
    from foldline.chat.service import ChatService
    from foldline.server.config_source import ConfigSource
    from foldline.store import Store

    with tempfile.TemporaryDirectory() as directory:
        data_dir = Path(directory)
        (data_dir / "config.toml").write_text(CONFIG_TOML, encoding="utf-8")
        store = Store(data_dir / "foldline.db")
        model = fake_model(deltas)
        chat = ChatService(store, ConfigSource(data_dir), provider_factory=lambda c, m: model)

        async def once() -> float:
            conversation = store.create_conversation(title="bench").id
            started = time.perf_counter()
            handle = await chat.start_turn(conversation, "hello")
            elapsed = 0.0
            async for event in handle.events():
                if event.name == "assistant.delta" and not elapsed:
                    elapsed = time.perf_counter() - started
            return elapsed

        async def run() -> list[float]:
            for _ in range(WARMUP):
                await once()
            return [await once() for _ in range(samples)]

        try:
            return asyncio.run(run())
        finally:
            store.close()


def http_first_events(url: str, samples: int) -> tuple[list[float], list[float]]:
    """Over HTTP: send to the first SSE event, and to the first `assistant.delta`."""
    first_event: list[float] = []
    first_delta: list[float] = []
    with httpx2.Client(base_url=url, headers=AUTH, timeout=30) as client:
        for sample in range(WARMUP + samples):
            conversation = client.post("/api/conversations", json={}).json()["id"]
            started = time.perf_counter()
            seen_event = seen_delta = 0.0
            with client.stream(
                "POST", f"/api/conversations/{conversation}/messages", json={"content": "hello"}
            ) as reply:
                assert reply.status_code == 200, reply.status_code
                for line in reply.iter_lines():
                    now = time.perf_counter()
                    if line.startswith("event: ") and not seen_event:
                        seen_event = now - started
                    if line == "event: assistant.delta" and not seen_delta:
                        seen_delta = now - started
            if sample >= WARMUP:
                first_event.append(seen_event)
                first_delta.append(seen_delta)
    return first_event, first_delta


async def concurrent_streams(url: str, streams: int, turns: int) -> dict[str, float]:
    errors = 0
    events = 0
    latencies: list[float] = []

    async def one_conversation(client: httpx2.AsyncClient) -> None:
        nonlocal errors, events
        conversation = (await client.post("/api/conversations", json={})).json()["id"]
        for turn in range(turns):
            started = time.perf_counter()
            done = False
            async with client.stream(
                "POST",
                f"/api/conversations/{conversation}/messages",
                json={"content": f"turn {turn}"},
            ) as reply:
                if reply.status_code != 200:
                    errors += 1
                    continue
                async for line in reply.aiter_lines():
                    if line.startswith("event: "):
                        events += 1
                        if line == "event: error":
                            errors += 1
                        done = done or line == "event: done"
            if not done:
                errors += 1
            latencies.append(time.perf_counter() - started)

    limits = httpx2.Limits(max_connections=streams * 2)
    async with httpx2.AsyncClient(base_url=url, headers=AUTH, timeout=60, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(one_conversation(client) for _ in range(streams)))
        wall = time.perf_counter() - started
    return {
        "errors": errors,
        "events": events,
        "wall": wall,
        "events_per_s": events / wall,
        "turns_per_s": streams * turns / wall,
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
    }


def context_throughput(url: str, conversation: str, requests: int, clients: int) -> dict:
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(count: int) -> None:
        with httpx2.Client(base_url=url, headers=AUTH, timeout=30) as client:
            for _ in range(count):
                started = time.perf_counter()
                reply = client.get(f"/api/conversations/{conversation}/context")
                elapsed = time.perf_counter() - started
                assert reply.status_code == 200, reply.status_code
                with lock:
                    latencies.append(elapsed)

    threads = [threading.Thread(target=worker, args=(requests // clients,)) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {"rps": len(latencies) / wall, "latencies": latencies}


def read_once(client: httpx2.Client, conversation: str) -> float:
    """The conversation list plus one context read, as the UI does on opening a chat."""
    started = time.perf_counter()
    listed = client.get("/api/conversations")
    context = client.get(f"/api/conversations/{conversation}/context")
    assert listed.status_code == 200 and context.status_code == 200
    return time.perf_counter() - started


def loop_lags(client: httpx2.Client) -> list[float]:
    """The server loop's lags since the last call (see `LoopLagProbe`)."""
    return client.get(LOOP_LAG_PATH).json()


def reads_while_streaming(server: ServerProcess, samples: int) -> dict[str, list[float]]:
    """Idle reads, then the same reads while every busy conversation streams turns;
    with the server loop's lags in each phase."""
    with httpx2.Client(base_url=server.url, headers=AUTH, timeout=60) as client:
        # One turn first, in a conversation of its own: the first turn asks the local
        # server what it is, importing the OpenAI SDK (a second of CPU, more on a busy
        # machine), which the launched app does at launch; measured here it would land
        # in the first busy reads.
        warm = client.post("/api/conversations", json={}).json()["id"]
        with client.stream(
            "POST", f"/api/conversations/{warm}/messages", json={"content": "warm up"}
        ) as reply:
            for _line in reply.iter_lines():
                pass
        for _ in range(WARMUP):
            read_once(client, server.seeded_conversation)
        loop_lags(client)
        idle = [read_once(client, server.seeded_conversation) for _ in range(samples)]
        idle_lags = loop_lags(client)
        stop = threading.Event()

        async def stream_turns() -> None:
            limits = httpx2.Limits(max_connections=len(server.busy_conversations) * 2)
            async with httpx2.AsyncClient(
                base_url=server.url, headers=AUTH, timeout=120, limits=limits
            ) as streaming:

                async def keep_streaming(conversation: str) -> None:
                    while not stop.is_set():
                        async with streaming.stream(
                            "POST",
                            f"/api/conversations/{conversation}/messages",
                            json={"content": "next"},
                        ) as reply:
                            async for _line in reply.aiter_lines():
                                pass

                await asyncio.gather(*map(keep_streaming, server.busy_conversations))

        streamer = threading.Thread(target=lambda: asyncio.run(stream_turns()))
        streamer.start()
        time.sleep(1.0)  # let every stream get going
        try:
            loop_lags(client)
            busy = [read_once(client, server.seeded_conversation) for _ in range(samples)]
            busy_lags = loop_lags(client)
        finally:
            stop.set()
            streamer.join()
    return {"idle": idle, "busy": busy, "idle_lags": idle_lags, "busy_lags": busy_lags}


def report_reads(reads: dict[str, list[float]], streams: int, delay: float) -> None:
    idle_median = statistics.median(reads["idle"])
    busy_p95 = percentile(reads["busy"], 0.95)
    print(
        f"4. conversation list + GET /context, idle and while {streams} turns stream "
        f"({delay * 1000:.0f} ms before each delta)"
    )
    print(f"   idle                                    {describe_ms(reads['idle'])}")
    print(
        f"   while streaming                         {describe_ms(reads['busy'])}   "
        f"p95 {busy_p95 * 1000:.1f} ms"
    )
    print(f"   p95 under load / idle median            {busy_p95 / idle_median:7.2f}x")
    for phase in ("idle", "busy"):
        lags = reads[f"{phase}_lags"]
        print(
            f"   event loop lag, {phase}                   "
            f"p50 {percentile(lags, 0.5) * 1000:7.2f} ms   "
            f"p99 {percentile(lags, 0.99) * 1000:7.2f} ms   max {max(lags) * 1000:7.2f} ms"
        )
    print()


def run_reads(args: argparse.Namespace) -> None:
    """Part 4, on a server whose fake model waits `--delta-delay` before each delta."""
    server = ServerProcess(args.deltas, args.history, args.busy_streams, args.delta_delay)
    try:
        reads = reads_while_streaming(server, args.reads)
        report_reads(reads, args.busy_streams, args.delta_delay)
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", metavar="DATA_DIR", help=argparse.SUPPRESS)
    parser.add_argument("--deltas", type=int, default=50, help="text deltas per reply")
    parser.add_argument("--samples", type=int, default=100, help="turns for time to first event")
    parser.add_argument("--streams", type=int, default=20, help="conversations at once")
    parser.add_argument("--turns", type=int, default=5, help="turns per concurrent conversation")
    parser.add_argument("--history", type=int, default=200, help="messages for GET /context")
    parser.add_argument("--requests", type=int, default=400, help="GET /context requests")
    parser.add_argument(
        "--busy-streams", type=int, default=10, help="conversations streaming during part 4"
    )
    parser.add_argument("--reads", type=int, default=60, help="reads per phase in part 4")
    parser.add_argument(
        "--delta-delay",
        type=float,
        default=0.03,
        help="seconds before each delta of part 4's streams (0: no delay, a saturated loop)",
    )
    parser.add_argument("--only-reads", action="store_true", help="run part 4 only")
    parser.add_argument(
        "--slow-callbacks",
        metavar="FILE",
        help="write the server's event-loop steps over 20 ms to FILE (slowest first)",
    )
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="the server does not freeze its heap at start (the comparison for the freeze)",
    )
    args = parser.parse_args()
    if args.no_freeze:
        os.environ[NO_FREEZE_ENV] = "1"
    if args.slow_callbacks:
        os.environ[SLOW_CALLBACKS_ENV] = str(Path(args.slow_callbacks).resolve())
    if args.serve:
        serve(Path(args.serve), args.deltas, args.history, args.busy_streams, args.delta_delay)
        return
    if args.only_reads:
        run_reads(args)
        return

    print(
        f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}"
    )
    print(f"fake model: {args.deltas} deltas of 8 characters per reply, no delay\n")

    direct = direct_first_delta(args.deltas, args.samples)
    in_process = chat_service_first_delta(args.deltas, args.samples)
    server = ServerProcess(args.deltas, args.history, args.busy_streams)
    try:
        first_event, first_delta = http_first_events(server.url, args.samples)
        print("1. time to first event")
        print(f"   fake model directly, first delta        {describe_ms(direct)}")
        print(f"   chat service in-process, first delta    {describe_ms(in_process)}")
        print(f"   HTTP + SSE, first event                 {describe_ms(first_event)}")
        print(f"   HTTP + SSE, first assistant.delta       {describe_ms(first_delta)}")
        overhead = [h - c for h, c in zip(sorted(first_delta), sorted(in_process), strict=False)]
        print(
            f"   server overhead over in-process (p50)   "
            f"{statistics.median(overhead) * 1000:7.2f} ms\n"
        )

        result = asyncio.run(concurrent_streams(server.url, args.streams, args.turns))
        print(f"2. {args.streams} conversations streaming at once, {args.turns} turns each")
        print(
            f"   errors {result['errors']}, {result['events']} events in "
            f"{result['wall']:.2f} s: {result['events_per_s']:.0f} events/s, "
            f"{result['turns_per_s']:.1f} turns/s"
        )
        print(
            f"   turn latency p50 {result['p50'] * 1000:.0f} ms, "
            f"p99 {result['p99'] * 1000:.0f} ms\n"
        )

        print(f"3. GET /context, {args.history} messages in the conversation")
        for clients in (1, 4):
            context_throughput(server.url, server.seeded_conversation, 20, 1)  # warm-up
            measured = context_throughput(
                server.url, server.seeded_conversation, args.requests, clients
            )
            print(
                f"   {clients} client(s): {measured['rps']:6.0f} requests/s   "
                f"{describe_ms(measured['latencies'])}"
            )
        print()
    finally:
        server.close()
    run_reads(args)


if __name__ == "__main__":
    main()
