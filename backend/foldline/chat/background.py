"""Folds nobody waits for: summaries written in the background, committed at a gate.

This module holds what a prepared summary is and how it is checked; the gate that starts,
commits and drops them is `chat/fold_gate.py`, its decision `core.gate.decide_gate`.

A summary of a long view takes a model 30 s to minutes. Written inside a turn, that is
time the person waits before the first token. So:

- when a turn ends with the view at `prepare_threshold`, the summarizer starts at once,
  in a task of its own, for the split the next fold would use, while the person reads
  and types; earlier when the view grows so fast (quick turns, long answers) that a
  summary started there would land after the hard threshold: the pace of the view's
  growth and the time summaries take are observed (`Pace`), and the summary starts
  early enough to be ready at the soft threshold (`core.policy.prepare_from`);
- a ready fold is committed before the soft threshold when the next turn, at the
  observed growth per turn, would reach the hard threshold;
- at the next gate where an automatic fold is due, a prepared summary that is still
  valid (same fold version, the folded messages unchanged, same settings, model and
  system prompt, and the view after it under the threshold) is committed with no model
  call; one that became invalid is dropped (its cost stays on the bill);
- a turn that finds the summary still being written goes ahead unfolded while its
  request fits the input budget (the fold lands at a later gate); only a request that
  would overflow waits for it, with `compaction.started` (`waiting: true`) shown;
- a fold due with nothing prepared starts the preparation and goes ahead, again
  unless the view is at the hard threshold, where the gate folds in line as before;
- after a pause longer than the prompt cache's lifetime, a ready fold is committed at
  the next gate even before it is due: the cache is cold anyway, so the fold breaks no
  cache then;
- the re-summary of an emergency digest is also written in the background, and is
  committed as soon as it is ready if the conversation is idle, else at the next gate.

Deleting a conversation or closing the app cancels its background work; a crash loses
only the unfinished preparation (nothing is written until a commit).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Literal

from foldline.chat.context import ConversationContext
from foldline.chat.folding import FoldMaker
from foldline.chat.usage import SummaryUsage
from foldline.core.compaction import planned_fold_frees
from foldline.core.gate import PreparedKind
from foldline.core.policy import MIN_FREED_SHARE, Pace
from foldline.core.state import CompactionState
from foldline.core.view import build_api_messages

SUMMARY_SECONDS_GUESS = 10.0
"""How long a summary is assumed to take before one was timed in this process."""
PACE_ALPHA = 0.3
"""Weight of the newest observation in the pace's moving averages."""


@dataclass
class Growth:
    """The view's size at the end of a conversation's last turn, and its growth so far."""

    at: float
    """`time.monotonic()` when the turn ended."""
    tokens: int
    version: int
    per_second: float | None = None
    per_turn: float | None = None


def average(previous: float | None, sample: float) -> float:
    """A moving average of the pace's observations."""
    return sample if previous is None else previous + PACE_ALPHA * (sample - previous)


class GrowthWatch:
    """How fast one conversation's view grows, learned from the turns that ended."""

    def __init__(self) -> None:
        self.last: Growth | None = None

    def observe(self, ctx: ConversationContext) -> None:
        """Learn the view's growth from a turn that ended (per second and per turn,
        within one fold version: a fold shrinks the view, the pace stays)."""
        now = time.monotonic()
        version = ctx.state.version if ctx.state else 0
        last = self.last
        growth = Growth(now, ctx.tokens, version)
        if last is not None:
            growth.per_second, growth.per_turn = last.per_second, last.per_turn
            added = ctx.tokens - last.tokens
            if last.version == version and added > 0:
                seconds = max(now - last.at, 0.001)
                growth.per_second = average(last.per_second, added / seconds)
                growth.per_turn = average(last.per_turn, added)
        self.last = growth

    def pace(
        self, summary_seconds: float | None, slot: tuple[float, float] | None = None
    ) -> Pace | None:
        """The observed pace, with summaries taking `summary_seconds` (None: not timed
        yet, a guess) and, on a server that runs one request at a time, `slot`: how long
        a background request holds it and how long it is free between turns; None until
        two turns were seen."""
        growth = self.last
        if growth is None or growth.per_second is None or growth.per_turn is None:
            return None
        seconds = SUMMARY_SECONDS_GUESS if summary_seconds is None else summary_seconds
        held, free = (None, None) if slot is None else slot
        return Pace(growth.per_second, growth.per_turn, seconds, held, free)


