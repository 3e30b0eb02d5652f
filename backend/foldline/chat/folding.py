"""Making folds: a prune, a fold written in line, a re-summary, and their commits.

The gate (`chat/fold_gate.py`) decides with `core.gate.decide_gate`; `FoldMaker` is
what it carries a decision out with: it supplies what the engine cannot have (the clock,
the summarizer call, the database) and turns each step into events. Counting runs in a
worker thread, the store's reads too, and every commit in the chat service's
`StoreWriter`, off the event loop that the other conversations' streams share.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import UTC, datetime

from foldline.api.events import (
    CompactionCompleted,
    CompactionFailed,
    CompactionStarted,
    PruneCompleted,
)
from foldline.chat import events as ev
from foldline.chat.context import ConversationContext
from foldline.chat.events import ChatEvent
from foldline.chat.store_writer import StoreWriter
from foldline.chat.summarizer import (
    ConversationPrefix,
    conversation_prefix,
    local_prefix_cache,
    make_summarizer,
    within_summarizer_window,
)
from foldline.chat.summary_calibration import summary_calibrator
from foldline.chat.usage import Billing, SummaryUsage
from foldline.chat.worker_loop import in_worker_loop
from foldline.core.budget import Budget, on_meter_scale
from foldline.core.compaction import (
    FoldOutcome,
    Summarizer,
    fold,
    resummarize,
    summarizer_capacity,
)
from foldline.core.digest import emergency_fold
from foldline.core.fold_inputs import FoldInputs
from foldline.core.pruning import apply_prune, plan_prune
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, Trigger
from foldline.providers.base import (
    Provider,
    StreamEndedEarly,
)
from foldline.store import CompactionRecord, ConcurrentFold, Store

log = logging.getLogger(__name__)

FOLD_FAILED = "The fold failed inside Foldline; the details are in the log."
"""What the person reads when a fold raised: the exception itself goes to the log."""
MAX_FOLD_ATTEMPTS = 3
"""A fold that loses the optimistic version check is recomputed at most this often."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def resummary_base(
    records: list[CompactionRecord], degraded: CompactionState
) -> tuple[bool, CompactionState | None]:
    """The fold a re-summary of `degraded` stacks on: (found, state; None = no fold).

    That is the degraded fold's parent, or further back past degraded ancestors: a
    summary stacked on a digest would inherit the digest's losses, and the messages a
    chain of digests replaced are all still in the store. `found` is False when the
    lineage is broken (a parent missing), so the caller leaves the fold alone.
    """
    by_version = {record.state.version: record for record in records}
    record = by_version.get(degraded.version)
    seen = {degraded.version}
    while record is not None:
        parent = record.parent_version
        if parent == 0:
            return True, None
        record = by_version.get(parent)
        if record is None or parent in seen:
            return False, None
        if not record.state.degraded:
            return True, record.state
        seen.add(parent)
    return False, None


def compaction_completed(
    state: CompactionState, turn: int, *, prepared: bool = False, resummarized: bool = False
) -> ChatEvent:
    body = CompactionCompleted.of(state, turn, prepared=prepared, resummarized=resummarized)
    return ev.CompactionCompleted(body)


class PreparationBackoff:
    """One conversation's wait after failed background summaries, in turns.

    While the summarizer stays broken, trying after every turn would spend two failing
    calls a turn; after each failure the wait doubles (1, 2, 4 ... 16 turns), and a
    success resets it.
    """

    MAX_WAIT = 16

    def __init__(self) -> None:
        self._failures = 0
        self._wait = 0

    @property
    def allows(self) -> bool:
        """Whether a preparation may start now (the wait is over)."""
        return self._wait == 0

    def should_try(self) -> bool:
        """Whether to try now; a try held back counts one turn of the wait."""
        if self._wait > 0:
            self._wait -= 1
            return False
        return True

    def failed(self) -> None:
        self._failures += 1
        self._wait = min(2 ** (self._failures - 1), self.MAX_WAIT)

    def succeeded(self) -> None:
        self._failures = 0
        self._wait = 0


MANUAL_KEEP_RECENT_TOKENS = 0
"""A manual Compact keeps only the last exchange verbatim unless the person asks to keep
more: they pressed the button to make the view small now, and `keep_recent_tokens`
(tuned for automatic folds of long views) can be larger than a short conversation."""


