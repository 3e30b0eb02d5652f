"""API types of what the model sees: `GET …/context`, the meter's numbers (shared with the
`context.stats` event and the `getContextStats` tool) and the preview of a fold."""

from __future__ import annotations

from typing import Literal

from foldline.api.schemas import ApiModel, CompactionOut, UsageOut
from foldline.api.schemas_messages import PartOut


class ContextBreakdown(ApiModel):
    system: int
    tools: int
    summary: int
    messages: int
    project: int = 0
    """The project's instructions, files and notes (sent in the system prompt, never
    folded); 0 for a conversation in no project."""


class ProjectInViewOut(ApiModel):
    """A conversation's project as Model view shows it: its part of `system`."""

    id: str
    name: str
    instructions: str
    """Sent first, before the conversation's own system prompt."""
    files: list[str]
    """The names of the files sent after the system prompt, in order."""
    notes: list[str]
    """The titles of the pinned notes sent after the files."""
    tokens: int
    cap_tokens: int
    """A quarter of the input budget: above it, a turn is refused (422)."""


class Thresholds(ApiModel):
    soft: float
    hard: float


class ConversationUsageOut(ApiModel):
    """The meter's money: the conversation so far, its last turn, caching's saving."""

    total: UsageOut
    """Every call of the conversation (answers and summaries, dropped ones included)."""
    last_turn: UsageOut
    """The calls of the latest turn that made any."""
    priced: bool
    """False for a model without a known price: show tokens only."""
    currency: Literal["USD"] = "USD"


class BackgroundFoldOut(ApiModel):
    """A summary being written in the background for the next fold, or one ready."""

    status: Literal["preparing", "ready"]
    kind: Literal["fold", "resummary"]


class ContextStatsOut(ApiModel):
    """The numbers the meter, `getContextStats` and the `context.stats` event share.

    The field order is the order the model reads in `getContextStats`; changing it
    changes that tool's output.
    """

    tokens: int
    input_budget: int | None
    """Null when the model's window is unlimited (never folds automatically)."""
    context_window: int
    working_budget: int | None
    """The working budget when it, not the window, sets `inputBudget` (very large
    windows fold early for cost per turn and answer quality); null otherwise."""
    window_budget: int | None
    """The input tokens the window itself allows (window minus the output reserve)."""
    fraction: float
    exact: bool
    breakdown: ContextBreakdown
    thresholds: Thresholds
    model: str
    model_known: bool
    model_lifecycle: Literal["active", "deprecated", "retired"] | None
    """From the provider's model list, else the catalog; null when neither knows."""
    model_replacement: str | None
    """For a retired model: the current model the UI offers to switch to."""
    version: int
    """The current fold's version, 0 when nothing is folded."""
    messages_in_view: int
    messages_in_history: int
    usage: ConversationUsageOut
    background_fold: BackgroundFoldOut | None


class ApiMessageOut(ApiModel):
    role: Literal["user", "assistant", "tool"]
    parts: list[PartOut]


class ContextOut(ContextStatsOut):
    """What the model sees now: the numbers of `ContextStatsOut` and the view itself."""

    compaction: CompactionOut | None
    system: str
    """The system prompt the model gets."""
    tools: list[str]
    """The names of the tools offered to the model."""
    api_messages: list[ApiMessageOut]
    """Empty when asked for with `?messages=false` (see `api_messages_included`)."""
    api_messages_included: bool
    """False when `apiMessages` was left out on purpose (`?messages=false`), so an empty
    list is never mistaken for an empty view."""
    settings_notice: str | None = None
    """Set when the conversation's stored settings are invalid (saved by an older
    version): it then runs on the app's `[compaction]` settings, and this says why."""
    project: ProjectInViewOut | None = None
    """The conversation's project (null: none); `system` holds what it adds."""


class CompactionPreview(ApiModel):
    """What a fold started now would fold."""

    messages: int
    tokens: int
    from_index: int
    """The first message the fold would summarize (the current `apiStartIndex`)."""
    to_index: int | None
    """Where the kept messages would start; null when nothing can be folded."""
