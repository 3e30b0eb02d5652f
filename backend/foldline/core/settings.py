"""Compaction settings (the `[compaction]` table of config.toml) as a pure value."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CompactionSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    auto: bool = True
    """Fold automatically when the view crosses `threshold`."""
    prune: bool = True
    """Replace old tool outputs in the view by placeholders before folding."""
    threshold: float = Field(0.80, gt=0, le=1)
    """Soft threshold, a fraction of the input budget: fold between turns above it."""
    prepare_threshold: float = Field(0.70, gt=0, le=1)
    """When a turn ends with the view above this fraction, the next fold's summary is
    written in the background while the person reads, so the fold itself (at
    `threshold`) needs no model call in the person's path. At or above `threshold` it
    only prepares when a fold is due."""
    hard_threshold: float = Field(0.95, gt=0, le=1)
    """Above this fraction a fold happens even in the middle of a tool loop, and the
    emergency digest is used if no summary can be had."""
    target: float = Field(0.50, gt=0, lt=1)
    """A fold brings the view down to this fraction, so it does not fold again next turn."""
    keep_recent_tokens: int = Field(8000, ge=0)
    """Tokens of the most recent messages kept verbatim after a fold."""
    strategy: Literal["structured", "narrative"] = "structured"
    tool_result_token_cap: int = Field(4000, ge=64)
    """Tool outputs larger than this are truncated at ingest (the full output is stored)."""
    model: str = ""
    """Optional cheaper model for summaries; empty means the conversation's model."""
    prune_protect_tokens: int = Field(40_000, ge=0)
    """The newest tool output tokens never pruned."""
    prune_minimum_tokens: int = Field(20_000, ge=0)
    """Prune only when at least this many tokens would be reclaimed (keeps the cache warm)."""
    protected_tools: tuple[str, ...] = ("compactContext", "getContextStats")
    """Tools whose results are never pruned."""