def manual_fold_settings(
    settings: CompactionSettings, keep_recent_tokens: int | None
) -> CompactionSettings:
    """The settings a manual fold plans with: everything before the last exchange folds,
    or, when asked, the recent messages holding `keep_recent_tokens` stay verbatim."""
    keep = MANUAL_KEEP_RECENT_TOKENS if keep_recent_tokens is None else keep_recent_tokens
    return settings.model_copy(update={"keep_recent_tokens": keep})


def on_meter(ctx: ConversationContext, state: CompactionState, fresh_after: int) -> CompactionState:
    """`state` with the meter's count before it and `fresh_after` (a fresh count of the
    view after it, with `ctx.counter`) on the meter's scale: every judgment of a fold
    (smaller or not, under the threshold or not, the circuit breaker) compares the two."""
    after = on_meter_scale(fresh_after, estimate_now=ctx.estimate, meter_now=ctx.tokens)
    return state.model_copy(update={"tokens_before": ctx.tokens, "tokens_after": after})


def not_smaller_reason(tokens_now: int, tokens_after: int) -> str:
    return (
        f"Folding now would not make the model's view smaller ({tokens_now:,} tokens now, "
        f"{tokens_after:,} after): the messages that would fold are about as short as "
        "their summary. Nothing was changed; fold later, when there is more to fold."
    )


