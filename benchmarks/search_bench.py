"""The sidebar's search on one long conversation: a list search (`GET /api/conversations?q=`)
finds the conversation and its newest matching message, with the number of matches.

Each message of one conversation holds the searched word, so every message matches (the
worst case for the match count). Prints the seconds of `Store.search_hit` (the query the
list search runs per conversation found) at each size.

    PYTHONPATH=backend python benchmarks/search_bench.py [2000 5000 10000 20000]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from foldline.core.messages import assistant, user
from foldline.store import Store


def run(size: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "foldline.db")
        conversation = store.create_conversation(title="long").id
        batch = []
        for n in range(size // 2):
            batch += [user(f"question {n} about widgets"), assistant(f"answer {n} on widgets")]
            if len(batch) >= 1000:
                store.append_messages(conversation, batch)
                batch = []
        if batch:
            store.append_messages(conversation, batch)
        started = time.perf_counter()
        hit = store.search_hit(conversation, "widgets")
        took = time.perf_counter() - started
        assert hit is not None and hit.match_count == size, hit
        store.close()
        return took


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [2000, 5000, 10000, 20000]
    for size in sizes:
        print(f"{size:>6} messages: search_hit {run(size):.3f} s", flush=True)


if __name__ == "__main__":
    main()
