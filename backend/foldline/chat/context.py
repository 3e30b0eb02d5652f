"""The model's view of one conversation, loaded from the store and counted.

Loading reads only the current fold and the rows from `apiStartIndex` on, so its cost
does not grow with the history. Everything the gate, the request and the
`/context` route need is gathered here once per step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from foldline.api.schemas import CompactionOut, UsageOut
from foldline.api.schemas_context import (
    ApiMessageOut,
    BackgroundFoldOut,
    ContextBreakdown,
    ContextOut,
    ContextStatsOut,
    ConversationUsageOut,
    ProjectInViewOut,
    Thresholds,
)
from foldline.api.schemas_messages import AttachmentPartOut, PartOut, part_out
from foldline.chat.counting import CachedCounter, TailEntry, tail_counts
from foldline.chat.projects import (
    conversation_project,
    model_name,
    project_context,
    settings_with_project,
)
from foldline.config import AppConfig
from foldline.core.budget import Budget, TokenAnchor, tokens_now
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import (
    AttachmentPart,
    HistoryWindow,
    Message,
    Part,
    ReasoningPart,
    ToolSpec,
)
from foldline.core.pins import Pin, pins_cap, pins_tokens
from foldline.core.projects import ProjectContext, compose_system, project_cap
from foldline.core.reasoning import Effort, effort_from_settings
from foldline.core.recall import RECALL_TOOL_NAMES, offered_tools
from foldline.core.settings import (
    CompactionSettings,
    InvalidSettings,
    check_conversation_settings,
    generation_from_settings,
)
from foldline.core.state import CompactionState
from foldline.core.tokens import ScaledCounter, TokenCounter
from foldline.core.view import build_api_messages
from foldline.core.wire import current_loop_start
from foldline.providers.catalog import SUGGESTED_MODELS
from foldline.providers.registry import ModelListing, ResolvedModel, resolve_model
from foldline.store import ConversationRecord, MessageRecord, Store
from foldline.tokenizers import Wire, counter_for

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant in Foldline, a chat app for long conversations. Older "
    "parts of this conversation may be folded into a summary you receive as the first "
    "message; treat it as a faithful record. You can check how full your context is with "
    "getContextStats and fold older messages with compactContext."
)


def offered_tools_for(
    specs: list[ToolSpec], folded: bool, budget: Budget, counter: TokenCounter
) -> list[ToolSpec]:
    """`offered_tools` with the recall tools' specs measured by the conversation's own
    counter against its input budget (each turn and the fold's plan use the same)."""

    # Measured on top of the other tools: what offering them adds to every request (the
    # wire's fixed cost of having tools at all is paid for the others already).
    others = [spec for spec in specs if spec.name not in RECALL_TOOL_NAMES]
    base = counter.count_request("", [], others)

    def spec_tokens(recall: Sequence[ToolSpec]) -> int:
        return counter.count_request("", [], [*others, *recall]) - base

    return offered_tools(specs, folded, input_budget=budget.input_budget, spec_tokens=spec_tokens)


@dataclass
class ConversationContext:
    conversation: ConversationRecord
    model: ResolvedModel
    budget: Budget
    settings: CompactionSettings
    system: str
    tools: list[ToolSpec]
    tools_after_fold: list[ToolSpec]
    """The tools offered once the conversation has a fold (the recall tools join at the
    first): a fold is planned and judged on the view it leaves, these included."""
    state: CompactionState | None
    records: list[MessageRecord]
    """The stored messages of the view (empty when loaded without messages)."""
    messages_in_view: int
    """How many stored messages the view holds (`apiStartIndex` to the end)."""
    counter: TokenCounter
    ratio: float
    """The calibration ratio the counter applies (1.0 for exact counts)."""
    view: list[Message]
    """The messages of the request (empty when loaded without messages)."""
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
    media: int = 0
    """The tokens of the view's images and PDF page images, billed by the provider's
    formula: part of `estimate`, but not of what the calibration ratio applies to."""
    added_media: int = 0
    """The same for the messages added since the anchored call (part of `added_estimate`)."""
    settings_notice: str | None = None
    """Why the conversation's own settings were set aside for the defaults, if they were."""
    pins: tuple[Pin, ...] = ()
    """Every pinned message of the conversation (those folded ride after the summary)."""
    project: ProjectInViewOut | None = None
    """The conversation's project and what its shared context takes in `system`."""

    @property
    def temperature(self) -> float | None:
        """The temperature of the conversation's chat calls: its own setting, else the
        model's (`[models."x"] temperature`), else None (the provider's default)."""
        own = generation_from_settings(self.conversation.settings)
        if own is not None and own.temperature is not None:
            return own.temperature
        return self.model.temperature

    @property
    def answer_tokens(self) -> int:
        """The most one answer may write: the conversation's `maxOutputTokens` when it
        is smaller than the model's output reserve, else the reserve."""
        own = generation_from_settings(self.conversation.settings)
        reserve = self.model.output_reserve
        if own is not None and own.max_output_tokens is not None:
            return min(own.max_output_tokens, reserve)
        return reserve

    @property
    def reasoning_effort(self) -> Effort:
        """The effort of the conversation's chat calls: its own setting, else the model's
        (`[models."x"] reasoning_effort`, else the catalog's default)."""
        return effort_from_settings(self.conversation.settings) or self.model.reasoning_effort

    @property
    def window(self) -> HistoryWindow:
        start = self.state.api_start_index if self.state else 0
        return HistoryWindow(start, tuple(record.message for record in self.records))

    @property
    def counted_tools_after_fold(self) -> list[ToolSpec]:
        """`tools_after_fold` as far as they take room in the prompt: none where the
        model's chat template leaves tool definitions out (`counts_tools`), as the meter
        counts the view now; a fold judged with them would look larger than it is."""
        return self.tools_after_fold if self.model.counts_tools else []

    def fold_inputs(self, *, now: str, model: str | None) -> FoldInputs:
        """What a fold of this view reads; `model` is the summarizer's name."""
        return FoldInputs(
            window=self.window,
            state=self.state,
            counter=self.counter,
            system=self.system,
            tools=tuple(self.counted_tools_after_fold),
            budget=self.budget,
            settings=self.settings,
            now=now,
            model=model,
            pins=self.pins,
            # Only the conversation's own model is known to take files here.
            summarizer_reads_files=self.model.vision and model in (None, self.model.model),
        )

    def _part_out(self, message: Message, part: Part) -> PartOut:
        """A part of the model's view; a person's file with what it costs in the request."""
        out = part_out(part)
        if isinstance(part, AttachmentPart) and isinstance(out, AttachmentPartOut):
            empty = Message(role=message.role)
            alone = Message(role=message.role, parts=(part,))
            out.tokens = self.counter.count_message(alone) - self.counter.count_message(empty)
        return out

    @property
    def pinned_tokens(self) -> int:
        """What every pin together takes in a request when all are folded."""
        return pins_tokens(self.pins, self.counter.count_text, self.counter.count_message)

    @property
    def pins_cap(self) -> int:
        return pins_cap(self.budget.input_budget)

    @property
    def project_over_cap(self) -> bool:
        return self.project is not None and self.project.tokens > self.project.cap_tokens

    @property
    def start_index(self) -> int:
        return self.state.api_start_index if self.state else 0

    @property
    def history_length(self) -> int:
        return self.start_index + self.messages_in_view

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
            messages_in_view=self.messages_in_view,
            messages_in_history=self.history_length,
            usage=self.usage,
            background_fold=self.background_fold,
        )

    def context_out(self, *, include_messages: bool = True) -> ContextOut:
        """The body of `GET /api/conversations/{id}/context`; the meter only needs the
        numbers, so the (possibly megabytes of) view messages are optional."""
        messages = self.view if include_messages else []
        # Reasoning goes to the model only inside the tool loop in progress; the view
        # shows what is sent.
        loop_start = current_loop_start(messages)
        return ContextOut(
            **self._stats_fields(),
            compaction=CompactionOut.from_state(self.state) if self.state else None,
            system=self.system,
            tools=[tool.name for tool in self.tools],
            api_messages=[
                ApiMessageOut(
                    role=m.role,
                    parts=[
                        self._part_out(m, part)
                        for part in m.parts
                        if index >= loop_start or not isinstance(part, ReasoningPart)
                    ],
                )
                for index, m in enumerate(messages)
            ],
            api_messages_included=include_messages,
            settings_notice=self.settings_notice,
            project=self.project,
        )


