"""Branching benchmark: what edits and branch switches cost on a long conversation.

Builds one conversation of N messages on one path (a fold near the end), then starts a
branch every `--every` messages by editing a question there (each branch one exchange
long), and measures, median of `--repeat` runs:

- switching to the branch that leaves the path nearest the start and back: the flags of
  the whole differing segment (almost N messages) are rewritten each way;
- switching between two branches near the end (a few rows rewritten);
- an edit near the end (a new branch, the fold pointer walked);
- what every reading step pays: `load_window` and a page of 100 messages with the
  siblings of each (the `‹ k / n ›` switcher), on the tree against the same reads on a
  conversation of one path.

Rerun: `.venv/bin/python benchmarks/tree_bench.py --messages 20000` (about a minute on
2 shared cores). Results go to docs/benchmarks.md, `## Branches`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from foldline.core.messages import assistant, user
from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import Store


def median_ms(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def build(store: Store, messages: int) -> str:
    cid = store.create_conversation().id
    for start in range(0, messages, 2000):
        store.append_messages(
            cid,
            [
                user(f"question {i} " + "words " * 20)
                if i % 2 == 0
                else assistant(f"answer {i} " + "words " * 60)
                for i in range(start, min(start + 2000, messages))
            ],
        )
    boundary = messages - 40
    store.commit_fold(
        cid,
        CompactionState(
            version=1,
            compacted_at="2026-01-01T00:00:00Z",
            summary_message="everything before the last 40 messages",
            api_start_index=boundary,
            summarized_range=SummarizedRange(
                from_index=0, to_index=boundary, message_count=boundary
            ),
            strategy="structured",
            trigger="auto",
            tokens_before=1,
            tokens_after=1,
        ),
        expected_version=0,
    )
    return cid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = Store(Path(directory) / "tree.db")
        plain = build(store, args.messages)
        cid = build(store, args.messages)
        path = store.list_messages(cid, limit=args.messages)
        leaf = path[-1].id
        branches = []
        for index in range(2, args.messages - 40, args.every):
            store.switch_branch(cid, leaf)
            store.branch(cid, path[index - 1].id, user(f"edited question {index}"))
            branches.append(store.append_message(cid, assistant("edited answer")).id)
        store.switch_branch(cid, leaf)
        total = len(branches) * 2 + args.messages
        print(f"{args.messages:,} messages on the path, {len(branches)} branches, {total:,} rows")

        def far_and_back() -> None:
            store.switch_branch(cid, branches[0])
            store.switch_branch(cid, leaf)

        def near_pair() -> None:
            store.switch_branch(cid, branches[-1])
            store.switch_branch(cid, branches[-2])

        print(f"switch to the first branch and back: {median_ms(far_and_back, args.repeat):.1f} ms")
        print(f"switch between two late branches: {median_ms(near_pair, args.repeat) / 2:.2f} ms")
        store.switch_branch(cid, leaf)
        late = store.list_messages(cid, offset=args.messages - 10, limit=1)[0]

        def edit_late() -> None:
            store.branch(cid, late.parent_id, user("one more edit"))

        print(f"an edit near the end: {median_ms(edit_late, args.repeat):.2f} ms")
        store.switch_branch(cid, leaf)
        for name, conversation in (("one path", plain), ("tree", cid)):
            window = median_ms(lambda c=conversation: store.load_window(c), args.repeat)

            def page(c: str = conversation) -> None:
                records = store.list_messages(c, offset=2, limit=100)
                store.sibling_ids(c, [r.id for r in records])

            print(
                f"{name}: load_window {window:.2f} ms, "
                f"a page of 100 with siblings {median_ms(page, args.repeat):.2f} ms"
            )
        store.close()


if __name__ == "__main__":
    main()
