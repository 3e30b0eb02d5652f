"""The fold gate's one decision: `decide_gate`, given a summary prepared in the background.

With the default settings on an input budget of 100k (the prune threshold at the target,
then the prepare, soft and hard thresholds; the sizes below are computed from them, so
the table holds whatever the defaults), every row below is the facts before a call and
the one action the gate must take.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from foldline.core.budget import Budget
from foldline.core.gate import (
    DROPPED_OVER_THRESHOLD,
    GateFacts,
    decide_gate,
    next_preparation,
)
from foldline.core.policy import PROMPT_CACHE_TTL_SECONDS, BreakerState, Pace, decide
from foldline.core.settings import CompactionSettings

BUDGET = Budget(context_window=110_000, max_output_tokens=10_000)  # input budget 100k
DEFAULTS = CompactionSettings()
assert BUDGET.input_budget == 100_000
TRIPPED = BreakerState(consecutive_failures=3)
LIMIT = 100_000
PREPARE = int(DEFAULTS.prepare_threshold * LIMIT)
SOFT = int(DEFAULTS.threshold * LIMIT)
HARD = int(DEFAULTS.hard_threshold * LIMIT)
NOT_DUE = (PREPARE + SOFT) // 2
"""A view where a fold is prepared but not yet due."""
DUE = (SOFT + HARD) // 2
"""A view over the soft threshold, under the hard one."""
QUICK = Pace(tokens_per_second=100.0, tokens_per_turn=20_000.0, summary_seconds=1.0)
"""A pace at which a turn from `NOT_DUE` reaches the hard threshold."""
ONE_SLOT = Pace(
    tokens_per_second=1.0,
    tokens_per_turn=1_000.0,
    summary_seconds=8.0,
    slot_seconds=8.0,
    free_seconds=10.0,
)
"""A one-request local server's pace: summaries run only in the pauses between turns."""
ON_ONE_SLOT: dict[str, object] = {"pace": ONE_SLOT, "one_request_at_a_time": True}
"""A server known to run one request at a time, its slot timed."""
EARLY = (PREPARE * 9) // 10
"""A view under the preparing threshold (a summary started ahead may be ready)."""


