"""Token counting cost: a full recount of a long view vs the cached-count "gate".

Before every model call the turn loop asks "how many tokens is the view now?". Counting
every message again costs time proportional to the whole view; adding up per-message
counts cached in the store (or anchoring on the last call's usage) does not encode
anything. This benchmark measures both on a synthetic 10,000-message view.

Run: .venv/bin/python benchmarks/count_bench.py [--messages 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable

from foldline.core.budget import TokenAnchor, tokens_now
from foldline.core.messages import (
    Message,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.tokens import TokenCounter
from foldline.tokenizers import counter_for

# Prose, code-ish words and numbers, so both encodings see a realistic mix.
WORDS = [
    "the",
    "fold",
    "keeps",
    "every",
    "message",
    "the",
    "model",
    "sees",
    "a",
    "summary",
    "plus",
    "recent",
    "turns",
    "tokens",
    "budget",
    "window",
    "context",
    "compaction",
    "tool",
    "result",
    "output",
    "file",
    "function",
    "error",
    "retry",
    "stream",
    "cache",
    "def",
    "return",
    "import",
    "class",
    "self",
    "value",
    "index",
    "list",
    "dict",
    "async",
    "await",
    "None",
    "True",
    "False",
    "0",
    "1",
    "42",
]

TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file from the workspace.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path to read"}},
            "required": ["path"],
        },
    ),
    ToolSpec(
        name="getContextStats",
        description="Tokens in the context, the budget and the fold version.",
        input_schema={"type": "object", "properties": {}},
    ),
]


def synthetic_view(count: int, seed: int = 7) -> list[Message]:
    """A deterministic mix: user turns, assistant answers, tool calls and their results."""
    rng = random.Random(seed)

    def text(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words))

    view: list[Message] = []
    while len(view) < count:
        view.append(user(text(rng.randint(10, 60))))
        if rng.random() < 0.4:
            call = ToolCallPart(id=f"call_{len(view)}", name="read_file", input={"path": text(3)})
            view.append(assistant(text(rng.randint(5, 20)), call))
            output = text(rng.randint(100, 400))
            view.append(
                tool_results(ToolResultPart(call_id=call.id, name=call.name, output=output))
            )
        view.append(assistant(text(rng.randint(40, 200))))
    return view[:count]


def timed(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    """Median wall time in seconds over `repeat` runs, and the (identical) result."""
    samples: list[float] = []
    result = 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), result


def bench(label: str, counter: TokenCounter, view: list[Message], repeat: int) -> list[str]:
    system = "You are Foldline's assistant. " * 20
    full_time, full = timed(lambda: counter.count_request(system, view, TOOLS), repeat)

    cache_start = time.perf_counter()
    cached = [counter.count_message(m) for m in view]
    cache_time = time.perf_counter() - cache_start
    base = counter.count_request(system, [], TOOLS)

    gate_time, gated = timed(lambda: base + sum(cached), max(repeat, 20))
    anchor = TokenAnchor(tokens=gated - cached[-1], view_length=len(view) - 1, state_version=1)
    anchor_time, anchored = timed(lambda: tokens_now(anchor, 1, cached, base), max(repeat, 20))
    assert full == gated == anchored, (full, gated, anchored)
    return [
        f"| {label} | full recount (`count_request`) | {full_time * 1000:,.1f} ms | {full:,} |",
        f"| {label} | filling the per-message cache once | {cache_time * 1000:,.1f} ms | |",
        f"| {label} | gate: base + sum of cached counts | {gate_time * 1e6:,.1f} µs | {gated:,} |",
        f"| {label} | gate: last-call anchor + new message | {anchor_time * 1e6:,.1f} µs | "
        f"{anchored:,} |",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    load_start = time.perf_counter()
    counters = {
        "gpt-4o (exact, o200k)": counter_for("gpt-4o", "openai"),
        "claude (estimate, cl100k)": counter_for("claude-sonnet-4-5", "anthropic", 1.1),
    }
    load_time = time.perf_counter() - load_start
    view = synthetic_view(args.messages)

    print(f"Python {platform.python_version()} on {platform.processor() or platform.machine()}")
    print(f"view: {len(view):,} messages; encodings loaded in {load_time * 1000:,.0f} ms\n")
    print("| counter | operation | time (median) | tokens |")
    print("| --- | --- | --- | --- |")
    for label, counter in counters.items():
        for row in bench(label, counter, view, args.repeat):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
