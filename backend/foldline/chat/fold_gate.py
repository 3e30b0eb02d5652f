"""The fold gate: one object per conversation that carries out `core.gate.decide_gate`.

Before every model call (and after every tool batch) a turn asks its conversation's
`ConversationFolds` to pass the gate. It gathers the facts (the view's count, what a
prune would reclaim, the prepared summary and whether it is still valid, the pace, the
time since the last call, whether the cached prefix changed; counting, hashing and the
store's reads in a worker thread), asks the pure decision for one action, and does it:
nothing, a prune, a prepared fold committed, waited for, or started, a fold written in
line, an emergency digest, or a refused request. A step that teaches it something (a
re-summary committed, the view after a prepared fold counted, a summary waited for) is
followed by another question with the new facts, never by a decision of its own.

It owns everything about folds that outlives a turn: the circuit breaker, the back-off
after failed preparations, the pace the view grows at, and the summary being prepared
in the background. Every store call it makes runs in the chat service's `StoreWriter`
(writes, in order) or a worker thread (reads), never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol, assert_never

from foldline.api.events import CompactionFailed, CompactionStarted
from foldline.api.schemas_context import BackgroundFoldOut
from foldline.chat import events as ev
from foldline.chat.background import (
    GrowthWatch,
    PreparedFold,
    settings_key,
    why_invalid,
    worth_preparing,
)
from foldline.chat.context import ConversationContext
from foldline.chat.events import ChatEvent
from foldline.chat.folding import (
    FoldMaker,
    PreparationBackoff,
    compaction_completed,
    on_meter,
)
from foldline.chat.prefix_watch import PrefixChange, PrefixWatch
from foldline.chat.store_writer import StoreWriter
from foldline.chat.usage import SummaryUsage
from foldline.core.gate import (
    GateDecision,
    GateFacts,
    PreparedKind,
    RequestKind,
    decide_gate,
    next_preparation,
)
from foldline.core.policy import BreakerState, Pace, record_fold
from foldline.core.pruning import plan_prune
from foldline.core.state import CompactionState, Trigger
from foldline.store import ConcurrentFold, Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Asked:
    """What the turn says when it asks the gate (the rest of the facts are gathered)."""

    mid_tool_loop: bool = False
    request: RequestKind = "turn"
    prefix: PrefixChange | None = None


GATE_STEPS = 6
"""Questions one gate asks at most: a re-summary committed, a summary waited for and the
view after a prepared fold counted (twice) each lead to one more."""


class SharedFolds(Protocol):
    """What every conversation's gate shares (`chat.fold_gates.FoldGates`): the store and
    its writer, the clock, the running check, the summaries' timing and the slot's."""

    store: Store
    writes: StoreWriter
    summary_seconds: float | None

    def clock(self) -> datetime: ...
    def is_running(self, conversation_id: str, /) -> bool: ...
    def on_idle_commit(self, conversation_id: str, /) -> None: ...
    def on_prepared(self, conversation_id: str, /) -> None: ...
    def slot_of(self, conversation_id: str, /) -> tuple[float, float] | None: ...
    def one_request_at_a_time(self, conversation_id: str, /) -> bool: ...
    def timed(self, seconds: float, /) -> None: ...


class ConversationFolds:
    """One conversation's fold gate: decides with `decide_gate`, carries the action out,
    and owns the breaker, the back-off, the pace and the summary being prepared."""

    def __init__(self, conversation_id: str, shared: SharedFolds) -> None:
        self.conversation_id = conversation_id
        self.shared = shared
        self.breaker = BreakerState()
        """Folds in a row that freed too little; the one copy of it."""
        self.backoff = PreparationBackoff()
        self.growth = GrowthWatch()
        """The view's observed growth (for `pace`)."""
        self.prepared: PreparedFold | None = None
        self.committing: asyncio.Task[None] | None = None
        """A re-summary, or a fold in the person's pause, being committed while no turn runs."""
        self.warming: asyncio.Task[None] | None = None
        """The server evaluating the view a fold left in the pause (`_land_in_pause`)."""
        self.prefix = PrefixWatch()
        """What the last gate's cached prefix held (the reasoning effort, the tools)."""

    # --- what the UI sees, lifecycle ------------------------------------------------

    def status(self, version: int | None = None) -> BackgroundFoldOut | None:
        entry = self.prepared
        if entry is None or (entry.task.done() and not entry.ready):
            return None
        if version is not None and entry.base_version != version:
            return None
        return BackgroundFoldOut(status=entry.status(), kind=entry.kind)

    def tasks(self) -> list[asyncio.Task[None]]:
        tasks = [] if self.prepared is None else [self.prepared.task]
        return [*tasks, *(t for t in (self.committing, self.warming) if t is not None)]

    def cancel(self) -> None:
        entry, self.prepared = self.prepared, None
        if entry is not None and not entry.task.done():
            entry.task.cancel()
        if self.warming is not None:
            self.warming.cancel()

    async def settled(self) -> bool:
        """Wait for a fold landing in the pause (or an idle re-summary) to finish; True
        when one was still being written, so the caller reads the view again."""
        landing = self.committing
        if landing is None or landing.done():
            return False
        await asyncio.wait({landing})
        return True

    async def wait(self) -> None:
        entry = self.prepared
        if entry is not None:
            await asyncio.wait({entry.task})
        for task in (self.committing, self.warming):
            if task is not None:
                await asyncio.wait({task})

    def pace(self) -> Pace | None:
        """The conversation's observed pace (None until two turns were seen)."""
        slot = self.shared.slot_of(self.conversation_id)
        return self.growth.pace(self.shared.summary_seconds, slot)

    # --- the gate -------------------------------------------------------------------

    async def gate(
        self,
        maker: FoldMaker,
        ctx: ConversationContext,
        *,
        turn: int,
        mid_tool_loop: bool,
        request: RequestKind = "turn",
        instructions: str | None = None,
    ) -> AsyncIterator[ChatEvent]:
        """Decide and act before a model call; the caller reloads after any event."""
        # In a pause nothing is sent: what the cached prefix holds is left for the
        # next turn's gate to compare.
        prefix = None if request == "pause" else self.prefix.changed(ctx)
        announced = False
        counted: CompactionState | None = None
        """The ready prepared fold with the view after it counted, for this `ctx`."""
        for _step in range(GATE_STEPS):
            entry = self.prepared
            facts = await asyncio.to_thread(
                self._facts,
                maker,
                ctx,
                entry,
                entry.summary if entry else None,
                counted,
                Asked(mid_tool_loop, request, prefix),
            )
            decision = decide_gate(facts)
            if decision.drop is not None and entry is not None:
                self._drop(entry, decision.drop)
                entry = None
            action = decision.action
            if action == "commit_prepared":
                assert entry is not None and entry.summary is not None
                if entry.kind == "resummary":
                    async for event in self._commit_resummary(maker, entry, turn):
                        yield event
                    ctx, counted = await maker.reload_async(), None
                    continue
                if counted is None:
                    # The tail grew since the summary was written: count the view as it
                    # is now, on the meter's scale like the threshold it is judged by.
                    fresh = await asyncio.to_thread(entry.view_tokens_after, ctx)
                    counted = on_meter(ctx, entry.summary, fresh)
                    continue
                async for event in self._commit_fold(
                    maker, entry, counted, turn, decision.reason, announced=announced
                ):
                    yield event
                return
            if action == "wait_then_commit":
                assert entry is not None
                announced = True
                yield ev.CompactionStarted(
                    CompactionStarted(trigger="auto", reason=decision.reason, waiting=True),
                )
                await asyncio.wait({entry.task})
                ctx, counted = await maker.reload_async(), None
                continue
            async for event in self._act(maker, ctx, decision, turn, instructions):
                yield event
            return
        log.error("the fold gate of %s asked %d times", self.conversation_id, GATE_STEPS)

    async def _act(
        self,
        maker: FoldMaker,
        ctx: ConversationContext,
        decision: GateDecision,
        turn: int,
        instructions: str | None,
    ) -> AsyncIterator[ChatEvent]:
        """The actions that end a gate without asking again."""
        action = decision.action
        if action == "none":
            if decision.backoff_held:
                self.backoff.should_try()  # a turn of the wait has passed
        elif action == "refuse":
            log.info("%s: %s", self.conversation_id, decision.reason)
        elif action == "start_preparing":
            if self.backoff.should_try():
                self._start_fold(maker, ctx, turn)
        elif action == "prune":
            event = await maker.prune(ctx)
            if event is not None:
                yield event
        elif action in ("fold_inline", "emergency_fold"):
            async for event in self.fold_inline(
                maker,
                ctx,
                trigger=decision.trigger or "auto",
                reason=decision.reason,
                emergency=action == "emergency_fold",
                instructions=instructions,
                turn=turn,
            ):
                yield event
        elif action in ("commit_prepared", "wait_then_commit"):
            raise AssertionError(f"{action} is carried out by the gate's loop")
        else:
            assert_never(action)

    def _facts(
        self,
        maker: FoldMaker,
        ctx: ConversationContext,
        entry: PreparedFold | None,
        summary: CompactionState | None,
        counted: CompactionState | None,
        asked: Asked,
    ) -> GateFacts:
        """The facts of the gate that take counting, hashing or the store (in a worker
        thread: hashing the folded messages of a long view takes ~10 ms per megabyte,
        twice; the summary is read on the loop that owns its task)."""
        settings = ctx.settings
        reclaimable = 0
        if settings.prune:
            plan = plan_prune(
                ctx.window, ctx.state, ctx.counter.count_text, settings, ctx.budget.input_budget
            )
            reclaimable = plan.reclaimable_tokens
        invalid = None
        idle = None
        if entry is not None:
            invalid = why_invalid(entry, ctx, maker.summarizer_model, summary)
            if summary is not None and entry.kind == "fold":
                idle = self._idle_seconds()
        return GateFacts(
            tokens=ctx.tokens,
            budget=ctx.budget,
            settings=settings,
            mid_tool_loop=asked.mid_tool_loop,
            reclaimable_prune_tokens=reclaimable,
            breaker=self.breaker,
            request=asked.request,
            prepared="none" if entry is None else entry.status(),
            prepared_kind="fold" if entry is None else entry.kind,
            prepared_invalid=invalid,
            prepared_tokens_after=None if counted is None else counted.tokens_after,
            pace=self.pace(),
            idle_seconds=idle,
            prefix_changed=asked.prefix,
            may_prepare=self.backoff.allows,
            one_request_at_a_time=self.shared.one_request_at_a_time(self.conversation_id),
        )

    def _idle_seconds(self) -> float | None:
        """Seconds since the conversation's last model call (a store read: off the loop)."""
        last = self.shared.store.last_chat_call_at(self.conversation_id)
        return None if last is None else (self.shared.clock() - last).total_seconds()

    # --- carrying it out ------------------------------------------------------------

    async def fold_inline(
        self,
        maker: FoldMaker,
        ctx: ConversationContext,
        *,
        trigger: Trigger,
        reason: str,
        emergency: bool,
        instructions: str | None,
        turn: int,
    ) -> AsyncIterator[ChatEvent]:
        """A fold written now (the person's Compact comes here directly)."""
        async for event in maker.fold(
            ctx,
            trigger=trigger,
            reason=reason,
            emergency=emergency,
            instructions=instructions,
            turn=turn,
            on_committed=self._record_fold,
        ):
            yield event

    def _record_fold(self, state: CompactionState) -> None:
        self.breaker = record_fold(self.breaker, state.tokens_before, state.tokens_after)

    async def _commit_fold(
        self,
        maker: FoldMaker,
        entry: PreparedFold,
        state: CompactionState,
        turn: int,
        reason: str,
        *,
        announced: bool,
    ) -> AsyncIterator[ChatEvent]:
        if not announced:
            yield ev.CompactionStarted(
                CompactionStarted(trigger="auto", reason=reason, prepared=True),
            )
        try:
            state = await maker.writes.run(
                maker.store.commit_fold,
                self.conversation_id,
                state,
                expected_version=entry.base_version,
            )
        except ConcurrentFold:
            self._drop(entry, "another fold came first")
            yield ev.CompactionFailed(
                CompactionFailed(trigger="auto", reason="Another fold came first."),
            )
            return
        self.prepared = None
        await maker.writes.run(
            maker.record_summary_calls, self.conversation_id, entry.usage, entry.turn, state.version
        )
        self._record_fold(state)
        yield compaction_completed(state, turn, prepared=True)

    async def _commit_resummary(
        self, maker: FoldMaker, entry: PreparedFold, turn: int
    ) -> AsyncIterator[ChatEvent]:
        state = entry.summary
        assert state is not None
        self.prepared = None  # taken: an idle commit cannot take it too
        try:
            events = await maker.commit_resummary(
                self.conversation_id, state, entry.base_version, turn
            )
        except ConcurrentFold:
            self._drop(entry, "another fold came first")
            return
        await self._record_resummary_calls(maker, entry, events)
        for event in events:
            yield event

    async def _record_resummary_calls(
        self, maker: FoldMaker, entry: PreparedFold, events: list[ChatEvent]
    ) -> None:
        """Bill a committed re-summary's calls to the version it became."""
        completed = events[1]
        assert isinstance(completed, ev.CompactionCompleted)
        await maker.writes.run(
            maker.record_summary_calls,
            self.conversation_id,
            entry.usage,
            entry.turn,
            completed.body.version,
        )

    def _drop(self, entry: PreparedFold, why: str) -> None:
        """Forget a summary that will not be used; what it cost stays on the bill (the
        calls are stored in the writer, after every write asked for before)."""
        if entry.dropped:
            return
        entry.dropped = True
        log.info("dropping the prepared %s of %s: %s", entry.kind, self.conversation_id, why)
        if self.prepared is entry:
            self.prepared = None
        if not entry.task.done() and asyncio.current_task() is not entry.task:
            entry.task.cancel()
        calls = entry.usage.calls(entry.turn, None)
        if calls:
            stored = self.shared.writes.submit(
                self.shared.store.record_calls, self.conversation_id, calls
            )
            stored.add_done_callback(_log_failure)

    # --- in the background ----------------------------------------------------------

    async def after_turn(self, maker: FoldMaker, ctx: ConversationContext, turn: int) -> None:
        """Start the background work a turn that ended well calls for, if any."""
        self.growth.observe(ctx)
        entry = self.prepared
        if entry is not None:
            why = await asyncio.to_thread(
                why_invalid, entry, ctx, maker.summarizer_model, entry.summary
            )
            if why is None:
                return  # still useful: keep it
            self._drop(entry, "the conversation changed under it")
        # On a one-request local server a digest is not re-summarized on its own (that
        # request would evaluate the whole folded text in the person's pauses, and a
        # turn that cuts it waits for that evaluation): the next fold's summary, asked
        # after the view that opens with the digest, merges it instead.
        kind = next_preparation(
            degraded=ctx.state is not None and ctx.state.degraded and not maker.asks_once,
            tokens=ctx.tokens,
            budget=ctx.budget,
            settings=ctx.settings,
            breaker=self.breaker,
            pace=self.pace(),
        )
        if kind is None or not self.backoff.should_try():
            return
        if kind == "fold" and maker.asks_once and not await worth_preparing(maker, ctx):
            return
        if kind == "resummary":
            usage = maker.summary_usage()
            self._start(maker, ctx, turn, "resummary", usage, maker.compute_resummary(ctx, usage))
        else:
            self._start_fold(maker, ctx, turn)

    def _start_fold(self, maker: FoldMaker, ctx: ConversationContext, turn: int) -> None:
        usage = maker.summary_usage()
        # The fold lands when the view reaches the threshold, after the tail has grown by
        # about the distance to it; planning for a target that much lower makes the
        # committed fold end near the target, as a fold made in line would.
        growth = max(ctx.settings.threshold - ctx.budget.fraction(ctx.tokens), 0.0)
        target = max(ctx.settings.target - growth, ctx.settings.target / 2)
        planned = replace(ctx, settings=ctx.settings.model_copy(update={"target": target}))

        async def prepare() -> CompactionState | None:
            state = await maker.compute(planned, "auto", "", False, None, usage)
            # A digest is no better for waiting: the gate makes one itself when it must.
            # Except where the summary is asked once (a one-request local server): there
            # the gate would first ask again in line, and the person would wait for it.
            if state is None or (state.degraded and not maker.asks_once):
                return None
            return state

        self._start(maker, ctx, turn, "fold", usage, prepare())

    def _start(
        self,
        maker: FoldMaker,
        ctx: ConversationContext,
        turn: int,
        kind: PreparedKind,
        usage: SummaryUsage,
        work: Coroutine[Any, Any, CompactionState | None],
    ) -> None:
        entry = PreparedFold(
            kind=kind,
            base_version=ctx.state.version if ctx.state else 0,
            settings_key=settings_key(ctx, maker.summarizer_model),
            turn=turn,
            usage=usage,
            source=ctx,
            maker=maker,
        )
        entry.task = asyncio.get_running_loop().create_task(self._write(entry, work))
        self.prepared = entry

    async def _write(
        self, entry: PreparedFold, work: Coroutine[Any, Any, CompactionState | None]
    ) -> None:
        """The background task: the summary written, then handed over (kept ready for a
        gate, committed at once when a re-summary finds the conversation idle, or
        dropped when the summarizer gave nothing usable)."""
        summary = None
        try:
            summary = await work
        except Exception:
            log.exception("background %s failed", entry.kind)
        # The summary's calls refined the count's calibration, queued without waiting:
        # whoever sees the summary ready reads the count it gave.
        await self.shared.writes.settled()
        entry.summary = summary
        if self.prepared is not entry:
            return
        if entry.summary is None:
            self.backoff.failed()
            self._drop(entry, "the summarizer gave no usable summary")
            self.shared.on_prepared(self.conversation_id)
            return
        self.backoff.succeeded()
        if entry.kind == "fold":
            self.shared.timed(time.monotonic() - entry.started)
            self.shared.on_prepared(self.conversation_id)
            if entry.maker.asks_once and not self.shared.is_running(self.conversation_id):
                self.committing = asyncio.get_running_loop().create_task(self._land_in_pause(entry))
        elif not self.shared.is_running(self.conversation_id):
            # A re-summary keeps the fold's boundary, so nothing waits for a gate (its
            # commit tells the pages).
            self.prepared = None
            await self._commit_idle_resummary(entry)
        else:
            self.shared.on_prepared(self.conversation_id)

    async def _land_in_pause(self, entry: PreparedFold) -> None:
        """On a one-request local server: a fold whose summary became ready in the
        person's pause lands there when the gate would land it now, and the server then
        evaluates the view it leaves (`FoldMaker.warm_up`), so the next turn does not
        wait for that evaluation (seconds per thousand tokens on a small machine)."""
        maker = entry.maker
        landed = False
        ctx = await maker.reload_async()
        async for event in self.gate(
            maker, ctx, turn=entry.turn, mid_tool_loop=False, request="pause"
        ):
            landed = landed or event.name == "compaction.completed"
        if landed:
            self.shared.on_idle_commit(self.conversation_id)
            # A task of its own: the next turn's gate waits for `committing`, not this.
            warm = maker.warm_up(await maker.reload_async())
            self.warming = asyncio.get_running_loop().create_task(warm)

    def idle(self) -> None:
        """A turn ended: a re-summary that became ready meanwhile is committed now. On a
        one-request server a ready fold lands in this pause if the gate would land it now:
        it was ready before the view grew to where it lands, and the turn that grew the
        view is the last one before that; left to the next turn's gate, it would cost that
        turn the evaluation of the folded view."""
        entry = self.prepared
        if entry is None or not entry.ready:
            return
        landing = self.committing is not None and not self.committing.done()
        if entry.kind == "resummary":
            self.prepared = None  # taken: the next turn's gate cannot take it too
            self.committing = asyncio.get_running_loop().create_task(
                self._commit_idle_resummary(entry)
            )
        elif entry.maker.asks_once and not landing:
            self.committing = asyncio.get_running_loop().create_task(self._land_in_pause(entry))

    async def _commit_idle_resummary(self, entry: PreparedFold) -> None:
        state = entry.summary
        assert state is not None
        try:
            events = await entry.maker.commit_resummary(
                self.conversation_id, state, entry.base_version, entry.turn
            )
        except ConcurrentFold:
            self._drop(entry, "another fold came first")
            return
        await self._record_resummary_calls(entry.maker, entry, events)
        self.shared.on_idle_commit(self.conversation_id)


def _log_failure(stored: Future[Any]) -> None:
    if stored.exception() is not None:
        log.error("a dropped summary's calls could not be stored", exc_info=stored.exception())
