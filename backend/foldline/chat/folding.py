"""The gate: prune, fold or do nothing, as the policy decides; and the fold's commit.

The engine decides and computes; this module supplies what it cannot have (the clock,
the summarizer call, the database) and turns each step into events.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from foldline.chat.context import ConversationContext
from foldline.chat.events import ChatEvent
from foldline.core.compaction import SummaryRequest, fold, resummarize
from foldline.core.digest import emergency_fold
from foldline.core.messages import user
from foldline.core.policy import BreakerState, Decision, decide, record_fold
from foldline.core.pruning import apply_prune, plan_prune
from foldline.core.state import CompactionState, Trigger
from foldline.providers.base import ModelRequest, Provider, TextDelta
from foldline.store import CompactionRecord, ConcurrentFold, Store

log = logging.getLogger(__name__)

MAX_FOLD_ATTEMPTS = 3
"""A fold that loses the optimistic version check is recomputed at most this often."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class GateOutcome:
    """What the gate did; `changed` means the view must be reloaded before a call."""

    changed: bool = False
    folded: bool = False
    events: list[ChatEvent] = field(default_factory=list)


def make_summarizer(provider: Provider, model: str) -> Callable[[SummaryRequest], object]:
    """An engine `Summarizer` that asks the provider with a tool-less request."""

    async def summarize(request: SummaryRequest) -> str:
        model_request = ModelRequest(
            model=model,
            system=request.system,
            messages=[user(request.prompt)],
            tools=[],
            max_output_tokens=request.max_output_tokens,
        )
        chunks: list[str] = []
        async for event in provider.stream(model_request):
            if isinstance(event, TextDelta):
                chunks.append(event.text)
        return "".join(chunks)

    return summarize


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


def compaction_completed(state: CompactionState, turn: int) -> ChatEvent:
    range_ = state.summarized_range
    return ChatEvent(
        "compaction.completed",
        {
            "version": state.version,
            "strategy": state.strategy,
            "trigger": state.trigger,
            "turn": turn,
            "tokensBefore": state.tokens_before,
            "tokensAfter": state.tokens_after,
            "apiStartIndex": state.api_start_index,
            "summarizedRange": {
                "fromIndex": range_.from_index,
                "toIndex": range_.to_index,
                "messageCount": range_.message_count,
            },
            "degraded": state.degraded,
            "detailsTotal": state.details_total,
            "detailsKept": state.details_kept,
            "detailsAppended": state.details_appended,
        },
    )


class ResummaryBackoff:
    """Per conversation: how many good turns to wait before re-summarizing again.

    While the summarizer stays broken, trying after every turn would spend two failing
    calls a turn; after each failure the wait doubles (1, 2, 4 ... 16 turns), and a
    success resets it.
    """

    MAX_WAIT = 16

    def __init__(self) -> None:
        self._failures: dict[str, int] = {}
        self._waits: dict[str, int] = {}

    def should_try(self, conversation_id: str) -> bool:
        wait = self._waits.get(conversation_id, 0)
        if wait > 0:
            self._waits[conversation_id] = wait - 1
            return False
        return True

    def failed(self, conversation_id: str) -> None:
        failures = self._failures.get(conversation_id, 0) + 1
        self._failures[conversation_id] = failures
        self._waits[conversation_id] = min(2 ** (failures - 1), self.MAX_WAIT)

    def succeeded(self, conversation_id: str) -> None:
        self._failures.pop(conversation_id, None)
        self._waits.pop(conversation_id, None)


