"""Storage benchmark: the model's view, streamed writes, search and size on disk.

Builds one synthetic conversation and grows it to each size (1k, 10k, 100k display
messages by default). At each size a fold is committed near the end (40 messages stay in
the view, as after a real fold), then it measures:

- `load_window`: the current fold + the rows from apiStartIndex (what every step reads);
- the gate: `load_window` + `build_api_messages` + exact token count of the request
  (gpt-4o, o200k_base) + `policy.decide`, i.e. everything before a model call;
- the first page of the display history (`list_messages`, 100 rows);

and at the largest size:

- streamed-answer flushes: `update_message` rewriting an answer of growing length, which
  is what the chat loop does at each flush (the whole parts JSON and its search entry
  are rewritten), and what that costs per second at several flush intervals;
- full-text search latency (`search_messages`, `list_conversations(q=...)`);
- bytes per message on disk (after a WAL checkpoint), split by table with `dbstat`.

Rerun: `.venv/bin/python benchmarks/store_bench.py` (about two minutes on 2 shared cores;
`--sizes 1000 10000` for a quick run). Results go to docs/benchmarks.md, `## Storage`.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from foldline.core.budget import Budget
from foldline.core.messages import (
    HistoryWindow,
    Message,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.policy import BreakerState, decide
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, SummarizedRange
from foldline.core.view import build_api_messages
from foldline.store import Store
from foldline.tokenizers import counter_for

KEPT_IN_VIEW = 40
OTHER_CONVERSATIONS = 30
SYSTEM = "You are a helpful assistant."
TOOLS = [ToolSpec(name="shell", description="Run a shell command.")]

WORDS = [
    "parser",
    "config",
    "migration",
    "fold",
    "summary",
    "token",
    "budget",
    "thread",
    "window",
    "index",
    "commit",
    "version",
    "stream",
    "answer",
    "question",
    "error",
    "retry",
    "import",
    "export",
    "search",
] + [f"w{n}" for n in range(4000)]


class TextMaker:
    """Deterministic pseudo-text with a skewed vocabulary (a few words are very common)."""

    def __init__(self, seed: int = 7) -> None:
        self.random = random.Random(seed)
        self.cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(WORDS))))

    def words(self, count: int) -> str:
        return " ".join(self.random.choices(WORDS, cum_weights=self.cumulative, k=count))


def exchange(maker: TextMaker, n: int) -> list[Message]:
    """A user turn with one tool round trip: 4 display messages, ~2.5 kB of text."""
    call = ToolCallPart(id=f"call_{n}", name="shell", input={"cmd": f"grep -rn {maker.words(2)}"})
    return [
        user(maker.words(30)),
        assistant(maker.words(60), call),
        tool_results(ToolResultPart(call_id=f"call_{n}", name="shell", output=maker.words(200))),
        assistant(maker.words(120)),
    ]


def grow(store: Store, conversation_id: str, maker: TextMaker, target: int) -> None:
    count = store.message_count(conversation_id)
    batch: list[Message] = []
    while count + len(batch) < target:
        batch += exchange(maker, count + len(batch))
        if len(batch) >= 1000:
            store.append_messages(conversation_id, batch)
            count += len(batch)
            batch = []
    if batch:
        store.append_messages(conversation_id, batch)


def fold_near_the_end(store: Store, conversation_id: str) -> None:
    current = store.current_compaction(conversation_id)
    count = store.message_count(conversation_id)
    start = count - KEPT_IN_VIEW
    # Keep the boundary at a user message (a safe cut point, as the engine would).
    start -= start % 4
    previous = current.api_start_index if current else 0
    expected = current.version if current else 0
    store.commit_fold(
        conversation_id,
        CompactionState(
            version=expected + 1,
            compacted_at="2025-01-01T00:00:00Z",
            summary_message="## Active Task\n" + TextMaker(expected).words(400),
            api_start_index=start,
            summarized_range=SummarizedRange(
                from_index=previous, to_index=start, message_count=start - previous
            ),
            strategy="structured",
            trigger="auto",
            tokens_before=100_000,
            tokens_after=20_000,
            model="bench",
        ),
        expected_version=expected,
    )


def timed(action: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, min) milliseconds over `repeat` runs, after one warm-up run."""
    action()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), min(samples)


def gate(store: Store, conversation_id: str) -> None:
    counter = counter_for("gpt-4o", "openai")
    state, records = store.load_window(conversation_id)
    start = state.api_start_index if state else 0
    view = build_api_messages(HistoryWindow(start, [r.message for r in records]), state)
    tokens = counter.count_request(SYSTEM, view, TOOLS)
    decide(
        tokens=tokens,
        budget=Budget(context_window=128_000, max_output_tokens=16_384),
        settings=CompactionSettings(),
        mid_tool_loop=False,
        reclaimable_prune_tokens=0,
        breaker=BreakerState(),
    )


