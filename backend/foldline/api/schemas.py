"""The HTTP API's request and response bodies, in camelCase.

These are the public contract of `docs/api.md`, kept separate from the engine's values
(`foldline.core`) and the store's records so that either can change shape without the
API changing by accident. Conversion from records lives next to the schemas
(`*_from_record` functions) so every route produces exactly the same shapes.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)
from pydantic.alias_generators import to_camel

from foldline.core.fold_cost import fold_cost
from foldline.core.settings import MAX_TOKENS, check_conversation_settings
from foldline.core.state import CompactionState

MAX_TITLE_CHARS = 500
MAX_SYSTEM_PROMPT_CHARS = 200_000
MAX_CONTENT_CHARS = 500_000


class ApiModel(BaseModel):
    """Base of every API body: camelCase on the wire, snake_case in Python.

    `populate_by_name` lets the routes build responses with Python names;
    `serialize_by_alias` makes FastAPI and `model_dump()` emit the camelCase names. A
    field's docstring is its description (in the UI's typedefs, `frontend/js/types.js`).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        use_attribute_docstrings=True,
    )


class RequestModel(ApiModel):
    """Base of request bodies: unknown fields are refused, so a typo is a 422, not a no-op."""

    model_config = ConfigDict(extra="forbid")


# --- errors ------------------------------------------------------------------------


class ErrorDetail(ApiModel):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorBody(ApiModel):
    """Every 4xx/5xx answer: `{"error": {"code", "message"}}`."""

    error: ErrorDetail


# --- health ------------------------------------------------------------------------


class Health(ApiModel):
    status: Literal["ok"] = "ok"
    version: str


# --- compaction states -------------------------------------------------------------


class SummarizedRangeOut(ApiModel):
    from_index: int
    to_index: int
    message_count: int


class FoldCostOut(ApiModel):
    """What a fold cost in billed input and what it saves over the turns after it
    (`core.fold_cost.fold_cost`); `cost` and `saving` are input-token equivalents at
    Anthropic's 5-minute cache prices (writes 1.25, reads 0.1)."""

    summary_input_tokens: int
    """What the summarizer's input cost, in plain-input tokens (a view it read back from
    the prompt cache counts a tenth)."""
    rewritten_tokens: int
    """The view after the fold, written to the prompt cache again by the next request."""
    saved_per_turn: int
    """How much smaller each request is after the fold."""
    turns: int
    """The turns until the next fold, at the pace the folded part grew."""
    cost: float
    saving: float

    @classmethod
    def of(cls, state: CompactionState) -> FoldCostOut | None:
        """The fold's cost and saving; None when they were not recorded (a digest, a
        fold stored before they were)."""
        if state.summary_input_tokens <= 0 or state.saving_turns <= 0:
            return None
        cost = fold_cost(
            tokens_before=state.tokens_before,
            tokens_after=state.tokens_after,
            summary_input_tokens=state.summary_input_tokens,
            turns=state.saving_turns,
        )
        return cls.model_validate(dataclasses.asdict(cost))


class CompactionOut(ApiModel):
    """One fold version (the engine's `CompactionState`)."""

    version: int
    compacted_at: str
    summary_message: str
    api_start_index: int
    summarized_range: SummarizedRangeOut
    strategy: str
    trigger: str
    tokens_before: int
    tokens_after: int
    model: str | None = None
    degraded: bool = False
    carried_details: list[str] = []
    """The person's details this summary holds verbatim (numbers, paths, instructions...)."""
    details_total: int = 0
    details_kept: int = 0
    """How many of `details_total` the summary contained by itself ..."""
    details_appended: int = 0
    """... and how many more the person's own words kept after the summary hold (folds
    made before those words were kept: appended under "From the person, verbatim")."""
    fold_cost: FoldCostOut | None = None
    """None for the digest and for folds stored before it was recorded."""

    @classmethod
    def from_state(cls, state: CompactionState) -> CompactionOut:
        return cls.model_validate(state.model_dump() | {"fold_cost": FoldCostOut.of(state)})


class UsageOut(ApiModel):
    """Tokens and dollars of some model calls (dollars null when the model has no price)."""

    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cost: float | None
    saved: float | None
    estimated_calls: int = 0
    """How many of the calls the provider reported no usage for (stopped, or their
    stream broke, before its end): their tokens were counted by Foldline, so the
    figures are estimates."""


class CompactionVersionOut(CompactionOut):
    usage: UsageOut | None = None
    """What this fold's summarizer calls used and cost; null for a fold without any
    (the emergency digest, a fold made before usage was stored)."""
    is_current: bool
    parent_version: int
    """The version that was current when this one was committed (0 = none): following
    it from the current version gives the stack of folds in effect, skipping versions
    that were undone and then replaced by another fold."""
    files: list[str] = []
    """The names of the files the person attached in the folded messages (on the active
    path), in order: the fold line lists them."""


class CompactionList(ApiModel):
    items: list[CompactionVersionOut]
    current_version: int
    """0 when no fold is current (never folded, or every fold undone)."""
    redo_version: int | None = None
    """An undone fold that Redo would make current again without a new summary (nothing
    was folded since and what it summarized is unchanged); null when there is none."""


class UndoResult(ApiModel):
    compaction: CompactionOut | None
    """The fold that is current after the undo, or null when none is left."""


# --- conversations -----------------------------------------------------------------


class SearchHitOut(ApiModel):
    """Where a search matched in a conversation's messages."""

    index: int
    """Display index (depth) of the newest matching message."""
    snippet: str
    """Its text around the first matching term."""
    message_id: str
    on_active_path: bool
    """False when the message is on another branch: `PUT …/active-leaf {messageId}`
    opens that branch."""
    match_count: int = 1
    """How many messages of the conversation match, every branch counted (the sidebar
    says "N more matches")."""


