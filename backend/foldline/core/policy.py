"""The one decision function: before every model call, what to do about the context.

`decide` is called before each model call and after each batch of tool results. It
chooses the cheapest action that keeps the next request within budget:

1. under the target (the prune threshold): nothing;
2. from the target up, prune old tool outputs when that brings the view down to the
   *prune ceiling*, the size under which a prune is cheaper than the fold it puts off
   (no model call; truncation of oversize results already happened at ingest);
3. fold with a model summary, down to the target, between turns above the soft
   threshold, and even in the middle of a tool loop above the hard threshold;
4. an emergency fold (extractive digest, no model call) when folds keep failing to free
   room (the circuit breaker) and the view is at the hard threshold or over budget.

Why a ceiling and not "whenever pruning gets under the threshold": a prune leaves the
conversation's text in place, so a view pruned to just under the threshold is back at
it a few calls later and hovers there, every call paying for ~80% of the window (and a
cache break at each prune). A fold drops the view to its floor (the kept tail and the
summary). Over a fold cycle the mean request is about (start + threshold) / 2, and a
fold also pays for its summarizer input (~ the view) once per cycle. Pruning to `p`
instead of folding is cheaper when `p - floor < 2 * growth * threshold / (threshold -
floor)`, `growth` being what one model call adds to the view. On a large window
(200k: floor ~16k, threshold ~154k) that is only a prune to within ~5k of the floor,
so the policy folds; on a small one (32k: floor ~11k, threshold ~23k) folds come every
few calls and a prune to ~18k pays, so it prunes, early (from the target) and in
batches. Measured in `benchmarks/policy_sim.py` (docs/benchmarks.md).

A provider context-overflow error, a manual request and the model's own
`compactContext` call force a fold with their own trigger. Reasons are full sentences:
the UI shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from foldline.core.compaction import summary_output_tokens
from foldline.core.pruning import minimum_tokens
from foldline.core.settings import CompactionSettings
from foldline.core.state import Trigger

if TYPE_CHECKING:
    from foldline.core.budget import Budget

BREAKER_LIMIT = 3
"""Failed folds in a row after which automatic folding stops."""

MIN_FREED_SHARE = 0.10
"""A fold that frees less than this share of the tokens it started from has failed."""

GROWTH_CAP_SHARE = 0.5
"""What one model call adds to the view, as a share of `tool_result_token_cap`: a call
brings a tool round of one to three outputs, most of them far under the cap. The prune
ceiling grows with it; 0.5 measured best at 32k in the policy simulation (0.35 costs
2.4% more input tokens there, 0.65 0.2% more; at 200k none of them prunes)."""

Action = Literal["none", "prune", "fold", "emergency_fold"]

PROMPT_CACHE_TTL_SECONDS = 300
"""Both providers keep a cached prompt prefix about 5 minutes after its last use. After a
longer pause the next request pays for its whole prompt anyway, so a fold then breaks
no cache: the cheapest moment to fold, when one is near."""


PACE_MARGIN = 1.25
"""A summary is started this much earlier than the pace says it must be: turns vary."""


@dataclass(frozen=True)
class Pace:
    """How fast a conversation's view grows and how long its summaries take, as observed
    (the chat layer measures it; see `chat/background.py`)."""

    tokens_per_second: float
    """Growth of the view per second of wall time, pauses included."""
    tokens_per_turn: float
    """Growth of the view per turn."""
    summary_seconds: float
    """How long a summary takes to be written."""
    slot_seconds: float | None = None
    """On a server that runs one request at a time (a local llama.cpp-style server): how
    long a background summary holds the server once it runs. None elsewhere."""
    free_seconds: float | None = None
    """On such a server: how long it stays free between two turns (the person reading
    and typing), the only time a background summary can run. None elsewhere."""


SLOT_LEAD_TURNS_MAX = 4
"""The most turns ahead a summary on a one-request server is started: a summary that
needs more pauses than this is written at the fold, whatever the lead."""


def slot_turns(pace: Pace) -> int:
    """How many turns ahead of the threshold a background summary must start on a server
    that runs one request at a time; 0 where summaries run beside turns.

    There every turn cuts the summary being written (the turn goes first) and the summary
    is written again from the start after it, so it runs only in the pauses between
    turns: it must start at least one turn before it is needed, and one more turn ahead
    for each pause its slot time overruns (a pause that runs longer than the average, or
    a shorter summary of the same view, then lets one of the attempts finish)."""
    if pace.slot_seconds is None or pace.free_seconds is None:
        return 0
    pauses = pace.slot_seconds / max(pace.free_seconds, 0.001)
    return min(max(math.ceil(pauses), 1), SLOT_LEAD_TURNS_MAX)


def prepare_from(budget: Budget, settings: CompactionSettings, pace: Pace | None = None) -> float:
    """The view size from which the next fold's summary is written in the background.

    `prepare_threshold` of the budget, or earlier when the view grows so fast that a
    summary started there would land after the hard threshold: then early enough that it
    is ready at the soft threshold, with `PACE_MARGIN` to spare. On a server that runs
    one request at a time, also `slot_turns` turns of growth before it: the summary runs
    only between turns there. Never below `target`: a summary started from a smaller view
    would fold nothing worth a cache break."""
    assert budget.input_budget is not None
    limit = budget.input_budget
    start = min(settings.prepare_threshold, settings.threshold) * limit
    if pace is not None:
        lead = pace.tokens_per_second * pace.summary_seconds
        lead = max(lead, pace.tokens_per_turn * slot_turns(pace)) * PACE_MARGIN
        start = max(min(start, settings.threshold * limit - lead), settings.target * limit)
    return start


def should_prepare_fold(
    tokens: int, budget: Budget, settings: CompactionSettings, pace: Pace | None = None
) -> bool:
    """Whether a turn that ended at `tokens` should start the next fold's summary in the
    background: automatic folding on, a limited budget, the view at `prepare_from`."""
    if not settings.auto or budget.input_budget is None:
        return False
    return tokens >= prepare_from(budget, settings, pace)


def next_turn_reaches_hard(
    tokens: int, budget: Budget, settings: CompactionSettings, pace: Pace | None
) -> bool:
    """Whether the next turn, growing the view at the observed pace, would reach the hard
    threshold: a ready fold is then committed now, below the soft threshold, rather than
    at a gate where the turn might have to wait for the one after it."""
    if pace is None or not settings.auto or budget.input_budget is None:
        return False
    return tokens + pace.tokens_per_turn >= settings.hard_threshold * budget.input_budget


def at_hard_threshold(tokens: int, budget: Budget, settings: CompactionSettings) -> bool:
    """The only place a turn may wait for a summarizer: the view at the hard threshold."""
    limit = budget.input_budget
    return limit is not None and tokens >= settings.hard_threshold * limit


def would_overflow(tokens: int, budget: Budget) -> bool:
    """Whether a request of `tokens` no longer fits the input budget. Between the hard
    threshold and this point a turn goes ahead while its fold's summary is still being
    written: waiting there would only stop a request that fits."""
    return budget.input_budget is not None and tokens >= budget.input_budget


def fold_on_cold_cache(
    tokens: int,
    budget: Budget,
    settings: CompactionSettings,
    idle_seconds: float | None,
    pace: Pace | None = None,
    *,
    cache_broken: bool = False,
) -> bool:
    """Whether to commit a ready fold early, before it is due: the prompt cache has
    expired during the pause (`idle_seconds` since the last answer; None = unknown), or
    the next request breaks it anyway (`cache_broken`: the reasoning effort changed,
    and the thinking settings are part of what Anthropic caches, or the tools offered
    changed), and the view is where a fold is being prepared anyway. Either way the next
    call rebuilds the cache, so the fold's own cache break costs nothing extra."""
    cold = cache_broken or (idle_seconds is not None and idle_seconds >= PROMPT_CACHE_TTL_SECONDS)
    return cold and should_prepare_fold(tokens, budget, settings, pace)


