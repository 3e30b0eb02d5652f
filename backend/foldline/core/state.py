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
    carried_details: tuple[str, ...] = ()
    """The person's details (numbers, paths, instructions...) this summary holds verbatim,
    oldest first: the next fold checks its summary against them again, so a detail
    carried once stays carried however many folds stack."""
    details_total: int = 0
    """How many of the person's details this fold had to carry (earlier folds' carried
    details plus those in the messages it folded)."""
    details_kept: int = 0
    """Of those, how many the summary (or digest) contained by itself."""
    details_appended: int = 0
    """How many were appended verbatim under "From the person, verbatim"; the rest
    (`details_total - details_kept - details_appended`) did not fit the cap."""
