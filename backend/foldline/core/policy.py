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


# --- the gate: one action before every model call ----------------------------------

RequestKind = Literal["turn", "overflow", "manual", "tool", "pause"]
"""Why the gate runs: before a call of a turn (or after a tool batch), after the provider
refused a request as too long, on the person's Compact, on the model's compactContext;
or in the person's pause, when a summary prepared on a one-request server is ready (then
it only lands the fold, or does nothing: see `decide_gate`)."""

PreparedStatus = Literal["none", "preparing", "ready"]
PreparedKind = Literal["fold", "resummary"]
"""A summary prepared in the background: the next fold's, or the re-summary of an
emergency digest (same boundary as the digest)."""

GateAction = Literal[
    "none",
    "prune",
    "commit_prepared",
    "wait_then_commit",
    "start_preparing",
    "fold_inline",
    "emergency_fold",
    "refuse",
]


@dataclass(frozen=True)
class GateFacts:
    """Everything known before a model call that the gate's decision reads.

    The chat layer gathers them (counting, the prepared fold's checks and the store's
    last call time in a worker thread) and carries out the one action `decide_gate`
    returns.
    """

    tokens: int
    """The size of the next request, on the meter's scale."""
    budget: Budget
    settings: CompactionSettings
    mid_tool_loop: bool
    reclaimable_prune_tokens: int
    breaker: BreakerState
    request: RequestKind = "turn"
    prepared: PreparedStatus = "none"
    prepared_kind: PreparedKind = "fold"
    prepared_invalid: str | None = None
    """Why the prepared summary can no longer be used (None: it can, or still may)."""
    prepared_tokens_after: int | None = None
    """The view's size with the ready prepared fold committed, on the meter's scale;
    None until counted (it is counted only when the gate would commit it)."""
    pace: Pace | None = None
    idle_seconds: float | None = None
    """Seconds since the conversation's last model call (None: unknown, or not needed)."""
    prefix_changed: Literal["reasoning effort", "tools offered"] | None = None
    """What changed in the cached prefix since the last gate, so the cache is cold."""
    may_prepare: bool = True
    """Whether the back-off after failed preparations lets one start now."""


@dataclass(frozen=True)
class GateDecision:
    """The one thing the gate does before a call, why (a sentence for the UI) and the
    fold's trigger. `drop` says why the prepared summary is dropped first (it is no
    longer valid); `backoff_held` that a preparation was due but the back-off held it."""

    action: GateAction
    reason: str
    trigger: Trigger | None = None
    drop: str | None = None
    backoff_held: bool = False


def _inner_decision(facts: GateFacts) -> Decision:
    return decide(
        tokens=facts.tokens,
        budget=facts.budget,
        settings=facts.settings,
        mid_tool_loop=facts.mid_tool_loop,
        reclaimable_prune_tokens=facts.reclaimable_prune_tokens,
        breaker=facts.breaker,
        overflow=facts.request == "overflow",
        tool_requested=facts.request == "tool",
        manual=facts.request == "manual",
    )


def _carried(decision: Decision, facts: GateFacts, drop: str | None) -> GateDecision:
    """`decide`'s answer as a gate action, with no prepared summary involved."""
    if decision.action == "fold":
        return GateDecision("fold_inline", decision.reason, decision.trigger, drop)
    if decision.action == "none" and facts.request in ("tool", "manual"):
        # A fold was asked for and is not made: the reason says why.
        return GateDecision("refuse", decision.reason, None, drop)
    return GateDecision(decision.action, decision.reason, decision.trigger, drop)


def _after_is_over_threshold(facts: GateFacts) -> bool:
    after = facts.prepared_tokens_after
    limit = facts.budget.input_budget or 0
    return after is not None and after >= facts.settings.threshold * limit


DROPPED_OVER_THRESHOLD = "the view after it would still be over threshold"


SLOT_COMMIT_REASON = (
    "The summary written in the pauses on this one-request server is ready: committing "
    "it now, before the conversation grows past the room it leaves."
)


def _early_commit(facts: GateFacts) -> GateDecision | None:
    """A ready fold committed before it is due: the prompt cache is cold anyway (a pause
    past its lifetime, or a changed prefix), or the next turn would reach the hard
    threshold, or the server runs one request at a time. None when none holds.

    On a one-request server (a local llama.cpp-style server, `Pace.slot_seconds` known)
    the summary is started turns ahead because it runs only in the pauses; every turn it
    then waits lets the verbatim tail after its split grow, until the view after it is
    over the threshold and it must be dropped for a fold the person waits for. Holding
    it back saves nothing there: the server has no billed cache, and it evaluates the
    folded view once whenever the fold lands. It waits for the view to reach
    `prepare_threshold` (where its summary would have started without the lead; in the
    person's pause, one turn's growth short of it, so that it lands there rather than
    in the next turn, which would wait for the folded view's evaluation), and,
    once the view after it is counted, for it to free at least `MIN_FREED_SHARE` (what
    the circuit breaker counts as a fold that worked): a summary started far ahead is
    not committed early to fold next to nothing."""
    if _one_request_server(facts):
        limit = facts.budget.input_budget or 0
        after = facts.prepared_tokens_after
        growth = facts.pace.tokens_per_turn if facts.request == "pause" and facts.pace else 0.0
        ripe = (
            facts.tokens + growth
            >= min(facts.settings.prepare_threshold, facts.settings.threshold) * limit
        )
        worth = after is None or facts.tokens - after >= MIN_FREED_SHARE * facts.tokens
        if ripe and worth:
            return GateDecision("commit_prepared", SLOT_COMMIT_REASON, "auto")
    cold = fold_on_cold_cache(
        facts.tokens,
        facts.budget,
        facts.settings,
        facts.idle_seconds,
        facts.pace,
        cache_broken=facts.prefix_changed is not None,
    )
    urgent = next_turn_reaches_hard(facts.tokens, facts.budget, facts.settings, facts.pace)
    if not (cold or urgent):
        return None
    if not cold:
        reason = (
            "At this pace the next turn would reach the hard threshold: "
            "committing the summary prepared in the background now."
        )
    elif facts.prefix_changed is not None:
        reason = (
            f"The {facts.prefix_changed} changed, so the prompt cache is read afresh "
            "anyway: committing the summary prepared in the background."
        )
    else:
        reason = (
            "The prompt cache expired during the pause, so folding now breaks no "
            "cache: committing the summary prepared in the background."
        )
    return GateDecision("commit_prepared", reason, "auto")