@dataclass(frozen=True)
class BreakerState:
    """Consecutive folds that freed too little; at `BREAKER_LIMIT` auto-folding stops."""

    consecutive_failures: int = 0

    @property
    def tripped(self) -> bool:
        return self.consecutive_failures >= BREAKER_LIMIT


def record_fold(breaker: BreakerState, tokens_before: int, tokens_after: int) -> BreakerState:
    """The breaker after a fold: reset by a fold that freed ≥ 10%, else one more failure."""
    freed = tokens_before - tokens_after
    if tokens_before > 0 and freed >= MIN_FREED_SHARE * tokens_before:
        return BreakerState()
    return BreakerState(consecutive_failures=breaker.consecutive_failures + 1)


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    trigger: Trigger | None = None


def prune_ceiling(budget: Budget, settings: CompactionSettings) -> int:
    """The largest view (tokens) a prune may leave: below it pruning is cheaper than
    folding (see the module docstring), and it is always under the soft threshold.

    0 when the budget is unlimited (nothing is pruned or folded then).
    """
    input_budget = budget.input_budget
    if input_budget is None:
        return 0
    soft_limit = settings.threshold * input_budget
    under_threshold = math.ceil(soft_limit) - 1
    floor = settings.keep_recent_tokens + summary_output_tokens(budget)
    if floor >= soft_limit:
        # The fold cannot get far under the threshold: pruning is all there is.
        return under_threshold
    growth = GROWTH_CAP_SHARE * settings.tool_result_token_cap
    worth_it = floor + 2 * growth * soft_limit / (soft_limit - floor)
    return min(int(worth_it), under_threshold)


