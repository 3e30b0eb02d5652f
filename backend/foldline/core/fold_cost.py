"""What a fold costs in billed input, and what it saves over the turns after it.

A fold is paid for twice. The summarizer reads the folded messages (and the previous
summary): when it is the conversation's own model, after the conversation's own view,
which the provider reads back from the prompt cache at a tenth of the price, so only the
request's last message (what to summarize, and how) is new input; otherwise as a one-off
prompt of plain input, never cached. `summary_input_tokens` is that input's cost in
plain-input tokens, however it was asked. Then the first request after
the fold sends a view whose bytes differ from the cached prefix from the summary on, so
the whole folded view (summary, the person's words, pins, the kept tail) is written to
the prompt cache again instead of being read from it. What it buys: every later request
until the next fold is smaller by what the fold freed, and the room it freed is what lets
the conversation go on at all.

Prices are relative to plain input: Anthropic writes the 5-minute cache at 1.25 and
reads it at 0.1; OpenAI caches automatically, writes at 1 and reads at 0.1. Every number
here is in tokens or in input-token equivalents (tokens × those prices), so the UI can
say it without knowing a model's dollar prices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from foldline.core.state import CompactionState

if TYPE_CHECKING:
    from foldline.core.fold_inputs import FoldInputs
    from foldline.core.messages import Message
    from foldline.core.planning import FoldPlanner

ANTHROPIC_WRITE = 1.25
"""Anthropic's price for writing the 5-minute prompt cache, relative to plain input."""
ONE_HOUR_WRITE = 2.0
"""Anthropic's price for writing the 1-hour prompt cache (`"ttl": "1h"`)."""
OPENAI_WRITE = 1.0
"""OpenAI's automatic cache has no write premium: an uncached prefix is plain input."""
CACHE_READ = 0.1
"""Both providers' price for reading a cached prefix, relative to plain input."""

MAX_SAVING_TURNS = 1_000
"""The turns a fold's saving is counted over, at most (a view that barely grows)."""


@dataclass(frozen=True)
class FoldCost:
    """A fold's cost and saving, in tokens and in input-token equivalents."""

    summary_input_tokens: int
    """What the summarizer's input cost (every call of the fold), in plain-input tokens:
    a view read back from the prompt cache counts a tenth."""
    rewritten_tokens: int
    """The view after the fold, written to the prompt cache again by the next request."""
    saved_per_turn: int
    """How much smaller each request is after the fold than before it."""
    turns: int
    """The turns until the next fold, at the pace the folded part grew."""
    cost: float
    """The fold's extra billed input: the summarizer's input, plus the rewrite's
    premium over reading the same tokens from the cache."""
    saving: float
    """The billed input the smaller requests save over `turns` (read at the cache price)."""


def turns_until_next_fold(tokens_after: int, threshold_tokens: int, growth_per_turn: float) -> int:
    """How many turns a view of `tokens_after` takes to grow back to the threshold, at
    least one (the fold was needed for the next request)."""
    if growth_per_turn <= 0:
        return MAX_SAVING_TURNS
    room = max(threshold_tokens - tokens_after, 0)
    return max(1, min(MAX_SAVING_TURNS, math.ceil(room / growth_per_turn)))


def fold_cost(
    *,
    tokens_before: int,
    tokens_after: int,
    summary_input_tokens: int,
    turns: int,
    write_price: float = ANTHROPIC_WRITE,
    read_price: float = CACHE_READ,
) -> FoldCost:
    """The cost and saving of a fold from `tokens_before` to `tokens_after`.

    Without the fold, the next request would have read the whole previous view from the
    cache; with it, the summarizer's input is paid (`summary_input_tokens`, already at
    its prices) and the smaller view is
    written once (`write_price` instead of `read_price`). Each of the next `turns`
    requests then reads `tokens_before - tokens_after` fewer cached tokens."""
    saved = max(tokens_before - tokens_after, 0)
    cost = summary_input_tokens + tokens_after * (write_price - read_price)
    return FoldCost(
        summary_input_tokens=summary_input_tokens,
        rewritten_tokens=tokens_after,
        saved_per_turn=saved,
        turns=turns,
        cost=cost,
        saving=saved * read_price * turns,
    )


def growth_per_turn(folded_tokens: int, folded_turns: int) -> float:
    """The view's growth per turn as the folded part shows it: its tokens over the
    person's messages in it (0 when it holds none)."""
    return folded_tokens / folded_turns if folded_turns > 0 else 0.0


def with_fold_cost(
    state: CompactionState,
    summary_input_tokens: int,
    planner: FoldPlanner,
    inputs: FoldInputs,
    folded: Sequence[Message],
    split: int,
) -> CompactionState:
    """`state` with what its summarizer read and the turns its saving lasts: until the
    view, growing as the folded part grew per turn of the person, is back at the
    threshold."""
    turns = 0
    input_budget = inputs.budget.input_budget
    if input_budget is not None:
        folded_tokens = planner.approx_tail_tokens(planner.start) - planner.approx_tail_tokens(
            split
        )
        growth = growth_per_turn(folded_tokens, sum(m.role == "user" for m in folded))
        threshold = int(inputs.settings.threshold * input_budget)
        turns = turns_until_next_fold(state.tokens_after, threshold, growth) if growth else 0
    return state.model_copy(
        update={"summary_input_tokens": summary_input_tokens, "saving_turns": turns}
    )