class FoldMaker:
    """Makes and commits the folds of one conversation's turn: prunes, folds written in
    line, re-summaries, with the summarizer of the conversation's settings. The gate
    (`ConversationFolds`) decides when; this does it."""

    def __init__(
        self,
        store: Store,
        writes: StoreWriter,
        reload: Callable[[], ConversationContext],
        summarizer_provider: Provider,
        summarizer_model: str,
        on_prune: Callable[[str], None] = lambda _conversation_id: None,
        summary_billing: Billing | None = None,
        summarizer_limits: Budget | None = None,
    ) -> None:
        self.store = store
        self.writes = writes
        self.on_prune = on_prune
        self.reload = reload
        self.summarizer_provider = summarizer_provider
        self.summarizer_model = summarizer_model
        self.summarizer_limits = summarizer_limits
        """The limits of `[compaction] model`: when it is another model than the
        conversation's, a summary request must fit its window."""
        self.summary_billing = summary_billing or Billing(
            summarizer_provider.name, summarizer_model, None
        )

    def summary_usage(self) -> SummaryUsage:
        """A fresh collector for one fold's summarizer calls."""
        return SummaryUsage(self.summary_billing)

    def record_summary_calls(
        self, conversation_id: str, usage: SummaryUsage, turn: int, version: int | None
    ) -> None:
        """Store a fold's summarizer calls (version None: the summary was not used). In
        the writer."""
        if usage.usages:
            self.store.record_calls(conversation_id, usage.calls(turn, version))

    async def _record_summary_calls(
        self, conversation_id: str, usage: SummaryUsage, turn: int, version: int | None
    ) -> None:
        await self.writes.run(self.record_summary_calls, conversation_id, usage, turn, version)

    async def reload_async(self) -> ConversationContext:
        """`reload`, in a worker thread."""
        return await asyncio.to_thread(self.reload)

    async def prune(self, ctx: ConversationContext) -> ChatEvent | None:
        plan = await asyncio.to_thread(
            plan_prune,
            ctx.window,
            ctx.state,
            ctx.counter.count_text,
            ctx.settings,
            ctx.budget.input_budget,
        )
        if not plan.targets:
            return None
        now = utc_now()
        replacements = {}
        for target in plan.targets:
            record = ctx.records[target.index - ctx.start_index]
            replacements[record.id] = apply_prune(record.message, target.call_ids, now)
        await self.writes.run(self.store.commit_prune, ctx.conversation.id, replacements)
        self.on_prune(ctx.conversation.id)
        calls = sum(len(target.call_ids) for target in plan.targets)
        return ev.PruneCompleted(
            PruneCompleted(pruned_calls=calls, reclaimed_tokens=plan.reclaimable_tokens),
        )

    async def fold(
        self,
        ctx: ConversationContext,
        *,
        trigger: Trigger,
        reason: str,
        emergency: bool,
        instructions: str | None,
        turn: int,
        on_committed: Callable[[CompactionState], None] = lambda _state: None,
    ) -> AsyncIterator[ChatEvent]:
        """A fold written in line and committed; `on_committed` hears of the stored fold
        (the gate's circuit breaker)."""
        yield ev.CompactionStarted(CompactionStarted(trigger=trigger, reason=reason))
        for _attempt in range(MAX_FOLD_ATTEMPTS):
            expected = ctx.state.version if ctx.state else 0
            usage = self.summary_usage()
            try:
                state = await self.compute(ctx, trigger, reason, emergency, instructions, usage)
            except Exception:  # the engine promises not to raise; belt and braces
                log.exception("fold failed")
                await self._record_summary_calls(ctx.conversation.id, usage, turn, None)
                yield ev.CompactionFailed(CompactionFailed(trigger=trigger, reason=FOLD_FAILED))
                return
            if state is None:
                await self._record_summary_calls(ctx.conversation.id, usage, turn, None)
                yield ev.CompactionFailed(
                    CompactionFailed(trigger=trigger, reason="Nothing can be folded yet."),
                )
                return
            # `tokensBefore` is the number the person saw on the meter (anchored on the
            # provider's last report), not a fresh estimate of the same view; the fresh
            # `tokensAfter` goes on the same scale, so the two compare like with like.
            state = on_meter(ctx, state, state.tokens_after)
            if trigger == "manual" and state.tokens_after >= state.tokens_before:
                # The person asked for a smaller view; a fold that does not shrink it
                # would only cost a summary and a cache break. (Automatic and tool folds
                # commit: the circuit breaker watches those that free too little.)
                reason = not_smaller_reason(state.tokens_before, state.tokens_after)
                yield ev.CompactionFailed(CompactionFailed(trigger=trigger, reason=reason))
                return
            try:
                # The store numbers the version (an undone version keeps its number).
                state = await self.writes.run(
                    self.store.commit_fold, ctx.conversation.id, state, expected_version=expected
                )
            except ConcurrentFold:
                await self._record_summary_calls(ctx.conversation.id, usage, turn, None)
                # Recomputed on the new state with the same settings (a manual fold's own).
                settings = ctx.settings
                ctx = await self.reload_async()
                ctx.settings = settings
                continue
            await self._record_summary_calls(ctx.conversation.id, usage, turn, state.version)
            on_committed(state)
            yield compaction_completed(state, turn)
            return
        yield ev.CompactionFailed(
            CompactionFailed(
                trigger=trigger, reason="Another fold kept changing the conversation."
            ),
        )

    async def compute_resummary(
        self, ctx: ConversationContext, usage: SummaryUsage
    ) -> CompactionState | None:
        """A model summary for what the current fold's emergency digest stands for, not
        yet committed; None when there is no digest to replace or the summarizer failed
        again (or the summary would bring the view to the threshold). The store is read
        in a worker thread."""
        degraded = ctx.state
        if degraded is None or not degraded.degraded:
            return None
        conversation_id = ctx.conversation.id
        compactions = await asyncio.to_thread(self.store.list_compactions, conversation_id)
        found, previous = resummary_base(compactions, degraded)
        if not found:
            log.warning("fold %s has no parent on record; not re-summarizing", degraded.version)
            return None
        start = previous.api_start_index if previous else 0
        folded = await asyncio.to_thread(
            self.store.list_messages,
            conversation_id,
            offset=start,
            limit=degraded.api_start_index - start,
        )
        messages = [record.message for record in folded]

        async def write(inputs: FoldInputs, summarize: Summarizer) -> CompactionState | None:
            # The engine's counting and checks off the event loop (`worker_loop.py`).
            return await in_worker_loop(
                lambda summarize: resummarize(
                    inputs, folded=messages, previous=previous, summarize=summarize
                ),
                summarize,
            )

        inputs, prefix = self._fold_request(ctx)
        return await within_summarizer_window(
            write, inputs, self._summarizer(ctx, usage, prefix), lambda state: state is None
        )

    async def commit_resummary(
        self, conversation_id: str, state: CompactionState, degraded_version: int, turn: int
    ) -> list[ChatEvent]:
        """Commit a re-summary over the digest it replaces, in the writer; raises
        `ConcurrentFold` when another fold or an undo came first."""
        state = await self.writes.run(
            self.store.commit_fold, conversation_id, state, expected_version=degraded_version
        )
        return [
            ev.CompactionStarted(
                CompactionStarted(
                    trigger=state.trigger,
                    reason="Replacing the emergency digest with a model summary.",
                ),
            ),
            compaction_completed(state, turn, resummarized=True),
        ]

    async def compute(
        self,
        ctx: ConversationContext,
        trigger: Trigger,
        reason: str,
        emergency: bool,
        instructions: str | None,
        usage: SummaryUsage,
    ) -> CompactionState | None:
        """The fold for `ctx`, not committed; its summarizer calls' usage goes to `usage`."""
        inputs, prefix = self._fold_request(ctx)
        if emergency:  # no model call, but the whole view is counted: in a worker thread
            return await asyncio.to_thread(emergency_fold, inputs, trigger=trigger, reason=reason)

        async def write(inputs: FoldInputs, summarize: Summarizer) -> FoldOutcome:
            # The engine's counting and checks off the event loop (`worker_loop.py`).
            return await in_worker_loop(
                lambda summarize: fold(
                    inputs, summarize=summarize, trigger=trigger, instructions=instructions
                ),
                summarize,
            )

        def fell_back_to_digest(outcome: FoldOutcome) -> bool:
            return outcome.state is not None and outcome.state.degraded

        outcome = await within_summarizer_window(
            write, inputs, self._summarizer(ctx, usage, prefix), fell_back_to_digest
        )
        return outcome.state

    @property
    def asks_once(self) -> bool:
        """The summarizer is a local server that keeps the conversation's prompt: a fold
        asks it one summary, after the view (`FoldInputs.summary_asked_once`)."""
        return local_prefix_cache(self.summarizer_provider, self.summarizer_model)

    async def warm_up(self, ctx: ConversationContext) -> None:
        """Have a one-request local server evaluate the view a fold left, in the person's
        pause, so the next turn finds it in the server's prompt cache. It goes as a
        background request (a turn that comes first cuts it and evaluates the rest
        itself); its one token of answer is thrown away."""
        prefix = conversation_prefix(ctx, self.summarizer_provider, self.summarizer_model)
        if prefix is None:
            return
        request = prefix.view_request(self.summarizer_model, max_output_tokens=1)
        try:
            async for _event in self.summarizer_provider.stream(request):
                pass
        except StreamEndedEarly:
            pass  # an empty answer (a view that ends with one): the prompt was evaluated
        except Exception as error:  # nothing waits for it: a failure costs the next turn
            log.info("warming the view of %s up failed: %s", ctx.conversation.id, error)

    def fold_inputs(self, ctx: ConversationContext) -> FoldInputs:
        """What a fold of `ctx` reads: when the summarizer is another model, its
        requests fit that model's window and its summary that model's output cap."""
        return self._fold_request(ctx)[0]

    def _fold_request(
        self, ctx: ConversationContext
    ) -> tuple[FoldInputs, ConversationPrefix | None]:
        """`fold_inputs`, and the prefix the summary is asked after (None: on its own).
        Whether the server keeps the prompt is asked once for both (`asks_once`)."""
        inputs = ctx.fold_inputs(now=utc_now(), model=self.summarizer_model)
        once = self.asks_once
        prefix = conversation_prefix(
            ctx, self.summarizer_provider, self.summarizer_model, keeps_prompt=once
        )
        if prefix is not None:
            # On a local server the summary after the view is the fold's one request
            # (see `FoldInputs.summary_asked_once`).
            inputs = replace(inputs, summary_after_view=True, summary_asked_once=once)
        limits = self.summarizer_limits
        if limits is None or self.summarizer_model == ctx.model.model:
            return inputs, prefix
        return replace(
            inputs,
            summarizer_budget=summarizer_capacity(ctx.budget, limits),
            summarizer_max_output=limits.max_output_tokens or None,
        ), prefix

    def _summarizer(
        self, ctx: ConversationContext, usage: SummaryUsage, prefix: ConversationPrefix | None
    ) -> Summarizer:
        return make_summarizer(
            self.summarizer_provider,
            self.summarizer_model,
            usage.add,
            ctx.settings.reasoning_effort,
            summary_calibrator(
                self.store, self.writes, self.summary_billing, Billing.of(ctx.model), ctx.counter
            ),
            prefix,
        )