def _pct(fraction: float) -> str:
    return f"{fraction:.0%}"


def _breaker_note(breaker: BreakerState) -> str:
    return (
        f"the last {breaker.consecutive_failures} folds each freed less than "
        f"{_pct(MIN_FREED_SHARE)} of the context"
    )


def _requested(
    breaker: BreakerState, *, overflow: bool, tool_requested: bool, manual: bool
) -> Decision | None:
    """The decision when a fold was asked for (the provider's overflow, the person, the
    model), whatever the view's size; None when none was."""
    if overflow:
        if breaker.tripped:
            return Decision(
                "emergency_fold",
                "The provider rejected the request as too long and "
                f"{_breaker_note(breaker)}: making an extractive digest without a model call.",
                "overflow",
            )
        return Decision(
            "fold",
            "The provider rejected the request as too long: folding, then retrying once.",
            "overflow",
        )
    if manual:
        return Decision("fold", "You asked for a fold.", "manual")
    if tool_requested:
        if breaker.tripped:
            return Decision(
                "none",
                f"The model asked for a fold, but {_breaker_note(breaker)}; not folding again.",
            )
        return Decision("fold", "The model asked for a fold (compactContext).", "tool")
    return None


def decide(
    *,
    tokens: int,
    budget: Budget,
    settings: CompactionSettings,
    mid_tool_loop: bool,
    reclaimable_prune_tokens: int,
    breaker: BreakerState,
    overflow: bool = False,
    tool_requested: bool = False,
    manual: bool = False,
) -> Decision:
    """What to do before the next model call, and why (a sentence for the UI).

    `tokens` is the size of the next request (system, tools and view);
    `reclaimable_prune_tokens` is `plan_prune(...).reclaimable_tokens` (0 when pruning
    is not worth it); `mid_tool_loop` is True between tool results and the model's next
    step within one turn.
    """
    requested = _requested(breaker, overflow=overflow, tool_requested=tool_requested, manual=manual)
    if requested is not None:
        return requested
    breaker_note = _breaker_note(breaker)
    input_budget = budget.input_budget
    if input_budget is None:
        return Decision("none", "The context window is unlimited: nothing is folded.")
    fraction = tokens / input_budget
    soft_limit = settings.threshold * input_budget
    where = f"Context at {_pct(fraction)} of the {input_budget:,}-token budget"
    if tokens < min(settings.target * input_budget, soft_limit):
        return Decision("none", f"{where}, under the {_pct(settings.target)} prune threshold.")

    can_prune = (
        settings.prune
        and reclaimable_prune_tokens > 0
        and reclaimable_prune_tokens >= minimum_tokens(settings, input_budget)
    )
    if can_prune and tokens - reclaimable_prune_tokens <= prune_ceiling(budget, settings):
        after = (tokens - reclaimable_prune_tokens) / input_budget
        return Decision(
            "prune",
            f"{where}: replacing {reclaimable_prune_tokens:,} tokens of old tool output by "
            f"placeholders brings it to {_pct(after)}, cheaper than the fold it puts off.",
        )
    if tokens < soft_limit:
        return Decision("none", f"{where}, under the {_pct(settings.threshold)} threshold.")

    hard = fraction >= settings.hard_threshold
    over_budget = tokens > input_budget
    if not settings.auto:
        if over_budget:
            return Decision(
                "none",
                f"{where}, over budget, and automatic folding is off: the provider may "
                "reject the request; fold manually to continue.",
            )
        return Decision("none", f"{where}, over the threshold, but automatic folding is off.")
    if breaker.tripped:
        if hard or over_budget:
            return Decision(
                "emergency_fold",
                f"{where} and {breaker_note}: making an extractive digest without a model call.",
                "auto",
            )
        return Decision("none", f"{where}, but automatic folding is paused: {breaker_note}.")
    if hard:
        return Decision(
            "fold",
            f"{where}, at or above the {_pct(settings.hard_threshold)} hard threshold: "
            f"folding now down to ~{_pct(settings.target)}.",
            "auto",
        )
    if mid_tool_loop:
        return Decision(
            "none",
            f"{where}, over the {_pct(settings.threshold)} threshold: the fold waits for the "
            f"tool loop to finish (mid-loop it folds only at "
            f"{_pct(settings.hard_threshold)}).",
        )
    return Decision(
        "fold",
        f"{where}, over the {_pct(settings.threshold)} threshold: folding older messages "
        f"into a summary, down to ~{_pct(settings.target)}.",
        "auto",
    )