def facts(tokens: int, **kw: object) -> GateFacts:
    base = GateFacts(
        tokens=tokens,
        budget=BUDGET,
        settings=DEFAULTS,
        mid_tool_loop=False,
        reclaimable_prune_tokens=0,
        breaker=BreakerState(),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


# (name, facts, action, trigger, drop)
CASES: list[tuple[str, GateFacts, str, str | None, str | None]] = [
    ("small view, nothing", facts(30_000), "none", None, None),
    (
        "prune to the ceiling",
        facts(60_000, reclaimable_prune_tokens=40_000),
        "prune",
        None,
        None,
    ),
    ("due, nothing prepared: start", facts(DUE), "start_preparing", "auto", None),
    (
        "due, nothing prepared, the back-off holds",
        facts(DUE, may_prepare=False),
        "none",
        None,
        None,
    ),
    (
        "due at the hard threshold, nothing prepared: in line",
        facts(HARD + 1_000),
        "fold_inline",
        "auto",
        None,
    ),
    (
        "due, prepared still being written: go ahead",
        facts(DUE, prepared="preparing"),
        "none",
        None,
        None,
    ),
    (
        "hard but fits, still being written: go ahead",
        facts(HARD + 2_000, prepared="preparing"),
        "none",
        None,
        None,
    ),
    (
        "over the budget, still being written: wait",
        facts(LIMIT + 1_000, prepared="preparing"),
        "wait_then_commit",
        "auto",
        None,
    ),
    (
        "due, prepared ready (after not counted yet): commit",
        facts(DUE, prepared="ready"),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "due, prepared ready, after under threshold: commit",
        facts(DUE, prepared="ready", prepared_tokens_after=40_000),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "due, prepared ready, after over threshold: drop, fold in line",
        facts(DUE, prepared="ready", prepared_tokens_after=SOFT + 1_000),
        "fold_inline",
        "auto",
        DROPPED_OVER_THRESHOLD,
    ),
    (
        "invalid prepared: dropped, then as if none",
        facts(DUE, prepared="ready", prepared_invalid="a folded message changed"),
        "start_preparing",
        "auto",
        "a folded message changed",
    ),
    (
        "invalid prepared under the target: dropped, nothing",
        facts(30_000, prepared="preparing", prepared_invalid="the fold version changed"),
        "none",
        None,
        "the fold version changed",
    ),
    (
        "a ready re-summary first, whatever the size",
        facts(30_000, prepared="ready", prepared_kind="resummary"),
        "commit_prepared",
        None,
        None,
    ),
    (
        "a re-summary being written: an auto fold goes ahead",
        facts(DUE, prepared="preparing", prepared_kind="resummary"),
        "none",
        None,
        None,
    ),
    (
        "ready fold, not due, warm cache: waits",
        facts(NOT_DUE, prepared="ready", idle_seconds=10.0),
        "none",
        None,
        None,
    ),
    (
        "ready fold, not due, cold cache: lands early",
        facts(NOT_DUE, prepared="ready", idle_seconds=PROMPT_CACHE_TTL_SECONDS + 1.0),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "ready fold, not due, tools changed: lands early",
        facts(NOT_DUE, prepared="ready", prefix_changed="tools offered"),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "ready fold, not due, next turn reaches hard: lands early",
        facts(NOT_DUE, prepared="ready", pace=QUICK),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "early, but the view after it stays over the threshold: dropped",
        facts(
            NOT_DUE,
            prepared="ready",
            prefix_changed="reasoning effort",
            prepared_tokens_after=SOFT,
        ),
        "none",
        None,
        DROPPED_OVER_THRESHOLD,
    ),
    (
        "cold cache mid tool loop: no early commit",
        facts(
            NOT_DUE,
            prepared="ready",
            mid_tool_loop=True,
            idle_seconds=PROMPT_CACHE_TTL_SECONDS + 1.0,
        ),
        "none",
        None,
        None,
    ),
    (
        "over the soft threshold mid loop: waits for the loop's end",
        facts(DUE, mid_tool_loop=True),
        "none",
        None,
        None,
    ),
    ("overflow: fold in line", facts(60_000, request="overflow"), "fold_inline", "overflow", None),
    (
        "overflow with the breaker tripped: digest",
        facts(60_000, request="overflow", breaker=TRIPPED),
        "emergency_fold",
        "overflow",
        None,
    ),
    ("manual: fold in line", facts(10_000, request="manual"), "fold_inline", "manual", None),
    ("tool request: fold in line", facts(10_000, request="tool"), "fold_inline", "tool", None),
    (
        "tool request, breaker tripped: refused",
        facts(10_000, request="tool", breaker=TRIPPED),
        "refuse",
        None,
        None,
    ),
    (
        "breaker tripped at the hard threshold: digest",
        facts(HARD + 1_000, breaker=TRIPPED),
        "emergency_fold",
        "auto",
        None,
    ),
    (
        "breaker tripped under the hard threshold: paused",
        facts(DUE, breaker=TRIPPED, prepared="ready"),
        "none",
        None,
        None,
    ),
    (
        "one-request server, ready at the preparing threshold: commit now",
        facts(NOT_DUE, prepared="ready", **ON_ONE_SLOT),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "one-request server, ready under the preparing threshold: held",
        facts(EARLY, prepared="ready", **ON_ONE_SLOT),
        "none",
        None,
        None,
    ),
    (
        "one-request server, ready but freeing next to nothing: held",
        facts(NOT_DUE, prepared="ready", **ON_ONE_SLOT, prepared_tokens_after=NOT_DUE - 1_000),
        "none",
        None,
        None,
    ),
    (
        "one-request server, due, the ready fold gone stale: prepare again, go ahead",
        facts(DUE, prepared="ready", **ON_ONE_SLOT, prepared_tokens_after=SOFT + 1_000),
        "start_preparing",
        "auto",
        DROPPED_OVER_THRESHOLD,
    ),
    (
        "one-request server, the stale ready fold at the hard threshold, still freeing a "
        "tenth: committed (a summary in line would be waited for)",
        facts(HARD + 500, prepared="ready", **ON_ONE_SLOT, prepared_tokens_after=SOFT + 1_000),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "one-request server, the stale ready fold at the hard threshold freeing too "
        "little: in line",
        facts(HARD + 500, prepared="ready", **ON_ONE_SLOT, prepared_tokens_after=HARD - 1_000),
        "fold_inline",
        "auto",
        DROPPED_OVER_THRESHOLD,
    ),
    (
        "elsewhere, the stale ready fold at the hard threshold: in line",
        facts(HARD + 500, prepared="ready", pace=ONE_SLOT, prepared_tokens_after=SOFT + 1_000),
        "fold_inline",
        "auto",
        DROPPED_OVER_THRESHOLD,
    ),
    (
        "in a pause, a ready fold the gate would land: it lands",
        facts(NOT_DUE, prepared="ready", **ON_ONE_SLOT, request="pause"),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "in a pause, a ready fold a turn's growth short of where a turn's gate lands it: it lands",
        facts(PREPARE - 500, prepared="ready", **ON_ONE_SLOT, request="pause"),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "in a pause, a ready fold more than a turn's growth short: held",
        facts(PREPARE - 1_500, prepared="ready", **ON_ONE_SLOT, request="pause"),
        "none",
        None,
        None,
    ),
    (
        "in a turn, the same fold a turn's growth short: held (the turn's view is counted)",
        facts(PREPARE - 500, prepared="ready", **ON_ONE_SLOT),
        "none",
        None,
        None,
    ),
    (
        "in a pause, a due fold with nothing prepared: nothing until a turn",
        facts(DUE, **ON_ONE_SLOT, request="pause"),
        "none",
        None,
        None,
    ),
    (
        "in a pause, at the hard threshold with nothing prepared: nothing either",
        facts(HARD + 500, request="pause"),
        "none",
        None,
        None,
    ),
    (
        "elsewhere, the same ready fold waits until it is due",
        facts(NOT_DUE, prepared="ready", pace=replace(ONE_SLOT, slot_seconds=None)),
        "none",
        None,
        None,
    ),
    (
        "one slot known, nothing timed yet: the ready fold lands as on a timed one",
        facts(NOT_DUE, prepared="ready", one_request_at_a_time=True),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "one slot known, only the growth timed: the ready fold lands",
        facts(
            NOT_DUE,
            prepared="ready",
            one_request_at_a_time=True,
            pace=replace(ONE_SLOT, slot_seconds=None, free_seconds=None),
        ),
        "commit_prepared",
        "auto",
        None,
    ),
    (
        "one slot known, nothing timed, due, the ready fold gone stale: prepare again",
        facts(DUE, prepared="ready", one_request_at_a_time=True, prepared_tokens_after=SOFT + 1),
        "start_preparing",
        "auto",
        DROPPED_OVER_THRESHOLD,
    ),
    (
        "a server of many slots or hosted, even with a slot time: the ready fold waits",
        facts(NOT_DUE, prepared="ready", pace=ONE_SLOT),
        "none",
        None,
        None,
    ),
    (
        "a server of many slots or hosted, due, the ready fold gone stale: in line",
        facts(DUE, prepared="ready", pace=ONE_SLOT, prepared_tokens_after=SOFT + 1_000),
        "fold_inline",
        "auto",
        DROPPED_OVER_THRESHOLD,
    ),
    (
        "automatic folding off: nothing, even with a ready fold",
        facts(
            DUE,
            settings=DEFAULTS.model_copy(update={"auto": False}),
            prepared="ready",
            idle_seconds=PROMPT_CACHE_TTL_SECONDS + 1.0,
        ),
        "none",
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("gate_facts", "action", "trigger", "drop"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_gate_takes_one_action(
    gate_facts: GateFacts, action: str, trigger: str | None, drop: str | None
) -> None:
    decision = decide_gate(gate_facts)
    assert (decision.action, decision.trigger, decision.drop) == (action, trigger, drop)
    assert decision.reason.endswith(".")


def test_without_a_prepared_summary_the_gate_is_decide_or_a_preparation() -> None:
    """With nothing prepared and the back-off clear, the gate's action is `decide`'s,
    except that an automatic fold under the hard threshold is prepared instead."""
    for tokens in range(0, 110_001, 2_500):
        for mid in (False, True):
            for reclaimable in (0, 20_000):
                gate_facts = facts(tokens, mid_tool_loop=mid, reclaimable_prune_tokens=reclaimable)
                inner = decide(
                    tokens=tokens,
                    budget=BUDGET,
                    settings=DEFAULTS,
                    mid_tool_loop=mid,
                    reclaimable_prune_tokens=reclaimable,
                    breaker=BreakerState(),
                )
                gate = decide_gate(gate_facts)
                if inner.action == "fold" and tokens < HARD:
                    assert gate.action == "start_preparing"
                elif inner.action == "fold":
                    assert gate.action == "fold_inline"
                else:
                    assert gate.action == inner.action
                assert gate.reason.startswith(inner.reason.rstrip("."))


def test_the_reasons_name_why_a_ready_fold_lands_early() -> None:
    cold = decide_gate(facts(NOT_DUE, prepared="ready", idle_seconds=400.0))
    assert "prompt cache expired" in cold.reason
    tools = decide_gate(facts(NOT_DUE, prepared="ready", prefix_changed="tools offered"))
    assert "tools offered changed" in tools.reason
    effort = decide_gate(facts(NOT_DUE, prepared="ready", prefix_changed="reasoning effort"))
    assert "reasoning effort changed" in effort.reason
    urgent = decide_gate(facts(NOT_DUE, prepared="ready", pace=QUICK))
    assert "next turn would reach the hard threshold" in urgent.reason
    one_slot = decide_gate(facts(NOT_DUE, prepared="ready", **ON_ONE_SLOT))
    assert "one-request server" in one_slot.reason
    waiting = decide_gate(facts(LIMIT + 1_000, prepared="preparing"))
    assert waiting.reason.endswith("Waiting for the summary being written in the background.")


@pytest.mark.parametrize(
    ("degraded", "tokens", "breaker", "expected"),
    [
        (False, 30_000, BreakerState(), None),
        (False, NOT_DUE, BreakerState(), "fold"),
        (True, 10_000, BreakerState(), "resummary"),
        (True, NOT_DUE, BreakerState(), "resummary"),
        (True, NOT_DUE, TRIPPED, None),
        (False, NOT_DUE, TRIPPED, None),
    ],
)
def test_what_a_turn_that_ended_well_prepares(
    degraded: bool, tokens: int, breaker: BreakerState, expected: str | None
) -> None:
    kind = next_preparation(
        degraded=degraded,
        tokens=tokens,
        budget=BUDGET,
        settings=DEFAULTS,
        breaker=breaker,
        pace=None,
    )
    assert kind == expected