def flush_costs(store: Store, conversation_id: str, repeat: int) -> list[tuple[int, float]]:
    """Milliseconds per `update_message` of a streamed answer at several lengths."""
    maker = TextMaker(99)
    record = store.append_message(conversation_id, assistant(""), status="streaming")
    results = []
    for length in (1_000, 4_000, 16_000, 64_000):
        text = maker.words(length // 5)[:length]
        median, _ = timed(
            lambda text=text: store.update_message(record.id, message=assistant(text)), repeat
        )
        results.append((length, median))
    store.update_message(record.id, status="complete")
    return results


def disk_usage(store: Store, path: Path) -> tuple[int, dict[str, int]]:
    conn = store._pool.get().conn
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    by_table: dict[str, int] = {}
    for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
        group = "messages_fts (search)" if name.startswith("messages_fts") else name
        group = (
            "messages indexes"
            if name.startswith(("messages_by", "sqlite_autoindex_mess"))
            else group
        )
        by_table[group] = by_table.get(group, 0) + size
    return path.stat().st_size, by_table


def interleaved(
    actions: dict[int, Callable[[], object]], repeat: int
) -> dict[int, tuple[float, float]]:
    """(median, min) ms per key, measured in rounds that visit every key in turn.

    The machine is shared: a burst of someone else's work would otherwise land on one
    size and fake a difference. Interleaving spreads the noise over all sizes alike.
    """
    samples: dict[int, list[float]] = {key: [] for key in actions}
    for action in actions.values():
        action()  # warm-up
    for _ in range(repeat):
        for key, action in actions.items():
            started = time.perf_counter()
            action()
            samples[key].append((time.perf_counter() - started) * 1000)
    return {key: (statistics.median(v), min(v)) for key, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=100)
    arguments = parser.parse_args()
    sizes = sorted(arguments.sizes)

    print(
        f"Python {platform.python_version()}, processor {platform.processor()!r}, "
        f"SQLite {sqlite3.sqlite_version}"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        store = Store(path)
        maker = TextMaker()
        build_started = time.perf_counter()
        # Other conversations in the sidebar, so title and list searches have company.
        for n in range(OTHER_CONVERSATIONS):
            other = store.create_conversation(title=f"{maker.words(3)} {n}")
            grow(store, other.id, maker, 20)
        # One conversation per size, all in the same database, each folded near its end.
        conversations: dict[int, str] = {}
        for size in sizes:
            conversation = store.create_conversation(title=f"benchmark {size}")
            grow(store, conversation.id, maker, size)
            fold_near_the_end(store, conversation.id)
            conversations[size] = conversation.id
        build_seconds = time.perf_counter() - build_started
        total = sum(
            c.message_count for c in store.list_conversations(limit=OTHER_CONVERSATIONS + 10)
        )
        print(f"built {total:,} messages in {build_seconds:.0f} s")

        def per_size(make: Callable[[str], Callable[[], object]]) -> dict[int, tuple[float, float]]:
            return interleaved({s: make(c) for s, c in conversations.items()}, arguments.repeat)

        window = per_size(lambda c: lambda: store.load_window(c))
        gated = per_size(lambda c: lambda: gate(store, c))
        page = per_size(lambda c: lambda: store.list_messages(c, offset=0, limit=100))

        print("\n| display messages | in view | load_window ms | gate ms | first page ms |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for size, conversation_id in conversations.items():
            in_view = len(store.load_window(conversation_id)[1])
            print(
                f"| {store.message_count(conversation_id):,} | {in_view} + summary "
                f"| {window[size][0]:.2f} (min {window[size][1]:.2f}) "
                f"| {gated[size][0]:.2f} (min {gated[size][1]:.2f}) "
                f"| {page[size][0]:.2f} (min {page[size][1]:.2f}) |"
            )
        largest, smallest = sizes[-1], sizes[0]
        print(
            f"\nratio {largest:,}/{smallest:,} (medians): "
            f"load_window {window[largest][0] / window[smallest][0]:.2f}, "
            f"gate {gated[largest][0] / gated[smallest][0]:.2f}, "
            f"first page {page[largest][0] / page[smallest][0]:.2f}"
        )

        print(
            "\n| answer length (chars) | update_message ms | CPU share, flush every 250 ms "
            "| every 4th delta (~10 flushes/s) | every delta (~40/s) |"
        )
        print("| ---: | ---: | ---: | ---: | ---: |")
        for length, median in flush_costs(store, conversations[largest], arguments.repeat):
            print(
                f"| {length:,} | {median:.2f} | {median / 250 * 100:.2f} % "
                f"| {median * 10 / 10:.1f} % | {median * 40 / 10:.1f} % |"
            )

        print(f"\n| search over {total:,} messages | median ms | min ms | hits |")
        print("| --- | ---: | ---: | ---: |")
        queries = [
            ("rare word `w3999`", lambda: store.search_messages("w3999")),
            ("medium word `w40`", lambda: store.search_messages("w40")),
            ("word in every message `parser`", lambda: store.search_messages("parser")),
            ("two words `fold summary`", lambda: store.search_messages("fold summary")),
            ("prefix `migra`", lambda: store.search_messages("migra")),
            ("short prefix `mi`", lambda: store.search_messages("mi")),
            ("no match `zzz`", lambda: store.search_messages("zzz")),
            ("sidebar filter, rare word", lambda: store.list_conversations("w3999")),
            ("sidebar filter, medium word", lambda: store.list_conversations("w40")),
            ("sidebar filter, word in every message", lambda: store.list_conversations("parser")),
        ]
        for label, action in queries:
            median, low = timed(action, max(5, arguments.repeat // 10))
            print(f"| {label} | {median:.2f} | {low:.2f} | {len(action())} |")

        file_size, by_table = disk_usage(store, path)
        conn = store._pool.get().conn
        payload = conn.execute("SELECT sum(length(parts)) FROM messages").fetchone()[0]
        print(
            f"\n{total:,} messages, file {file_size / 1e6:.1f} MB: "
            f"{file_size / total:,.0f} bytes per message "
            f"(the parts JSON itself averages {payload / total:,.0f} bytes)"
        )
        for name, size in sorted(by_table.items(), key=lambda item: -item[1])[:4]:
            print(f"- {name}: {size / total:,.0f} bytes per message")
        store.close()


if __name__ == "__main__":
    sys.exit(main())
