"""The model's view of one conversation, loaded from the store and counted.

Loading reads only the current fold and the rows from `apiStartIndex` on, so its cost
does not grow with the history. Everything the gate, the request and the
`/context` route need is gathered here once per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from foldline.api.schemas import (
    ApiMessageOut,
    BackgroundFoldOut,
    CompactionOut,
    ContextBreakdown,
    ContextOut,
    ContextStatsOut,
    ConversationUsageOut,
    Thresholds,
    UsageOut,
    part_out,
)
from foldline.chat.counting import CachedCounter
from foldline.config import AppConfig
from foldline.core.budget import Budget, TokenAnchor, tokens_now
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import HistoryWindow, Message, ToolSpec
from foldline.core.pins import Pin, pins_cap, pins_tokens
from foldline.core.settings import CompactionSettings, InvalidSettings, check_conversation_settings
from foldline.core.state import CompactionState
from foldline.core.tokens import ScaledCounter, TokenCounter
from foldline.core.view import build_api_messages
from foldline.providers.catalog import SUGGESTED_MODELS
from foldline.providers.registry import ModelListing, ResolvedModel, resolve_model
from foldline.store import ConversationRecord, MessageRecord, Store
from foldline.tokenizers import counter_for

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant in Foldline, a chat app for long conversations. Older "
    "parts of this conversation may be folded into a summary you receive as the first "
    "message; treat it as a faithful record. You can check how full your context is with "
    "getContextStats and fold older messages with compactContext."
)


@dataclass
class ConversationContext:
    conversation: ConversationRecord
    model: ResolvedModel
    budget: Budget
    settings: CompactionSettings
    system: str
    tools: list[ToolSpec]
    state: CompactionState | None
    records: list[MessageRecord]
    counter: TokenCounter
    ratio: float
    """The calibration ratio the counter applies (1.0 for exact counts)."""
    view: list[Message]
    tokens: int
    """The best count of the next request: anchored on the last call when possible."""
    estimate: int
    """The count from scratch (calibrated), which calibration compares with usage."""
    anchor_tokens: int | None
    """The reported input of the last call when the anchor is valid, else None."""
    added_estimate: int
    """The calibrated count of the view messages added since the anchored call."""
    breakdown: ContextBreakdown
    usage: ConversationUsageOut
    """What the conversation's calls cost so far and in the last turn."""
    background_fold: BackgroundFoldOut | None = None
    """A fold being prepared in the background, or ready."""
    settings_notice: str | None = None
    """Why the conversation's own settings were set aside for the defaults, if they were."""
    pins: tuple[Pin, ...] = ()
    """Every pinned message of the conversation (those folded ride after the summary)."""

    @property
    def window(self) -> HistoryWindow:
        start = self.state.api_start_index if self.state else 0
        return HistoryWindow(start, tuple(record.message for record in self.records))

    def fold_inputs(self, *, now: str, model: str | None) -> FoldInputs:
        """What a fold of this view reads; `model` is the summarizer's name."""
        return FoldInputs(
            window=self.window,
            state=self.state,
            counter=self.counter,
            system=self.system,
            tools=tuple(self.tools),
            budget=self.budget,
            settings=self.settings,
            now=now,
            model=model,
            pins=self.pins,
        )

    @property
    def pinned_tokens(self) -> int:
        """What every pin together takes in a request when all are folded."""
        return pins_tokens(self.pins, self.counter.count_text)

    @property
    def pins_cap(self) -> int:
        return pins_cap(self.budget.input_budget)

    @property
    def start_index(self) -> int:
        return self.state.api_start_index if self.state else 0

    @property
    def history_length(self) -> int:
        return self.start_index + len(self.records)

    def stats(self) -> ContextStatsOut:
        """The numbers the meter, `getContextStats` and `context.stats` share."""
        return ContextStatsOut(**self._stats_fields())

    def _stats_fields(self) -> dict[str, Any]:
        budget = self.budget.input_budget
        return dict(
            tokens=self.tokens,
            input_budget=budget,
            context_window=self.budget.context_window,
            # The working budget is what folding aims at on a very large window (cost per
            # turn, answer quality); the window's budget is what the model would accept.
            working_budget=budget if self.budget.working_budget_applies else None,
            window_budget=self.budget.window_budget,
            fraction=round(self.budget.fraction(self.tokens), 4),
            exact=self.counter.exact,
            breakdown=self.breakdown,
            thresholds=Thresholds(soft=self.settings.threshold, hard=self.settings.hard_threshold),
            model=self.model.model,
            model_known=self.model.known,
            model_lifecycle=self.model.lifecycle,
            model_replacement=(
                SUGGESTED_MODELS.get(self.model.provider_kind)
                if self.model.lifecycle == "retired"
                else None
            ),
            version=self.state.version if self.state else 0,
            messages_in_view=len(self.records),
            messages_in_history=self.history_length,
            usage=self.usage,
            background_fold=self.background_fold,
        )

    def context_out(self, *, include_messages: bool = True) -> ContextOut:
        """The body of `GET /api/conversations/{id}/context`; the meter only needs the
        numbers, so the (possibly megabytes of) view messages are optional."""
        messages = self.view if include_messages else []
        return ContextOut(
            **self._stats_fields(),
            compaction=CompactionOut.from_state(self.state) if self.state else None,
            system=self.system,
            tools=[tool.name for tool in self.tools],
            api_messages=[
                ApiMessageOut(role=m.role, parts=[part_out(part) for part in m.parts])
                for m in messages
            ],
            api_messages_included=include_messages,
            settings_notice=self.settings_notice,
        )


