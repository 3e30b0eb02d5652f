"""The fold gate's decision: the one action before every model call, given a summary
prepared in the background.

`core.policy.decide` chooses what the context needs (nothing, a prune, a fold, an
emergency fold) as if folds were written on the spot. The gate (`decide_gate`) carries
that through a summary that may be prepared in the background: it commits a ready one,
waits for one being written only when the request would not fit, starts one, or makes
the fold in line; it commits a ready one early when that costs nothing (a cold prompt
cache, the next turn at the hard threshold, a server that runs one request at a time).
The chat layer (`chat/fold_gate.py`) gathers the `GateFacts` and carries out the
`GateDecision`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from foldline.core.policy import (
    MIN_FREED_SHARE,
    BreakerState,
    Decision,
    Pace,
    at_hard_threshold,
    decide,
    fold_on_cold_cache,
    next_turn_reaches_hard,
    should_prepare_fold,
    would_overflow,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import Trigger

if TYPE_CHECKING:
    from foldline.core.budget import Budget

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
    one_request_at_a_time: bool = False
    """The conversation's server runs one request at a time (a local llama.cpp-style
    server that stated one slot, or interrupts, or cut a stream for another request), as
    the chat layer knows it from what the server said; known before any background
    request was timed (`Pace.slot_seconds`)."""


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


STALE_COMMIT_REASON = (
    "Context at the hard threshold, and the summary prepared in the pauses no longer folds "
    "down to the threshold: committing it anyway, since it makes room for this turn and a "
    "summary written now would be waited for; the next one is prepared after the turn."
)


def _stale_still_makes_room(facts: GateFacts) -> bool:
    """A ready fold that went stale (the view after it over the threshold) still takes
    the view under the hard threshold and frees `MIN_FREED_SHARE`. On a one-request
    server a summary in line at the hard threshold is written while the person waits
    (a minute and more for a small model on a busy machine); this fold is ready now."""
    after = facts.prepared_tokens_after
    limit = facts.budget.input_budget or 0
    return (
        after is not None
        and after < facts.settings.hard_threshold * limit
        and facts.tokens - after >= MIN_FREED_SHARE * facts.tokens
    )


SLOT_COMMIT_REASON = (
    "The summary written in the pauses on this one-request server is ready: committing "
    "it now, before the conversation grows past the room it leaves."
)


def _early_commit(facts: GateFacts) -> GateDecision | None:
    """A ready fold committed before it is due: the prompt cache is cold anyway (a pause
    past its lifetime, or a changed prefix), or the next turn would reach the hard
    threshold, or the server runs one request at a time. None when none holds.

    On a one-request server (`GateFacts.one_request_at_a_time`) the summary is started
    turns ahead because it runs only in the pauses; every turn it then waits lets the
    verbatim tail after its split grow, until the view after it is over the threshold
    and it must be dropped for a fold the person waits for. Holding
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
        if hard and _one_request_server(facts) and _stale_still_makes_room(facts):
            return GateDecision("commit_prepared", STALE_COMMIT_REASON, "auto")
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
    """The conversation's server runs one request at a time, as the chat layer knows it
    from the server's slots; not inferred from its timing, which comes only after the
    first background request (and a server of many slots may be timed too)."""
    return facts.one_request_at_a_time


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
