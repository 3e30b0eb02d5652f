"""What a long history costs the server: the meter's count, version switches, pages.

The conversation of `ui_bench.py` (10,000 messages by default, a fold in the middle, a
second version of message 2 and of the last question) is written to a fresh store and
a real Foldline server runs in this process; every number is an HTTP round trip from a
client thread (median of `--repeat`):

- *context, first*: `GET …/context?messages=false` (the meter) once after the server
  started: counts not yet stored are made here (once per message and tokenizer);
- *context*: the same again, the counts stored;
- *context with messages*: `GET …/context` (what "what the model sees" reads);
- *switch at message 2 / back*: `PUT …/active-leaf` to the other version of message 2,
  and back to the long branch (each moves the path of the whole history);
- *switch at the end*: the same for the last question's two versions;
- *newest page*: `GET …/messages` of the 50 newest messages (what opening reads).

    .venv/bin/python benchmarks/history_bench.py --messages 10000 --repeat 9
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ui_bench import CONFIG, TOKEN, seed

from foldline.server.app import create_app
from foldline.server.runner import start_server_in_thread
from foldline.store import Store


def call(url: str, method: str = "GET", body: dict[str, object] | None = None) -> object:
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def timed_ms(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="foldline-history-bench-") as folder:
        data_dir = Path(folder)
        (data_dir / "config.toml").write_text(CONFIG, encoding="utf-8")
        conversation_id, leaf_id = seed(data_dir, args.messages)
        with Store(data_dir / "foldline.db") as store:
            path = store.list_messages(conversation_id, offset=0, limit=args.messages)
            other_start = store.sibling_ids(conversation_id, [path[2].id])[path[2].id]
            other_end = store.sibling_ids(conversation_id, [path[-2].id])[path[-2].id]
        edited_start = next(i for i in other_start if i != path[2].id)
        edited_end = next(i for i in other_end if i != path[-2].id)
        server = start_server_in_thread(create_app(data_dir=data_dir, token=TOKEN))
        base = f"{server.url}/api/conversations/{conversation_id}"
        try:
            results["context, first (counts made)"] = timed_ms(
                lambda: call(f"{base}/context?messages=false")
            )
            runs: dict[str, list[float]] = {}

            def sample(name: str, action: Callable[[], object]) -> None:
                runs.setdefault(name, []).append(timed_ms(action))

            def switch(message_id: str) -> object:
                return call(f"{base}/active-leaf", "PUT", {"messageId": message_id})

            for _ in range(args.repeat):
                sample("context (meter)", lambda: call(f"{base}/context?messages=false"))
                sample("context with messages", lambda: call(f"{base}/context"))
                sample("switch at message 2", lambda: switch(edited_start))
                sample("context after that switch", lambda: call(f"{base}/context?messages=false"))
                sample("switch back from message 2", lambda: switch(leaf_id))
                sample("switch at the end", lambda: switch(edited_end))
                sample("switch back at the end", lambda: switch(leaf_id))
                sample(
                    "newest page",
                    lambda: call(f"{base}/messages?offset={args.messages - 50}&limit=50"),
                )
            results |= {name: statistics.median(values) for name, values in runs.items()}
        finally:
            server.stop()
    print(
        f"{args.messages:,} messages; median of {args.repeat}; "
        f"{platform.machine()} Python {platform.python_version()}"
    )
    for name, value in results.items():
        print(f"{name:32s} {value:9.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