def conversation_settings(
    config: AppConfig, conversation: ConversationRecord
) -> tuple[CompactionSettings, str | None]:
    """The app's compaction settings with the conversation's own overrides on top, and a
    notice when those overrides are invalid (stored by an older version that did not
    check them): the conversation then runs on the app's settings instead of failing."""
    try:
        check_conversation_settings(conversation.settings)
    except InvalidSettings as error:
        notice = (
            f"This conversation's own settings are invalid ({error}); the app's "
            "[compaction] settings (config.toml) are used instead."
        )
        return config.compaction, notice
    overrides = conversation.settings.get("compaction") or {}
    if not overrides:
        return config.compaction, None
    merged = config.compaction.model_dump() | dict(overrides)
    return CompactionSettings.model_validate(merged), None


class ContextLoader:
    """Builds `ConversationContext`s, keeping one cached counter per model.

    It also keeps, per conversation, the anchor of the last call: the input the provider
    reported for it. An estimate's error is then confined to the messages added since
    that call instead of accumulating over the whole view.
    """

    def __init__(
        self,
        store: Store,
        tools: Callable[[], list[ToolSpec]],
        *,
        listing: ModelListing | None = None,
    ) -> None:
        self.store = store
        self.tools = tools
        """The specs offered to the model now (the tool registry's, counted in every view)."""
        self.listing = listing
        """The providers' model lists, whose windows win over the catalog."""
        self._counters: dict[tuple[str, str, bool, bool], CachedCounter] = {}
        self._anchors: dict[str, tuple[str, str, TokenAnchor]] = {}
        self.fold_status: Callable[[str], BackgroundFoldOut | None] = lambda _id: None
        """The chat service's background folds, as `ConversationContext.background_fold`."""

    def set_anchor(self, ctx: ConversationContext, reported_input: int) -> None:
        """Remember what the provider reported for a call that was sent `ctx.view`."""
        version = ctx.state.version if ctx.state else 0
        anchor = TokenAnchor(reported_input, len(ctx.view), version)
        self._anchors[ctx.conversation.id] = (ctx.model.model, ctx.system, anchor)

    def drop_anchor(self, conversation_id: str) -> None:
        """Forget the anchor after a change it cannot see (pruning rewrote old messages)."""
        self._anchors.pop(conversation_id, None)

    def _anchor(self, conversation_id: str, model: str, system: str) -> TokenAnchor | None:
        entry = self._anchors.get(conversation_id)
        if entry is None or entry[0] != model or entry[1] != system:
            return None
        return entry[2]

    def _cached_counter(self, resolved: ResolvedModel, wire: str) -> CachedCounter:
        # Counts are exact only against OpenAI itself; a compatible server's model has a
        # tokenizer of its own whatever its name.
        exact_allowed = resolved.provider_kind == "openai"
        key = (resolved.model, wire, exact_allowed, resolved.vision)
        if key not in self._counters:
            raw = counter_for(  # type: ignore[arg-type]
                resolved.model, wire, exact_allowed=exact_allowed, images=resolved.vision
            )
            self._counters.setdefault(key, CachedCounter(raw))
        return self._counters[key]

    def counter(self, resolved: ResolvedModel, wire: str) -> tuple[TokenCounter, float]:
        cached = self._cached_counter(resolved, wire)
        if cached.exact:
            return cached, 1.0
        # A model without samples of its own (just switched to) counts with its provider's
        # learned ratio: the fold before its first send then sees what will be sent.
        ratio = self.store.counting_calibration(resolved.provider_name, resolved.model).ratio
        return ScaledCounter(cached, ratio), ratio

    def _count_view(
        self,
        resolved: ResolvedModel,
        wire: str,
        counter: TokenCounter,
        view: list[Message],
        records: list[MessageRecord],
    ) -> list[int]:
        """Each view message's count; a message shown exactly as stored (the very object
        its record holds: the view passes unchanged messages through) is counted once per
        (id, updated_at). Copies made for the view (the summary, pruned placeholders,
        repairs) are counted afresh."""
        # The records keep their messages alive during the load, so no id() is reused.
        keys = {id(record.message): (record.id, record.updated_at) for record in records}
        cached = self._cached_counter(resolved, wire)
        raw = [cached.count_stored(message, keys.get(id(message))) for message in view]
        if isinstance(counter, ScaledCounter):
            return [counter.scale(count) for count in raw]
        return raw

    def load(self, config: AppConfig, conversation_id: str, *, wire: str) -> ConversationContext:
        conversation = self.store.get_conversation(conversation_id)
        model_name = conversation.model or config.default_model or ""
        model = resolve_model(config, model_name, listing=self.listing)
        budget = Budget(
            context_window=model.context_window,
            max_output_tokens=model.output_reserve,
            input_limit=model.input_limit,
            working_budget=model.working_budget,
        )
        state, records = self.store.load_window(conversation_id)
        start = state.api_start_index if state else 0
        window = HistoryWindow(start, tuple(record.message for record in records))
        pins = tuple(Pin(pin.seq, pin.message) for pin in self.store.list_pins(conversation_id))
        view = build_api_messages(window, state, pins)
        system = conversation.system_prompt or DEFAULT_SYSTEM_PROMPT
        tools = self.tools()
        counter, ratio = self.counter(model, wire)
        framing = counter.count_request(system, [], [])
        tool_tokens = counter.count_request(system, [], tools) - framing
        base = counter.count_request(system, [], tools)
        counts = self._count_view(model, wire, counter, view, records)
        tokens = estimate = base + sum(counts)
        anchor_tokens, added = None, 0
        if not counter.exact:
            anchor = self._anchor(conversation_id, model.model, system)
            version = state.version if state else 0
            tokens = tokens_now(anchor, version, counts, base)
            if anchor and anchor.state_version == version and anchor.view_length <= len(counts):
                anchor_tokens, added = anchor.tokens, sum(counts[anchor.view_length :])
        summary = counts[0] if state and view else 0
        breakdown = ContextBreakdown(
            system=framing,
            tools=tool_tokens,
            summary=summary,
            messages=max(tokens - framing - tool_tokens - summary, 0),
        )
        settings, settings_notice = conversation_settings(config, conversation)
        return ConversationContext(
            conversation=conversation,
            model=model,
            budget=budget,
            settings=settings,
            settings_notice=settings_notice,
            system=system,
            tools=tools,
            state=state,
            records=records,
            counter=counter,
            ratio=ratio,
            view=view,
            tokens=tokens,
            estimate=estimate,
            anchor_tokens=anchor_tokens,
            added_estimate=added,
            breakdown=breakdown,
            usage=self.usage(conversation_id, model),
            background_fold=self.fold_status(conversation_id),
            pins=pins,
        )

    def usage(self, conversation_id: str, model: ResolvedModel) -> ConversationUsageOut:
        """The meter's money: the conversation so far, its last turn, caching's saving.
        `priced` is False for a model without known prices (shown in tokens only)."""
        total, last_turn = self.store.usage_totals(conversation_id)
        return ConversationUsageOut(
            total=UsageOut.model_validate(total, from_attributes=True),
            last_turn=UsageOut.model_validate(last_turn, from_attributes=True),
            priced=model.prices is not None or total.cost is not None,
        )