class Gate:
    """Runs the policy before every model call and after every batch of tool results."""

    def __init__(
        self,
        store: Store,
        reload: Callable[[], ConversationContext],
        summarizer_provider: Provider,
        summarizer_model: str,
        on_prune: Callable[[str], None] = lambda _conversation_id: None,
        backoff: ResummaryBackoff | None = None,
    ) -> None:
        self.store = store
        self.on_prune = on_prune
        self.backoff = backoff or ResummaryBackoff()
        self.reload = reload
        self.summarize = make_summarizer(summarizer_provider, summarizer_model)
        self.summarizer_model = summarizer_model
        self.breaker = BreakerState()

    def decide(
        self,
        ctx: ConversationContext,
        *,
        mid_tool_loop: bool,
        overflow: bool = False,
        tool_requested: bool = False,
        manual: bool = False,
    ) -> tuple[Decision, int]:
        settings = ctx.settings
        reclaimable = 0
        if settings.prune:
            plan = plan_prune(
                ctx.window, ctx.state, ctx.counter.count_text, settings, ctx.budget.input_budget
            )
            reclaimable = plan.reclaimable_tokens
        decision = decide(
            tokens=ctx.tokens,
            budget=ctx.budget,
            settings=settings,
            mid_tool_loop=mid_tool_loop,
            reclaimable_prune_tokens=reclaimable,
            breaker=self.breaker,
            overflow=overflow,
            tool_requested=tool_requested,
            manual=manual,
        )
        return decision, reclaimable

    def prune(self, ctx: ConversationContext) -> ChatEvent | None:
        plan = plan_prune(
            ctx.window, ctx.state, ctx.counter.count_text, ctx.settings, ctx.budget.input_budget
        )
        if not plan.targets:
            return None
        now = utc_now()
        replacements = {}
        for target in plan.targets:
            record = ctx.records[target.index - ctx.start_index]
            replacements[record.id] = apply_prune(record.message, target.call_ids, now)
        self.store.commit_prune(ctx.conversation.id, replacements)
        self.on_prune(ctx.conversation.id)
        calls = sum(len(target.call_ids) for target in plan.targets)
        return ChatEvent(
            "prune.completed",
            {"prunedCalls": calls, "reclaimedTokens": plan.reclaimable_tokens},
        )

    async def run(
        self,
        ctx: ConversationContext,
        *,
        mid_tool_loop: bool,
        turn: int,
        overflow: bool = False,
        tool_requested: bool = False,
        manual: bool = False,
        instructions: str | None = None,
    ) -> AsyncIterator[ChatEvent]:
        """Yield the events of whatever the policy decides; the caller reloads after."""
        decision, _ = self.decide(
            ctx,
            mid_tool_loop=mid_tool_loop,
            overflow=overflow,
            tool_requested=tool_requested,
            manual=manual,
        )
        if decision.action == "prune":
            event = self.prune(ctx)
            if event is not None:
                yield event
            return
        if decision.action in ("fold", "emergency_fold"):
            async for event in self.fold(
                ctx,
                trigger=decision.trigger or "auto",
                reason=decision.reason,
                emergency=decision.action == "emergency_fold",
                instructions=instructions,
                turn=turn,
            ):
                yield event

    async def fold(
        self,
        ctx: ConversationContext,
        *,
        trigger: Trigger,
        reason: str,
        emergency: bool,
        instructions: str | None,
        turn: int,
    ) -> AsyncIterator[ChatEvent]:
        yield ChatEvent("compaction.started", {"trigger": trigger, "reason": reason})
        for _attempt in range(MAX_FOLD_ATTEMPTS):
            expected = ctx.state.version if ctx.state else 0
            try:
                state = await self._compute(ctx, trigger, reason, emergency, instructions)
            except Exception as error:  # the engine promises not to raise; belt and braces
                log.exception("fold failed")
                yield ChatEvent("compaction.failed", {"trigger": trigger, "reason": str(error)})
                return
            if state is None:
                yield ChatEvent(
                    "compaction.failed",
                    {"trigger": trigger, "reason": "Nothing can be folded yet."},
                )
                return
            try:
                # The store numbers the version (an undone version keeps its number).
                state = self.store.commit_fold(
                    ctx.conversation.id, state, expected_version=expected
                )
            except ConcurrentFold:
                ctx = self.reload()
                continue
            self.breaker = record_fold(self.breaker, state.tokens_before, state.tokens_after)
            yield compaction_completed(state, turn)
            return
        yield ChatEvent(
            "compaction.failed",
            {"trigger": trigger, "reason": "Another fold kept changing the conversation."},
        )

    async def resummarize(self, ctx: ConversationContext, turn: int) -> AsyncIterator[ChatEvent]:
        """Replace the current fold's emergency digest by a model summary, if it has one.

        Runs after a turn that ended well. On any failure (the summarizer again, a view
        that would reach the threshold, another fold meanwhile) nothing is emitted and the
        fold stays degraded, to be tried again after the next turn.
        """
        degraded = ctx.state
        if degraded is None or not degraded.degraded or self.breaker.tripped:
            return
        conversation_id = ctx.conversation.id
        if not self.backoff.should_try(conversation_id):
            return
        try:
            found, previous = resummary_base(self.store.list_compactions(conversation_id), degraded)
            if not found:
                log.warning("fold %s has no parent on record; not re-summarizing", degraded.version)
                return
            start = previous.api_start_index if previous else 0
            folded = self.store.list_messages(
                conversation_id, offset=start, limit=degraded.api_start_index - start
            )
            state = await resummarize(
                ctx.fold_inputs(now=utc_now(), model=self.summarizer_model),
                folded=[record.message for record in folded],
                previous=previous,
                summarize=self.summarize,
            )
            if state is None:
                log.info("the emergency digest of fold %s stays for now", degraded.version)
                self.backoff.failed(conversation_id)
                return
            state = self.store.commit_fold(
                conversation_id, state, expected_version=degraded.version
            )
        except ConcurrentFold:
            return  # another fold or an undo won; the next turn looks again
        except Exception:  # the engine does not raise on summarizer failures; anything else
            log.exception("re-summarizing fold %s failed", degraded.version)
            self.backoff.failed(conversation_id)
            return
        self.backoff.succeeded(conversation_id)
        yield ChatEvent(
            "compaction.started",
            {
                "trigger": state.trigger,
                "reason": "Replacing the emergency digest with a model summary.",
            },
        )
        completed = compaction_completed(state, turn)
        yield ChatEvent(completed.name, {**completed.data, "resummarized": True})

    async def _compute(
        self,
        ctx: ConversationContext,
        trigger: Trigger,
        reason: str,
        emergency: bool,
        instructions: str | None,
    ) -> CompactionState | None:
        inputs = ctx.fold_inputs(now=utc_now(), model=self.summarizer_model)
        if emergency:
            return emergency_fold(inputs, trigger=trigger, reason=reason)
        outcome = await fold(
            inputs, summarize=self.summarize, trigger=trigger, instructions=instructions
        )
        return outcome.state