def fingerprint(ctx: ConversationContext, end: int) -> str:
    """What a prepared summary stands for: the ids and contents of the messages from the
    view's start to `end`, pruning marks left out (a prune changes no content the
    summary read). An edit, a branch switch or a shorter history changes it."""
    digest = hashlib.sha256()
    for record in ctx.records[: max(end - ctx.start_index, 0)]:
        dumped = record.message.model_dump(mode="json")
        for part in dumped["parts"]:
            part.pop("compacted_at", None)
        digest.update(record.id.encode())
        digest.update(json.dumps(dumped, sort_keys=True).encode())
    return digest.hexdigest()


def tokens_after(ctx: ConversationContext, prepared: CompactionState) -> int:
    """What the view of `ctx` would count with `prepared` committed (with the tools a
    folded conversation is offered, where they take room in the prompt)."""
    after_view = build_api_messages(ctx.window, prepared, ctx.pins)
    return ctx.counter.count_request(ctx.system, after_view, ctx.counted_tools_after_fold)


def why_invalid(
    entry: PreparedFold,
    ctx: ConversationContext,
    summarizer_model: str,
    prepared: CompactionState | None,
) -> str | None:
    """Why `entry` (whose summary is `prepared`, None while it is being written) can no
    longer be used for `ctx`; None when it can, or still may."""
    version = ctx.state.version if ctx.state else 0
    if version != entry.base_version:
        return "the fold version changed (a fold or an undo)"
    if entry.settings_key != settings_key(ctx, summarizer_model):
        return "the settings, model or system prompt changed"
    if prepared is not None and entry.kind == "fold":
        # Checked against the view the summary was written from (the task may be done
        # before its completion callback has run: nothing is cached from it).
        end = prepared.api_start_index
        if ctx.history_length < end:
            return "the history is shorter than what it folds"
        if fingerprint(ctx, end) != fingerprint(entry.source, end):
            return "a folded message changed"
    return None


def settings_key(ctx: ConversationContext, summarizer_model: str) -> str:
    """What a prepared summary was written with: settings, model, summarizer, system."""
    return json.dumps(
        [ctx.settings.model_dump(mode="json"), ctx.model.model, summarizer_model, ctx.system],
        sort_keys=True,
    )


@dataclass
class PreparedFold:
    """One conversation's background summary: being written, or ready to commit."""

    kind: PreparedKind
    base_version: int
    """The fold version the summary was prepared on; any other current version (a fold,
    an undo) makes it invalid."""
    settings_key: str
    turn: int
    usage: SummaryUsage
    source: ConversationContext
    """The view the summary was written from."""
    maker: FoldMaker
    """The fold maker of the turn that started it (its summarizer, its store)."""
    task: asyncio.Task[None] = field(init=False)
    """Writes the summary, then hands it to the gate (see `ConversationFolds`)."""
    summary: CompactionState | None = None
    """The summary once written (None while it is, or when it failed)."""
    dropped: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def ready(self) -> bool:
        return self.summary is not None

    def status(self) -> Literal["preparing", "ready"]:
        return "ready" if self.ready else "preparing"

    def view_tokens_after(self, ctx: ConversationContext) -> int:
        """A fresh count of the view of `ctx` with the summary committed."""
        assert self.summary is not None
        return tokens_after(ctx, self.summary)


async def worth_preparing(maker: FoldMaker, ctx: ConversationContext) -> bool:
    """On a one-request server a summary is started turns ahead of the threshold: only
    once the fold it plans frees `MIN_FREED_SHARE` of the view (counted off the loop).
    Started sooner, it folds next to nothing and is dropped when it is due."""
    inputs = maker.fold_inputs(ctx)
    frees = await asyncio.to_thread(planned_fold_frees, inputs)
    return frees >= MIN_FREED_SHARE * ctx.tokens
