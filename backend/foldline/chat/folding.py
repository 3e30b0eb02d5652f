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
from foldline.core.compaction import SummaryRequest, fold
from foldline.core.digest import emergency_fold
from foldline.core.messages import user
from foldline.core.policy import BreakerState, Decision, decide, record_fold
from foldline.core.pruning import apply_prune, plan_prune
from foldline.core.state import CompactionState, Trigger
from foldline.providers.base import ModelRequest, Provider, TextDelta
from foldline.store import ConcurrentFold, Store

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
        },
    )


class Gate:
    """Runs the policy before every model call and after every batch of tool results."""

    def __init__(
        self,
        store: Store,
        reload: Callable[[], ConversationContext],
        summarizer_provider: Provider,
        summarizer_model: str,
        on_prune: Callable[[str], None] = lambda _conversation_id: None,
    ) -> None:
        self.store = store
        self.on_prune = on_prune
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

    async def _compute(
        self,
        ctx: ConversationContext,
        trigger: Trigger,
        reason: str,
        emergency: bool,
        instructions: str | None,
    ) -> CompactionState | None:
        common = {
            "display": ctx.window,
            "state": ctx.state,
            "counter": ctx.counter,
            "system": ctx.system,
            "tools": ctx.tools,
            "budget": ctx.budget,
            "settings": ctx.settings,
            "trigger": trigger,
            "now": utc_now(),
            "model": self.summarizer_model,
        }
        if emergency:
            return emergency_fold(**common, reason=reason)
        outcome = await fold(**common, summarize=self.summarize, instructions=instructions)
        return outcome.state
