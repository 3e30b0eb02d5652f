"""Folds nobody waits for: summaries written in the background, committed at a gate.

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
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from foldline.api.events import CompactionCompleted, CompactionFailed, CompactionStarted
from foldline.api.schemas_context import BackgroundFoldOut
from foldline.chat.context import ConversationContext
from foldline.chat.events import ChatEvent
from foldline.chat.folding import (
    Gate,
    ResummaryBackoff,
    compaction_completed,
    on_meter,
)
from foldline.chat.usage import SummaryUsage
from foldline.core.policy import (
    Pace,
    at_hard_threshold,
    fold_on_cold_cache,
    next_turn_reaches_hard,
    record_fold,
    should_prepare_fold,
    would_overflow,
)
from foldline.core.reasoning import Effort
from foldline.core.state import CompactionState
from foldline.core.view import build_api_messages
from foldline.store import ConcurrentFold, Store

log = logging.getLogger(__name__)

PreparedKind = Literal["fold", "resummary"]

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


def _average(previous: float | None, sample: float) -> float:
    return sample if previous is None else previous + PACE_ALPHA * (sample - previous)


def _fingerprint(ctx: ConversationContext, end: int) -> str:
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


def _tokens_after(ctx: ConversationContext, prepared: CompactionState) -> int:
    """What the view of `ctx` would count with `prepared` committed."""
    after_view = build_api_messages(ctx.window, prepared, ctx.pins)
    return ctx.counter.count_request(ctx.system, after_view, ctx.tools)


def _why_invalid(
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
    if entry.settings_key != _settings_key(ctx, summarizer_model):
        return "the settings, model or system prompt changed"
    if prepared is not None and entry.kind == "fold":
        # Checked against the view the summary was written from (the task may be done
        # before its completion callback has run: nothing is cached from it).
        end = prepared.api_start_index
        if ctx.history_length < end:
            return "the history is shorter than what it folds"
        if _fingerprint(ctx, end) != _fingerprint(entry.source, end):
            return "a folded message changed"
    return None


def _settings_key(ctx: ConversationContext, summarizer_model: str) -> str:
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
    task: asyncio.Task[CompactionState | None]
    source: ConversationContext
    """The view the summary was written from."""
    gate: Gate
    """The gate of the turn that started it (its summarizer, its store)."""
    dropped: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def ready(self) -> bool:
        return self.task.done() and not self.task.cancelled() and self.result is not None

    @property
    def result(self) -> CompactionState | None:
        if not self.task.done() or self.task.cancelled() or self.task.exception() is not None:
            return None
        return self.task.result()

    def status(self) -> Literal["preparing", "ready"]:
        return "ready" if self.ready else "preparing"


@dataclass
class BackgroundFolds:
    """The background summaries of every conversation of one chat service."""

    store: Store
    is_running: Callable[[str], bool]
    """Whether a turn or fold is running in a conversation (then commits wait for it)."""
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    backoff: ResummaryBackoff = field(default_factory=ResummaryBackoff)
    """Failed preparations wait 1, 2, 4 ... turns before the next attempt."""
    prepared: dict[str, PreparedFold] = field(default_factory=dict)
    growth: dict[str, Growth] = field(default_factory=dict)
    """Each conversation's observed growth (for `pace`)."""
    summary_seconds: float | None = None
    """How long the background summaries took, a moving average (None: none timed yet)."""
    on_idle_commit: Callable[[str], None] = lambda _conversation_id: None
    """Called (on the event loop) when a fold was committed outside any turn, so the
    pages showing the conversation hear of it."""

    # --- the pace -------------------------------------------------------------------

    def _observe(self, ctx: ConversationContext) -> None:
        """Learn the view's growth from a turn that ended (per second and per turn,
        within one fold version: a fold shrinks the view, the pace stays)."""
        now = time.monotonic()
        version = ctx.state.version if ctx.state else 0
        last = self.growth.get(ctx.conversation.id)
        growth = Growth(now, ctx.tokens, version)
        if last is not None:
            growth.per_second, growth.per_turn = last.per_second, last.per_turn
            added = ctx.tokens - last.tokens
            if last.version == version and added > 0:
                seconds = max(now - last.at, 0.001)
                growth.per_second = _average(last.per_second, added / seconds)
                growth.per_turn = _average(last.per_turn, added)
        self.growth[ctx.conversation.id] = growth

    def pace(self, conversation_id: str) -> Pace | None:
        """The conversation's observed pace (None until two turns were seen)."""
        growth = self.growth.get(conversation_id)
        if growth is None or growth.per_second is None or growth.per_turn is None:
            return None
        seconds = SUMMARY_SECONDS_GUESS if self.summary_seconds is None else self.summary_seconds
        return Pace(growth.per_second, growth.per_turn, seconds)

    efforts: dict[str, Effort] = field(default_factory=dict)
    """The reasoning effort of each conversation's last chat call: a different one for
    the next call breaks the prompt cache, which makes it a good moment to fold."""
    tool_prints: dict[str, str] = field(default_factory=dict)
    """Each conversation's tools at its last gate: a change breaks the prompt cache."""

    # --- what the UI sees -----------------------------------------------------------

    def status(self, conversation_id: str) -> BackgroundFoldOut | None:
        """A summary being prepared or ready for the conversation, or None."""
        entry = self.prepared.get(conversation_id)
        if entry is None or (entry.task.done() and not entry.ready):
            return None
        return BackgroundFoldOut(status=entry.status(), kind=entry.kind)

    # --- lifecycle ------------------------------------------------------------------

    def cancel(self, conversation_id: str) -> None:
        """Stop and forget a conversation's background work (delete, close)."""
        entry = self.prepared.pop(conversation_id, None)
        if entry is not None and not entry.task.done():
            entry.task.cancel()

    async def wait(self, conversation_id: str) -> None:
        """Until the conversation's background work (if any) has finished and been
        handled (committed when idle, or left ready for the next gate)."""
        entry = self.prepared.get(conversation_id)
        if entry is not None:
            await asyncio.wait({entry.task})
        await asyncio.sleep(0)

    async def shutdown(self) -> None:
        tasks = [entry.task for entry in self.prepared.values()]
        for conversation_id in list(self.prepared):
            self.cancel(conversation_id)
        await asyncio.gather(*tasks, return_exceptions=True)

    def _drop(self, conversation_id: str, entry: PreparedFold, why: str) -> None:
        """Forget a summary that will not be used; what it cost stays on the bill."""
        if entry.dropped:
            return
        entry.dropped = True
        log.info("dropping the prepared %s of %s: %s", entry.kind, conversation_id, why)
        if self.prepared.get(conversation_id) is entry:
            del self.prepared[conversation_id]
        if not entry.task.done():
            entry.task.cancel()
        self.store.record_calls(conversation_id, entry.usage.calls(entry.turn, None))

    # --- after a turn ---------------------------------------------------------------

    async def after_turn(self, gate: Gate, ctx: ConversationContext, turn: int) -> None:
        """Start the background work a turn that ended well calls for, if any."""
        conversation_id = ctx.conversation.id
        self._observe(ctx)
        entry = self.prepared.get(conversation_id)
        if entry is not None:
            if await self._valid(entry, ctx, gate) is None:
                return  # still useful: keep it
            self._drop(conversation_id, entry, "the conversation changed under it")
        if ctx.state is not None and ctx.state.degraded and not gate.breaker.tripped:
            if self.backoff.should_try(conversation_id):
                self._start_resummary(gate, ctx, turn)
            return
        if (
            should_prepare_fold(ctx.tokens, ctx.budget, ctx.settings, self.pace(conversation_id))
            and not gate.breaker.tripped
            and self.backoff.should_try(conversation_id)
        ):
            self._start_fold(gate, ctx, turn)

    def _start_fold(self, gate: Gate, ctx: ConversationContext, turn: int) -> None:
        usage = gate.summary_usage()
        # The fold lands when the view reaches the threshold, after the tail has grown by
        # about the distance to it; planning for a target that much lower makes the
        # committed fold end near the target, as a fold made in line would.
        growth = max(ctx.settings.threshold - ctx.budget.fraction(ctx.tokens), 0.0)
        target = max(ctx.settings.target - growth, ctx.settings.target / 2)
        planned = replace(ctx, settings=ctx.settings.model_copy(update={"target": target}))

        async def prepare() -> CompactionState | None:
            state = await gate.compute(planned, "auto", "", False, None, usage)
            # A digest is no better for waiting: the gate makes one itself when it must.
            return None if state is None or state.degraded else state

        self._start(gate, ctx, turn, "fold", usage, prepare())

    def _start_resummary(self, gate: Gate, ctx: ConversationContext, turn: int) -> None:
        usage = gate.summary_usage()
        self._start(gate, ctx, turn, "resummary", usage, gate.compute_resummary(ctx, usage))

    def _start(
        self,
        gate: Gate,
        ctx: ConversationContext,
        turn: int,
        kind: PreparedKind,
        usage: SummaryUsage,
        work: Any,
    ) -> None:
        conversation_id = ctx.conversation.id
        task = asyncio.get_running_loop().create_task(work)
        entry = PreparedFold(
            kind=kind,
            base_version=ctx.state.version if ctx.state else 0,
            settings_key=_settings_key(ctx, gate.summarizer_model),
            turn=turn,
            usage=usage,
            task=task,
            source=ctx,
            gate=gate,
        )
        self.prepared[conversation_id] = entry
        task.add_done_callback(lambda _task: self._finished(conversation_id, entry))

    def idle(self, conversation_id: str) -> None:
        """A turn ended: a re-summary that became ready meanwhile is committed now."""
        entry = self.prepared.get(conversation_id)
        if entry is not None and entry.kind == "resummary" and entry.ready:
            self._commit_idle_resummary(conversation_id, entry)

    def _commit_idle_resummary(self, conversation_id: str, entry: PreparedFold) -> None:
        state = entry.result
        assert state is not None
        try:
            entry.gate.commit_resummary(conversation_id, state, entry.base_version, entry.turn)
        except ConcurrentFold:
            self._drop(conversation_id, entry, "another fold came first")
            return
        del self.prepared[conversation_id]
        entry.gate.record_summary_calls(conversation_id, entry.usage, entry.turn, state.version)
        self.on_idle_commit(conversation_id)

    def _finished(self, conversation_id: str, entry: PreparedFold) -> None:
        if self.prepared.get(conversation_id) is not entry or entry.task.cancelled():
            return
        state = entry.result
        if state is None:
            error = entry.task.exception()
            if error is not None:
                log.error("background %s failed", entry.kind, exc_info=error)
            self.backoff.failed(conversation_id)
            self._drop(conversation_id, entry, "the summarizer gave no usable summary")
            return
        self.backoff.succeeded(conversation_id)
        if entry.kind == "fold":
            self.summary_seconds = _average(self.summary_seconds, time.monotonic() - entry.started)
        if entry.kind == "resummary" and not self.is_running(conversation_id):
            # A re-summary keeps the fold's boundary, so nothing waits for a gate.
            self._commit_idle_resummary(conversation_id, entry)

    # --- at a gate ------------------------------------------------------------------

    async def _valid(self, entry: PreparedFold, ctx: ConversationContext, gate: Gate) -> str | None:
        """Why `entry` can no longer be used for `ctx` (None: it can, or still may). In a
        worker thread: hashing the folded messages of a long view takes ~10 ms per
        megabyte, twice, at every gate (the task's result is read here, on the loop that
        owns the task)."""
        return await asyncio.to_thread(
            _why_invalid, entry, ctx, gate.summarizer_model, entry.result
        )

    async def gate(
        self, gate: Gate, ctx: ConversationContext, *, turn: int, **kwargs: Any
    ) -> AsyncIterator[ChatEvent]:
        """The gate, with prepared summaries: commit, wait, start or fold in line."""
        conversation_id = ctx.conversation.id
        entry = self.prepared.get(conversation_id)
        if entry is not None:
            why = await self._valid(entry, ctx, gate)
            if why is not None:
                self._drop(conversation_id, entry, why)
                entry = None
        if entry is not None and entry.kind == "resummary" and entry.ready:
            async for event in self._commit_resummary(gate, ctx, entry, turn):
                yield event
            ctx = await gate.reload_async()
            entry = None
        tools_changed = self._tools_changed(ctx)
        asked = {key: value for key, value in kwargs.items() if key != "instructions"}
        decision, _ = await asyncio.to_thread(gate.decide, ctx, **asked)
        automatic = decision.action == "fold" and decision.trigger == "auto"
        if not automatic:
            early = (
                entry is not None
                and entry.ready
                and entry.kind == "fold"
                and decision.action == "none"
                and not kwargs.get("mid_tool_loop")
            )
            pace = self.pace(conversation_id)
            effort_changed = self._effort_changed(ctx)
            # Either change rebuilds the cached prefix, so the fold's own break is free.
            prefix_changed = effort_changed or tools_changed
            cold = early and fold_on_cold_cache(
                ctx.tokens,
                ctx.budget,
                ctx.settings,
                self._idle(ctx),
                pace,
                cache_broken=prefix_changed,
            )
            urgent = early and next_turn_reaches_hard(ctx.tokens, ctx.budget, ctx.settings, pace)
            if entry is not None and (cold or urgent):
                if not cold:
                    reason = (
                        "At this pace the next turn would reach the hard threshold: "
                        "committing the summary prepared in the background now."
                    )
                elif prefix_changed:
                    what = "reasoning effort" if effort_changed else "tools offered"
                    reason = (
                        f"The {what} changed, so the prompt cache is read afresh "
                        "anyway: committing the summary prepared in the background."
                    )
                else:
                    reason = (
                        "The prompt cache expired during the pause, so folding now breaks no "
                        "cache: committing the summary prepared in the background."
                    )
                async for event in self._commit_fold(gate, ctx, entry, turn, reason):
                    yield event
                return
            async for event in gate.run(ctx, turn=turn, decision=decision, **kwargs):
                yield event
            return
        hard = at_hard_threshold(ctx.tokens, ctx.budget, ctx.settings)
        if entry is None or entry.kind != "fold":
            if not hard and not gate.breaker.tripped:
                if entry is None and self.backoff.should_try(conversation_id):
                    self._start_fold(gate, ctx, turn)
                return  # under the hard threshold the turn goes ahead unfolded
            async for event in gate.run(ctx, turn=turn, decision=decision, **kwargs):
                yield event
            return
        waited = False
        if not entry.ready:
            if not hard or not would_overflow(ctx.tokens, ctx.budget):
                return
            waited = True
            yield ChatEvent(
                "compaction.started",
                CompactionStarted(
                    trigger="auto",
                    reason=f"{decision.reason} Waiting for the summary being written "
                    "in the background.",
                    waiting=True,
                ),
            )
            await asyncio.wait({entry.task})
            ctx = await gate.reload_async()
            if not entry.ready or await self._valid(entry, ctx, gate) is not None:
                self._drop(conversation_id, entry, "it could not be used at the hard threshold")
                async for event in gate.run(ctx, turn=turn, **kwargs):
                    yield event
                return
        async for event in self._commit_fold(
            gate, ctx, entry, turn, decision.reason, announced=waited
        ):
            yield event

    def _effort_changed(self, ctx: ConversationContext) -> bool:
        last = self.efforts.get(ctx.conversation.id)
        return last is not None and last != ctx.reasoning_effort

    def _tools_changed(self, ctx: ConversationContext) -> bool:
        """Whether the tools offered differ from this conversation's last gate (an MCP
        server's list changed, a server came or went): the cached prefix is rebuilt."""
        current = json.dumps(
            [[t.name, t.description, t.input_schema] for t in ctx.tools], sort_keys=True
        )
        previous = self.tool_prints.get(ctx.conversation.id)
        self.tool_prints[ctx.conversation.id] = current
        return previous is not None and previous != current

    def _idle(self, ctx: ConversationContext) -> float | None:
        last = self.store.last_chat_call_at(ctx.conversation.id)
        return None if last is None else (self.clock() - last).total_seconds()

    async def _commit_fold(
        self,
        gate: Gate,
        ctx: ConversationContext,
        entry: PreparedFold,
        turn: int,
        reason: str,
        *,
        announced: bool = False,
    ) -> AsyncIterator[ChatEvent]:
        conversation_id = ctx.conversation.id
        prepared = entry.result
        assert prepared is not None
        # The tail grew since the summary was written: count the view as it is now (in a
        # worker thread: the whole view is counted, and the loop serves every stream).
        # On the meter's scale, like the threshold the policy judged the view by.
        state = on_meter(ctx, prepared, await asyncio.to_thread(_tokens_after, ctx, prepared))
        if state.tokens_after >= ctx.settings.threshold * (ctx.budget.input_budget or 0):
            self._drop(conversation_id, entry, "the view after it would still be over threshold")
            async for event in gate.run(ctx, turn=turn, mid_tool_loop=False):
                yield event
            return
        if not announced:
            yield ChatEvent(
                "compaction.started",
                CompactionStarted(trigger="auto", reason=reason, prepared=True),
            )
        try:
            state = await gate.writes.run(
                self.store.commit_fold, conversation_id, state, expected_version=entry.base_version
            )
        except ConcurrentFold:
            self._drop(conversation_id, entry, "another fold came first")
            yield ChatEvent(
                "compaction.failed",
                CompactionFailed(trigger="auto", reason="Another fold came first."),
            )
            return
        del self.prepared[conversation_id]
        await gate.writes.run(
            gate.record_summary_calls, conversation_id, entry.usage, entry.turn, state.version
        )
        gate.breaker = record_fold(gate.breaker, state.tokens_before, state.tokens_after)
        yield compaction_completed(state, turn, prepared=True)

    async def _commit_resummary(
        self, gate: Gate, ctx: ConversationContext, entry: PreparedFold, turn: int
    ) -> AsyncIterator[ChatEvent]:
        conversation_id = ctx.conversation.id
        state = entry.result
        assert state is not None
        try:
            events = gate.commit_resummary(conversation_id, state, entry.base_version, turn)
        except ConcurrentFold:
            self._drop(conversation_id, entry, "another fold came first")
            return
        del self.prepared[conversation_id]
        completed = events[1].body
        assert isinstance(completed, CompactionCompleted)
        gate.record_summary_calls(conversation_id, entry.usage, entry.turn, completed.version)
        for event in events:
            yield event
