"""The fold's state: which messages the model sees and the summary that stands for the rest."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Strategy = Literal["structured", "narrative", "free-form", "emergency"]
"""`free-form`: a model summary kept although it ignored the requested format."""
Trigger = Literal["auto", "manual", "tool", "overflow", "handoff"]


class SummarizedRange(BaseModel):
    """Display indices covered by a fold: `from_index` inclusive, `to_index` exclusive."""

    model_config = ConfigDict(frozen=True)

    from_index: int
    to_index: int
    message_count: int


class SaidWords(BaseModel):
    """One of the person's messages as the model keeps seeing it after a fold."""

    model_config = ConfigDict(frozen=True)

    index: int
    """The message's display index, for order (a hand-off keeps the old conversation's)."""
    text: str
    """The message's own words: verbatim, or only its sentences that carry decisions,
    constraints, names and facts when `condensed`."""
    condensed: bool = False


class CompactionState(BaseModel):
    """One version of the fold.

    The model's view is `[summary_message] + display[api_start_index:]`. Every version is
    kept by the store; undo makes an earlier one current again. `compacted_at` is an ISO
    timestamp supplied by the caller (the engine reads no clock).
    """

    model_config = ConfigDict(frozen=True)

    version: int
    compacted_at: str
    summary_message: str
    api_start_index: int
    summarized_range: SummarizedRange
    strategy: Strategy
    trigger: Trigger
    tokens_before: int
    tokens_after: int
    model: str | None = None
    degraded: bool = False
    person_words: tuple[SaidWords, ...] = ()
    """The person's own messages from every folded part, oldest first, shown to the model
    after the summary: what one fold kept, the next keeps (condensed only when they
    outgrow their budget)."""
    carried_details: tuple[str, ...] = ()
    """The person's details (sentences that state a decision, a constraint, a person or a
    fact) the view still holds verbatim, in the summary or in the person's words, oldest
    first: the next fold checks them again, so a detail carried once stays counted
    however many folds stack."""
    details_total: int = 0
    """How many of the person's details this fold had to carry (earlier folds' carried
    details plus those in the messages it folded)."""
    details_kept: int = 0
    """Of those, how many the summary (or digest) contained by itself."""
    details_appended: int = 0
    """How many more the person's own words after the summary hold; the rest
    (`details_total - details_kept - details_appended`) were condensed away for space."""
    summary_input_tokens: int = 0
    """What the summarizer's input cost for this fold (every call, counted), in input
    tokens at the plain price: a request on its own counts whole; one asked after the
    conversation's view counts that view at the cache-read price (a tenth) and its last
    message whole. 0 for the digest, and for folds stored before it was recorded."""
    saving_turns: int = 0
    """The turns the view takes to grow back to the threshold after this fold, at the
    pace the folded part grew (`fold_cost.turns_until_next_fold`): what the fold's
    saving is counted over. 0 when unknown."""