def conversation_settings(
    config: AppConfig, conversation: ConversationRecord, settings: dict[str, Any] | None = None
) -> tuple[CompactionSettings, str | None]:
    """The app's compaction settings with the conversation's own overrides on top (or
    `settings`: its own with its project's beneath them), and a notice when those
    overrides are invalid (stored by an older version that did not check them): the
    conversation then runs on the app's settings instead of failing."""
    settings = conversation.settings if settings is None else settings
    try:
        check_conversation_settings(settings)
    except InvalidSettings as error:
        notice = (
            f"This conversation's own settings are invalid ({error}); the app's "
            "[compaction] settings (config.toml) are used instead."
        )
        return config.compaction, notice
    overrides = settings.get("compaction") or {}
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
        self.fold_status: Callable[[str, int | None], BackgroundFoldOut | None] = (
            lambda _id, _version=None: None
        )
        """The chat service's background folds, as `ConversationContext.background_fold`."""
        self.server_count: Callable[
            [ResolvedModel, str, list[Message], list[ToolSpec]], int | None
        ] = lambda _model, _system, _view, _tools: None
        """The prompt's tokens as the model's own server counts them (a local server
        with a tokenize endpoint: `chat.local_servers`), or None where it cannot."""

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

    def _cached_counter(self, resolved: ResolvedModel, wire: Wire) -> CachedCounter:
        # Counts are exact only against OpenAI itself; a compatible server's model has a
        # tokenizer of its own whatever its name.
        exact_allowed = resolved.provider_kind == "openai"
        key = (resolved.model, wire, exact_allowed, resolved.vision)
        if key not in self._counters:
            raw = counter_for(
                resolved.model, wire, exact_allowed=exact_allowed, images=resolved.vision
            )
            name = f"{resolved.model}|{wire}|{int(exact_allowed)}|{int(resolved.vision)}"
            self._counters.setdefault(key, CachedCounter(raw, name))
        return self._counters[key]

    def counter(self, resolved: ResolvedModel, wire: Wire) -> tuple[TokenCounter, float]:
        cached = self._cached_counter(resolved, wire)
        if cached.exact:
            return cached, 1.0
        # A model without samples of its own (just switched to) counts with its provider's
        # learned ratio: the fold before its first send then sees what will be sent.
        ratio = self.store.counting_calibration(resolved.provider_name, resolved.model).ratio
        return ScaledCounter(cached, ratio), ratio

    def load(
        self,
        config: AppConfig,
        conversation_id: str,
        *,
        wire: Wire,
        with_messages: bool = True,
        model_override: str | None = None,
    ) -> ConversationContext:
        """The model's view, counted. Without messages (the meter) nothing of the view
        is decoded: the count is the framing, the head and a sum of stored counts, and
        the context's `records` and `view` are empty. `model_override` counts the view
        for another model than the conversation's (what switching to it would show):
        the same computation the meter and the gate then make for it."""
        conversation = self.store.get_conversation(conversation_id)
        project = conversation_project(self.store, conversation)
        name = model_override or model_name(config, conversation, project)
        model = resolve_model(config, name, listing=self.listing)
        budget = Budget(
            context_window=model.context_window,
            max_output_tokens=model.output_reserve,
            input_limit=model.input_limit,
            working_budget=model.working_budget,
        )
        cached = self._cached_counter(model, wire)
        records: list[MessageRecord] = []
        if with_messages:
            state, records, stored = self.store.load_window_counted(conversation_id, cached.key)
            entries = [
                TailEntry(r.id, r.message.role, tokens, shape, media, r)
                for r, (tokens, shape, media) in zip(records, stored, strict=True)
            ]
        else:
            state, rows = self.store.view_count_rows(conversation_id, cached.key)
            entries = [TailEntry(*row) for row in rows]
        start = state.api_start_index if state else 0
        pins = tuple(Pin(pin.seq, pin.message) for pin in self.store.list_pins(conversation_id))
        head = build_api_messages(HistoryWindow(start, ()), state, pins)
        view: list[Message] = []
        if with_messages:
            window = HistoryWindow(start, tuple(record.message for record in records))
            view = build_api_messages(window, state, pins)
        tail = tail_counts(entries, cached, self.store.messages_by_id)
        self.store.save_counts(cached.key, tail.new)
        own_system = conversation.system_prompt or DEFAULT_SYSTEM_PROMPT
        shared = project_context(self.store, project) if project else None
        system = compose_system(own_system, shared)
        counter, ratio = self.counter(model, wire)
        tools = offered_tools_for(self.tools(), state is not None, budget, counter)
        framing = counter.count_request(system, [], [])
        project_tokens = framing - counter.count_request(own_system, [], []) if shared else 0
        # Tools are counted where the model reads them: a local server whose chat
        # template does not render them never puts them in the prompt.
        counted_tools = tools if model.counts_tools else []
        tool_tokens = counter.count_request(system, [], counted_tools) - framing
        base = counter.count_request(system, [], counted_tools)
        counts = [cached.count_head(message) for message in head] + tail.counts
        media = [cached.media_tokens(message) for message in head] + tail.media
        if isinstance(counter, ScaledCounter):
            # As `ScaledCounter.count_message`: the ratio scales the text, not the images
            # and PDF page images, which the provider bills by formula.
            counts = [counter.scale_message(c, m) for c, m in zip(counts, media, strict=True)]
        tokens = estimate = base + sum(counts)
        anchor_tokens, added, added_media = None, 0, 0
        if not counter.exact:
            anchor = self._anchor(conversation_id, model.model, system)
            version = state.version if state else 0
            tokens = tokens_now(anchor, version, counts, base)
            if anchor and anchor.state_version == version and anchor.view_length <= len(counts):
                anchor_tokens, added = anchor.tokens, sum(counts[anchor.view_length :])
                added_media = sum(media[anchor.view_length :])
            counted = (
                self.server_count(model, system, view, counted_tools) if with_messages else None
            )
            if counted is not None:
                tokens = counted  # the server's own count of the request: exact
        summary = sum(counts[: len(head)])
        breakdown = split_tokens(
            tokens,
            estimate,
            system=framing - project_tokens,
            project=project_tokens,
            tools=tool_tokens,
            summary=summary,
        )
        settings, settings_notice = conversation_settings(
            config, conversation, settings_with_project(conversation.settings, project)
        )
        return ConversationContext(
            conversation=conversation,
            model=model,
            budget=budget,
            settings=settings,
            settings_notice=settings_notice,
            system=system,
            tools=tools,
            tools_after_fold=offered_tools_for(self.tools(), True, budget, counter),
            state=state,
            records=records,
            messages_in_view=len(entries),
            counter=counter,
            ratio=ratio,
            view=view,
            tokens=tokens,
            estimate=estimate,
            anchor_tokens=anchor_tokens,
            added_estimate=added,
            media=sum(media),
            added_media=added_media,
            breakdown=breakdown,
            usage=self.usage(conversation_id, model),
            background_fold=self.fold_status(conversation_id, state.version if state else 0),
            pins=pins,
            project=(
                project_in_view(project.id, shared, project_tokens, budget)
                if project and shared
                else None
            ),
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


def project_in_view(
    project_id: str, shared: ProjectContext, tokens: int, budget: Budget
) -> ProjectInViewOut:
    """What Model view shows as the project's part of the system prompt."""
    return ProjectInViewOut(
        id=project_id,
        name=shared.name,
        instructions=shared.instructions,
        files=[file.name for file in shared.files],
        notes=[note.title for note in shared.notes],
        tokens=tokens,
        cap_tokens=project_cap(budget.input_budget),
    )


def split_tokens(
    tokens: int, estimate: int, *, system: int, project: int, tools: int, summary: int
) -> ContextBreakdown:
    """The meter's parts of `tokens`: the fixed parts as estimated, the messages the rest.

    When the provider counted less than Foldline's estimate of the fixed parts alone (a
    server that does not render the tools, a calibration far off), the rest would be 0
    and the meter would read "Messages 0" beside messages in view; then the messages show
    their own estimate. The fixed parts stay as estimated, so the project's share matches
    the project's own count shown beside it."""
    fixed = system + project + tools + summary
    messages = tokens - fixed
    if messages <= 0 and estimate > fixed:
        messages = estimate - fixed
    return ContextBreakdown(
        system=system, tools=tools, summary=summary, messages=max(messages, 0), project=project
    )