class FindResult(ApiModel):
    """`GET …/search`: every matching message of one conversation, in display order."""

    items: list[SearchHitOut]
    """At most 1000; each snippet shows every term found in its message."""


class PinOut(ApiModel):
    """A pinned message: it reaches the model verbatim in every request."""

    message_id: str
    index: int
    role: str
    pinned_at: str
    excerpt: str = ""
    """The start of the message's text (at most 120 characters, on one line), so a
    pin can be named when its message is not on the loaded page."""


class PinsOut(ApiModel):
    """The answer to pinning or unpinning: every pin of the conversation and their cost."""

    pins: list[PinOut]
    pinned_tokens: int
    """What all pins together take in a request when every one of them is folded."""
    cap_tokens: int
    """The most they may take (a share of the model's input budget)."""


class OriginOut(ApiModel):
    """The conversation this one was handed off from ("New conversation from here")."""

    conversation_id: str
    title: str
    message_id: str | None
    """The last message of the origin that the hand-off covered."""


class HandoffOut(ApiModel):
    """A conversation handed off from this one."""

    conversation_id: str
    title: str
    created_at: str


class ConversationOut(ApiModel):
    id: str
    title: str
    model: str | None
    provider: str | None = None
    """The configured provider that serves `model` (null: the one the configuration
    picks for it, by `[models."x"] provider` or the model's family)."""
    system_prompt: str
    settings: dict[str, Any]
    """Free-form on purpose: `compaction` holds this conversation's `[compaction]`
    overrides (checked against those knobs when saved); any other key is the client's
    own and is kept as given."""
    created_at: str
    updated_at: str
    message_count: int
    """Messages on the active path (what is shown); other versions are not counted."""
    has_other_versions: bool = False
    """Some message has other versions (an edit or a regeneration): the conversation
    holds more messages than `messageCount`, a version switch away."""
    compaction: CompactionOut | None = None
    """The current fold; filled by `GET /api/conversations/{id}`, null in lists."""
    search_hit: SearchHitOut | None = None
    """In a search (`?q=`): the newest matching message, null when only the title matched."""
    pins: list[PinOut] = []
    """The pinned messages in display order; filled by `GET /api/conversations/{id}`."""
    active_leaf_id: str | None = None
    """The last message of the active path (null: no message yet); the display history
    is the path from the first message to it."""
    origin: OriginOut | None = None
    """Where this conversation was handed off from; filled by `GET …/{id}` (null in lists)."""
    handoffs: list[HandoffOut] = []
    """The conversations handed off from this one, oldest first; filled by `GET …/{id}`."""
    project_id: str | None = None
    """The project the conversation belongs to (null: no project)."""
    notice: str | None = None
    """Set when part of the stored row could not be read back (it is then served as
    empty, e.g. `settings: {}`), saying what and how to repair it."""
    revision: int = 0
    """Filled by `GET …/{id}`: the revision of the conversation's newest change since the
    server started (0: none), as the watch stream (`GET …/watch`) numbers them; a page
    that drew this conversation compares it with the stream's to know it is current."""


class ConversationList(ApiModel):
    items: list[ConversationOut]
    total: int


class CancelResult(ApiModel):
    cancelled: bool
    """False when nothing was running."""


def _checked_settings(settings: dict[str, Any] | None) -> dict[str, Any] | None:
    # The same model as `[compaction]` in config.toml: a typo or an out-of-range knob is
    # a 422 naming it, never a stored value that breaks every later turn.
    if settings is not None:
        check_conversation_settings(settings)
    return settings


class ConversationCreate(RequestModel):
    title: Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS)] | None = None
    model: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    provider: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    """The configured provider that serves `model` when two offer it (422 when there is
    no such provider; only with `model`)."""
    system_prompt: Annotated[str, Field(max_length=MAX_SYSTEM_PROMPT_CHARS)] | None = None
    settings: dict[str, Any] | None = None
    project_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    """Create it in this project (404 when there is no such project)."""

    check_settings = field_validator("settings")(_checked_settings)


class ConversationPatch(RequestModel):
    """Fields left out (or null) are unchanged, except `projectId`, where null means
    "no project"."""

    title: Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS)] | None = None
    model: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    provider: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    """With `model`: the configured provider that serves it (422 when there is no such
    provider). A `model` without it lets the configuration pick the provider again."""
    system_prompt: Annotated[str, Field(max_length=MAX_SYSTEM_PROMPT_CHARS)] | None = None
    settings: dict[str, Any] | None = None
    project_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    """Move the conversation into this project; null moves it to "no project". Left
    out: unchanged. Its messages, folds and pins are untouched."""

    check_settings = field_validator("settings")(_checked_settings)


class CompactRequest(RequestModel):
    instructions: Annotated[str, Field(max_length=20_000)] | None = None
    keep_recent_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    """Keep the recent messages holding this many tokens verbatim. Left out: only the
    last exchange is kept (everything before it folds)."""


class HandoffRequest(RequestModel):
    """`POST …/handoff`: a new conversation that continues this one from a message."""

    message_id: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    """The last message the new conversation continues from (left out: the last one)."""
    instructions: Annotated[str, Field(max_length=20_000)] | None = None
    """What the summary should keep or stress, as for a manual fold."""
    keep_last: Annotated[int, Field(ge=0, le=1000)] = 0
    """Copy this many messages before the point verbatim into the new conversation."""
