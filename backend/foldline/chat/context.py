"""The model's view of one conversation, loaded from the store and counted.

Loading reads only the current fold and the rows from `apiStartIndex` on, so its cost
does not grow with the history. Everything the gate, the request and the
`/context` route need is gathered here once per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from foldline.chat.counting import CachedCounter, ScaledCounter
from foldline.chat.serialize import message_parts_to_json, state_to_json
from foldline.chat.tools import CONTEXT_TOOLS, FILE_TOOLS
from foldline.config import AppConfig, ResolvedModel, resolve_model
from foldline.core.budget import Budget
from foldline.core.messages import HistoryWindow, Message, ToolSpec
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
from foldline.core.view import build_api_messages
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
    counter: ScaledCounter
    view: list[Message]
    tokens: int
    breakdown: dict[str, int]

    @property
    def window(self) -> HistoryWindow:
        start = self.state.api_start_index if self.state else 0
        return HistoryWindow(start, [record.message for record in self.records])

    @property
    def start_index(self) -> int:
        return self.state.api_start_index if self.state else 0

    @property
    def history_length(self) -> int:
        return self.start_index + len(self.records)

    def stats(self) -> dict[str, Any]:
        """The numbers the meter, `getContextStats` and `context.stats` share."""
        budget = self.budget.input_budget
        return {
            "tokens": self.tokens,
            "inputBudget": budget,
            "contextWindow": self.budget.context_window,
            "fraction": round(self.budget.fraction(self.tokens), 4),
            "exact": self.counter.exact,
            "breakdown": self.breakdown,
            "thresholds": {"soft": self.settings.threshold, "hard": self.settings.hard_threshold},
            "model": self.model.model,
            "modelKnown": self.model.known,
            "version": self.state.version if self.state else 0,
            "messagesInView": len(self.records),
            "messagesInHistory": self.history_length,
        }

    def to_json(self) -> dict[str, Any]:
        """The body of `GET /api/conversations/{id}/context`."""
        body = self.stats()
        body["compaction"] = state_to_json(self.state)
        body["system"] = self.system
        body["tools"] = [tool.name for tool in self.tools]
        body["apiMessages"] = [
            {"role": message.role, "parts": message_parts_to_json(message)} for message in self.view
        ]
        return body


def conversation_settings(
    config: AppConfig, conversation: ConversationRecord
) -> CompactionSettings:
    """The app's compaction settings with the conversation's own overrides on top."""
    overrides = conversation.settings.get("compaction") or {}
    if not overrides:
        return config.compaction
    merged = config.compaction.model_dump() | overrides
    return CompactionSettings.model_validate(merged)


class ContextLoader:
    """Builds `ConversationContext`s, keeping one cached counter per model."""

    def __init__(self, store: Store, *, file_tools: bool = False) -> None:
        self.store = store
        self.file_tools = file_tools
        self._counters: dict[tuple[str, str], CachedCounter] = {}

    def tools(self) -> list[ToolSpec]:
        return [*CONTEXT_TOOLS, *(FILE_TOOLS if self.file_tools else ())]

    def counter(self, provider: str, model: str, wire: str) -> ScaledCounter:
        key = (model, wire)
        if key not in self._counters:
            self._counters[key] = CachedCounter(counter_for(model, wire))  # type: ignore[arg-type]
        ratio = self.store.get_calibration(provider, model).ratio
        return ScaledCounter(self._counters[key], ratio)

    def load(self, config: AppConfig, conversation_id: str, *, wire: str) -> ConversationContext:
        conversation = self.store.get_conversation(conversation_id)
        model_name = conversation.model or config.default_model or ""
        model = resolve_model(config, model_name)
        budget = Budget(
            context_window=model.context_window,
            max_output_tokens=model.max_output_tokens,
            input_limit=model.input_limit,
        )
        state, records = self.store.load_window(conversation_id)
        start = state.api_start_index if state else 0
        window = HistoryWindow(start, [record.message for record in records])
        view = build_api_messages(window, state)
        system = conversation.system_prompt or DEFAULT_SYSTEM_PROMPT
        tools = self.tools()
        counter = self.counter(model.provider_name, model.model, wire)
        framing = counter.count_request(system, [], [])
        tool_tokens = counter.count_request(system, [], tools) - framing
        summary = counter.count_message(view[0]) if state and view else 0
        tokens = counter.count_request(system, view, tools)
        breakdown = {
            "system": framing,
            "tools": tool_tokens,
            "summary": summary,
            "messages": tokens - framing - tool_tokens - summary,
        }
        return ConversationContext(
            conversation=conversation,
            model=model,
            budget=budget,
            settings=conversation_settings(config, conversation),
            system=system,
            tools=tools,
            state=state,
            records=records,
            counter=counter,
            view=view,
            tokens=tokens,
            breakdown=breakdown,
        )
