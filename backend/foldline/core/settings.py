"""Compaction settings (the `[compaction]` table of config.toml) as a pure value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from foldline.core.json_values import json_problem
from foldline.core.reasoning import Effort

MAX_TOKENS = 2**31 - 1
"""The largest token count any knob, limit or record may hold: far above any model's
window, and small enough that sums of many never leave SQLite's signed 64-bit range."""


class CompactionSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    auto: bool = True
    """Fold automatically when the view crosses `threshold`."""
    prune: bool = True
    """Replace old tool outputs in the view by placeholders before folding."""
    threshold: float = Field(default=0.80, gt=0, le=1)
    """Soft threshold, a fraction of the input budget: fold between turns above it."""
    prepare_threshold: float = Field(default=0.75, gt=0, le=1)
    """When a turn ends with the view above this fraction, the next fold's summary is
    written in the background while the person reads, so the fold itself (at
    `threshold`) needs no model call in the person's path. At or above `threshold` it
    only prepares when a fold is due. Not earlier than needed: the tail that grows
    between the summary and the fold is cached again with the fold (0.70 cost 13% more
    billed input than 0.75 on a 16k window; `benchmarks/fold_cost_bench.py`); a
    conversation that grows faster than its summaries are written prepares earlier
    anyway (`core.policy.prepare_from`)."""
    hard_threshold: float = Field(default=0.95, gt=0, le=1)
    """Above this fraction a fold happens even in the middle of a tool loop, and the
    emergency digest is used if no summary can be had."""
    target: float = Field(default=0.50, gt=0, lt=1)
    """A fold brings the view down to this fraction, so it does not fold again next turn."""
    keep_recent_tokens: int = Field(default=8000, ge=0, le=MAX_TOKENS)
    """Tokens of the most recent messages kept verbatim after a fold."""
    keep_recent_share: float = Field(default=0.10, ge=0, le=1)
    """An automatic fold keeps at most this share of the input budget as its recent
    tail (and at most `keep_recent_tokens`; the last user turn always stays). Everything
    a fold keeps is written to the prompt cache again by the next request, and on a
    small window folds come every few turns: there a long tail costs more than the
    rest of the fold. A fold the person asks for keeps what they ask."""
    strategy: Literal["structured", "narrative"] = "structured"
    person_words_share: float = Field(default=0.10, ge=0, le=0.5)
    """After a fold, the person's own messages stay in the model's view word for word,
    after the summary, within this share of the input budget (at most 20,000 tokens);
    when they outgrow it the oldest are condensed to their sentences that carry
    decisions, constraints, names and facts. 0 keeps only the summary."""
    tool_result_token_cap: int = Field(default=4000, ge=64, le=MAX_TOKENS)
    """Tool outputs larger than this are truncated at ingest (the full output is stored)."""
    model: str = ""
    """Optional cheaper model for summaries; empty means the conversation's model."""
    prune_protect_tokens: int = Field(default=40_000, ge=0, le=MAX_TOKENS)
    """The newest tool output tokens never pruned."""
    prune_minimum_tokens: int = Field(default=20_000, ge=0, le=MAX_TOKENS)
    """Prune only when at least this many tokens would be reclaimed (keeps the cache warm)."""
    auto_title: bool = True
    """After a conversation's first exchange, the summarizer names it with a short title
    (until then, and if it fails, the title is the first message)."""
    protected_tools: tuple[str, ...] = ("compactContext", "getContextStats")
    """Tools whose results are never pruned."""
    recall_token_cap: int = Field(default=2000, ge=256, le=MAX_TOKENS)
    """The most tokens one result of the recall tools (`searchHistory`, `readHistory`,
    `searchConversations`) may take; it is also held to a quarter of the input budget
    and half of what the request has left, so a result never overflows it."""
    recall_conversations: Literal["off", "project", "all"] = "project"
    """What `searchConversations` may read besides this conversation: `project` the other
    conversations of its project (none outside a project), `all` every conversation
    (still only its project's for a conversation in one), `off` none."""
    reasoning_effort: Effort = "off"
    """How much the model reasons while it writes a summary or a title: `off` by
    default, since a summary is a rewrite, not a problem to think through, and reasoning
    would make every fold slower and dearer."""


class GenerationSettings(BaseModel):
    """A conversation's `settings.generation`: how its chat calls sample and how long an
    answer may be, over the model's `[models."x"]` settings."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )

    temperature: float | None = Field(default=None, ge=0, le=2)
    """Overrides the model's `temperature` for this conversation."""
    max_output_tokens: int | None = Field(default=None, ge=1)
    """The most one answer may write in this conversation; never more than the model's
    output reserve (what its window keeps free for an answer)."""


def generation_from_settings(settings: object) -> GenerationSettings | None:
    """A conversation's `settings.generation`, or None when it sets none or holds one an
    older version stored that no longer reads (the model's settings apply then)."""
    if not isinstance(settings, dict) or not isinstance(settings.get("generation"), dict):
        return None
    try:
        return GenerationSettings.model_validate(settings["generation"])
    except ValidationError:
        return None


class ReasoningSettings(BaseModel):
    """A conversation's `settings.reasoning`: the effort its chat calls run at."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    effort: Effort
    """Overrides the model's `reasoning_effort` for this conversation. A change is a
    prompt-cache break on Anthropic (the thinking settings are part of what is cached),
    so it is best made between topics rather than every turn."""


MAX_SETTINGS_CHARS = 65_536
"""The most characters of strings and keys a conversation's settings may hold."""


class InvalidSettings(ValueError):
    """A conversation's settings that `CompactionSettings` refuses; the message names the knob."""


def first_settings_error(error: ValidationError, section: str) -> str:
    """`section.knob: reason` for the first problem pydantic found."""
    item = error.errors()[0]
    where = ".".join(str(step) for step in item["loc"])
    reason = "unknown setting" if item["type"] == "extra_forbidden" else item["msg"]
    return f"{section}.{where}: {reason}" if where else f"{section}: {reason}"


def check_conversation_settings(settings: Mapping[str, Any]) -> None:
    """Raise `InvalidSettings` unless `settings["compaction"]` (if present) holds only
    knobs `CompactionSettings` accepts, with the names, types and ranges of config.toml's
    `[compaction]`, and `settings["reasoning"]` (if present) is `{"effort": ...}` with one
    of the efforts. Other keys of `settings` are the client's own and are kept as given,
    once the whole value is one that can be stored and read back (`json_problem`)."""
    problem = json_problem(dict(settings), max_chars=MAX_SETTINGS_CHARS)
    if problem:
        raise InvalidSettings(f"settings: {problem}")
    generation = settings.get("generation")
    if generation is not None:
        if not isinstance(generation, Mapping):
            raise InvalidSettings(
                'settings.generation: expected an object like {"temperature": 0.7}'
            )
        try:
            GenerationSettings.model_validate(dict(generation))
        except ValidationError as error:
            raise InvalidSettings(first_settings_error(error, "settings.generation")) from None
    reasoning = settings.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, Mapping):
            raise InvalidSettings('settings.reasoning: expected an object like {"effort": "low"}')
        try:
            ReasoningSettings.model_validate(dict(reasoning))
        except ValidationError as error:
            raise InvalidSettings(first_settings_error(error, "settings.reasoning")) from None
    overrides = settings.get("compaction")
    if overrides is None:
        return
    if not isinstance(overrides, Mapping):
        raise InvalidSettings("settings.compaction: expected an object of [compaction] knobs")
    try:
        CompactionSettings.model_validate(dict(overrides))
    except ValidationError as error:
        raise InvalidSettings(first_settings_error(error, "settings.compaction")) from None