def decide_gate(facts: GateFacts) -> GateDecision:
    """The one action before a model call, given a summary prepared in the background
    (`_decide_gate`). In a pause (`request == "pause"`) the one action taken is the
    commit of the ready fold that gate would commit; anything else waits for a turn."""
    decision = _decide_gate(facts)
    if facts.request != "pause" or decision.action == "commit_prepared":
        return decision
    return GateDecision("none", decision.reason, drop=decision.drop)


def _decide_gate(facts: GateFacts) -> GateDecision:
    """The one action before a model call, given a summary prepared in the background.

    - An invalid prepared summary is dropped (`drop`), then the gate decides without it.
    - A ready re-summary is committed first (the caller reloads and asks again).
    - When `decide` folds automatically: a ready prepared fold is committed; one still
      being written is waited for only when the request would not fit the input budget
      (else the turn goes ahead unfolded); with none, one starts being prepared and the
      turn goes ahead, except at the hard threshold, where the fold is made in line.
    - When it does not: a ready fold is committed early on a cold cache or when the
      next turn would reach the hard threshold; else `decide`'s own action is taken.

    A prepared fold is committed only once `prepared_tokens_after` is known: until it
    is counted, `commit_prepared` means "count the view after it and ask again"; a fold
    leaving the view over the threshold is dropped.
    """
    drop = facts.prepared_invalid if facts.prepared != "none" else None
    prepared = "none" if drop is not None else facts.prepared
    if prepared == "ready" and facts.prepared_kind == "resummary":
        return GateDecision(
            "commit_prepared", "Replacing the emergency digest with a model summary."
        )
    decision = _inner_decision(facts)
    ready_fold = prepared == "ready" and facts.prepared_kind == "fold"
    if not (decision.action == "fold" and decision.trigger == "auto"):
        if ready_fold and decision.action == "none" and not facts.mid_tool_loop:
            early = _early_commit(facts)
            if early is not None:
                if _after_is_over_threshold(facts):
                    return GateDecision("none", decision.reason, drop=DROPPED_OVER_THRESHOLD)
                return early
        return _carried(decision, facts, drop)
    hard = at_hard_threshold(facts.tokens, facts.budget, facts.settings)
    if prepared == "none" or facts.prepared_kind != "fold":
        if hard or facts.breaker.tripped:
            return GateDecision("fold_inline", decision.reason, "auto", drop)
        if prepared != "none":
            return GateDecision(
                "none", f"{decision.reason} The re-summary is being written first.", drop=drop
            )
        if not facts.may_prepare:
            return GateDecision(
                "none",
                f"{decision.reason} The last summaries failed: the next one waits a few turns.",
                drop=drop,
                backoff_held=True,
            )
        return GateDecision(
            "start_preparing",
            f"{decision.reason} The summary is written in the background; "
            "the turn goes ahead meanwhile.",
            "auto",
            drop,
        )
    if prepared == "preparing":
        if not hard or not would_overflow(facts.tokens, facts.budget):
            return GateDecision(
                "none",
                f"{decision.reason} The summary is still being written in the background; "
                "the request fits, so the turn goes ahead meanwhile.",
            )
        return GateDecision(
            "wait_then_commit",
            f"{decision.reason} Waiting for the summary being written in the background.",
            "auto",
        )
    if _after_is_over_threshold(facts):
        if not hard and _one_request_server(facts) and facts.may_prepare:
            # Started turns ahead, it went stale; a summary in line would be waited for
            # while the request still fits: one is prepared again, as with none.
            return GateDecision(
                "start_preparing",
                f"{decision.reason} The summary prepared earlier no longer makes room; a "
                "new one is written in the background and the turn goes ahead meanwhile.",
                "auto",
                DROPPED_OVER_THRESHOLD,
            )
        return GateDecision("fold_inline", decision.reason, "auto", DROPPED_OVER_THRESHOLD)
    return GateDecision("commit_prepared", decision.reason, "auto")


def _one_request_server(facts: GateFacts) -> bool:
    """The conversation's server runs one request at a time (its slot timed)."""
    return facts.pace is not None and facts.pace.slot_seconds is not None


def next_preparation(
    *,
    degraded: bool,
    tokens: int,
    budget: Budget,
    settings: CompactionSettings,
    breaker: BreakerState,
    pace: Pace | None,
) -> PreparedKind | None:
    """What a turn that ended well starts in the background (the back-off aside): the
    re-summary of an emergency digest, else the next fold's summary once the view is at
    `prepare_from`; nothing while the circuit breaker is tripped."""
    if breaker.tripped:
        return None
    if degraded:
        return "resummary"
    if should_prepare_fold(tokens, budget, settings, pace):
        return "fold"
    return None
