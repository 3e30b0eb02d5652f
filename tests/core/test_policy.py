"""The decision function and the circuit breaker."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from foldline.core.budget import Budget
from foldline.core.compaction import summary_output_tokens
from foldline.core.policy import (
    SLOT_LEAD_TURNS_MAX,
    BreakerState,
    Decision,
    Pace,
    at_hard_threshold,
    decide,
    fold_on_cold_cache,
    next_turn_reaches_hard,
    prepare_from,
    prune_ceiling,
    record_fold,
    should_prepare_fold,
    slot_turns,
    would_overflow,
)
from foldline.core.settings import CompactionSettings

BUDGET = Budget(context_window=110_000, max_output_tokens=10_000)  # input budget 100k
DEFAULTS = CompactionSettings(threshold=0.80, prepare_threshold=0.75)
"""The rules at the thresholds these cases were worked out for (the prune ceiling's
numbers below follow from them); the shipped defaults go through the same rules in
test_gate_policy.py, whose sizes are computed from them."""
TRIPPED = BreakerState(consecutive_failures=3)


def run(tokens: int, **kw: object) -> Decision:
    args: dict = {
        "tokens": tokens,
        "budget": BUDGET,
        "settings": DEFAULTS,
        "mid_tool_loop": False,
        "reclaimable_prune_tokens": 0,
        "breaker": BreakerState(),
    }
    args.update(kw)
    return decide(**args)


def test_breaker_trips_after_three_folds_that_free_too_little() -> None:
    breaker = BreakerState()
    for _ in range(2):
        breaker = record_fold(breaker, 100_000, 95_000)
    assert breaker.consecutive_failures == 2 and not breaker.tripped
    breaker = record_fold(breaker, 100_000, 91_000)
    assert breaker.tripped
    assert record_fold(breaker, 100_000, 90_000) == BreakerState()
    assert record_fold(BreakerState(), 0, 0).consecutive_failures == 1
    # The smallest fold that can free 10%: one token to none.
    assert record_fold(breaker, 1, 0) == BreakerState()
    assert record_fold(BreakerState(), 10, 9) == BreakerState()
    assert record_fold(BreakerState(), 10, 10).consecutive_failures == 1


CEILING = prune_ceiling(BUDGET, DEFAULTS)


def test_prune_ceiling_follows_the_cost_model() -> None:
    # floor = keep_recent + summary budget; ceiling = floor + 2·growth·soft/(soft − floor).
    floor = 8_000 + summary_output_tokens(BUDGET)
    assert floor == 16_000
    assert CEILING == 21_000  # 16,000 + 2 · 2,000 · 80,000 / (80,000 − 16,000)
    # A small window folds often, so a prune pays off much closer to the threshold.
    small = Budget(context_window=32_768, max_output_tokens=4_096)
    small_ceiling = prune_ceiling(small, DEFAULTS)
    assert 0.6 * small.input_budget < small_ceiling < 0.8 * small.input_budget
    # A tiny one where the fold cannot get under the threshold: prune just under it.
    tiny = Budget(context_window=8_192, max_output_tokens=1_024)
    assert 0.8 * tiny.input_budget - 1 <= prune_ceiling(tiny, DEFAULTS) < 0.8 * tiny.input_budget
    assert prune_ceiling(Budget(context_window=0, max_output_tokens=1), DEFAULTS) == 0


def test_under_the_target_nothing_happens() -> None:
    decision = run(49_999, reclaimable_prune_tokens=40_000)
    assert decision.action == "none" and "50% prune threshold" in decision.reason


def test_under_the_threshold_only_a_prune_to_the_ceiling() -> None:
    # From the target up, a prune that reaches the ceiling is taken ...
    decision = run(60_000, reclaimable_prune_tokens=60_000 - CEILING)
    assert decision.action == "prune" and decision.trigger is None
    assert f"{60_000 - CEILING:,}" in decision.reason and "21%" in decision.reason
    # ... one that leaves more is not, and under the threshold nothing else happens.
    decision = run(79_999, reclaimable_prune_tokens=79_999 - CEILING - 1)
    assert decision.action == "none" and "80% threshold" in decision.reason


def test_over_the_threshold_a_prune_that_stays_high_is_a_fold() -> None:
    # The previous rule pruned here (85k - 20k = 65k is under the threshold); the view
    # would hover at the threshold, so the policy folds instead.
    decision = run(85_000, reclaimable_prune_tokens=20_000)
    assert decision == Decision("fold", decision.reason, "auto") and "50%" in decision.reason
    assert run(85_000, reclaimable_prune_tokens=85_000 - CEILING).action == "prune"


def test_prune_below_its_minimum_is_not_used() -> None:
    # 9,000 reclaimable is under min(20k, 10% of 100k), even though it reaches the ceiling.
    assert run(CEILING + 9_000, reclaimable_prune_tokens=9_000).action == "none"
    assert run(80_500, reclaimable_prune_tokens=9_000).action == "fold"


def test_fold_when_pruning_is_not_enough() -> None:
    decision = run(90_000, reclaimable_prune_tokens=5_000)
    assert decision == Decision("fold", decision.reason, "auto")
    assert "50%" in decision.reason


def test_soft_threshold_waits_for_the_end_of_a_tool_loop() -> None:
    decision = run(90_000, mid_tool_loop=True, reclaimable_prune_tokens=30_000)
    assert decision.action == "none" and "tool loop" in decision.reason
    # ... but pruning is cheap and allowed mid-loop.
    assert run(90_000, mid_tool_loop=True, reclaimable_prune_tokens=70_000).action == "prune"


def test_hard_threshold_folds_even_mid_loop() -> None:
    decision = run(95_000, mid_tool_loop=True)
    assert decision.action == "fold" and decision.trigger == "auto"
    assert "95%" in decision.reason


def test_tripped_breaker_pauses_folding_until_the_hard_threshold() -> None:
    assert run(90_000, breaker=TRIPPED).action == "none"
    decision = run(96_000, breaker=TRIPPED)
    assert decision.action == "emergency_fold" and decision.trigger == "auto"
    assert run(130_000, breaker=TRIPPED, mid_tool_loop=True).action == "emergency_fold"


def test_overflow_folds_with_its_trigger() -> None:
    assert run(10_000, overflow=True) == Decision("fold", run(1, overflow=True).reason, "overflow")
    assert run(10_000, overflow=True, breaker=TRIPPED).action == "emergency_fold"


def test_manual_and_tool_requests() -> None:
    assert run(100, manual=True).trigger == "manual"
    assert run(100, manual=True, breaker=TRIPPED).action == "fold"
    assert run(100, tool_requested=True).trigger == "tool"
    assert run(100, tool_requested=True, breaker=TRIPPED).action == "none"


def test_unlimited_budget_never_folds_automatically() -> None:
    unlimited = Budget(context_window=0, max_output_tokens=4096)
    assert run(10**9, budget=unlimited).action == "none"
    assert run(10**9, budget=unlimited, manual=True).action == "fold"


def test_auto_off_never_folds_by_itself() -> None:
    off = DEFAULTS.model_copy(update={"auto": False})
    assert run(99_000, settings=off).action == "none"
    assert run(200_000, settings=off).action == "none"
    assert run(90_000, settings=off, reclaimable_prune_tokens=70_000).action == "prune"


@pytest.mark.parametrize("window", [8_192, 32_768, 200_000])
def test_every_window_prunes_down_to_its_ceiling(window: int) -> None:
    budget = Budget(context_window=window, max_output_tokens=1024)
    ceiling = prune_ceiling(budget, DEFAULTS)
    # At 85% (over the target) with enough to reach the ceiling (over the prune minimum).
    tokens = int(0.85 * budget.input_budget)
    reclaimable = max(tokens - ceiling, int(0.12 * budget.input_budget))
    tokens = ceiling + reclaimable
    assert run(tokens, budget=budget, reclaimable_prune_tokens=reclaimable).action == "prune"
    assert run(tokens, budget=budget, reclaimable_prune_tokens=reclaimable - 1).action != "prune"


@hyp_settings(max_examples=300, deadline=None)
@given(
    tokens=st.integers(0, 300_000),
    reclaimable=st.integers(0, 100_000),
    mid_loop=st.booleans(),
    failures=st.integers(0, 5),
)
def test_decision_invariants(tokens: int, reclaimable: int, mid_loop: bool, failures: int) -> None:
    breaker = BreakerState(consecutive_failures=failures)
    decision = run(
        tokens, reclaimable_prune_tokens=reclaimable, mid_tool_loop=mid_loop, breaker=breaker
    )
    fraction = tokens / 100_000
    assert decision.reason.endswith(".")
    if fraction < DEFAULTS.target:
        assert decision.action == "none"
    if fraction < DEFAULTS.threshold:
        assert decision.action in ("none", "prune")
    if decision.action == "prune":
        assert tokens - reclaimable <= CEILING < 80_000 and reclaimable >= 10_000
        assert fraction >= DEFAULTS.target
    if decision.action == "fold":
        assert not breaker.tripped and (fraction >= 0.95 or not mid_loop)
    if decision.action == "emergency_fold":
        assert breaker.tripped and fraction >= 0.95
    if fraction >= 0.95 and decision.action == "none":
        raise AssertionError("at the hard threshold something must happen")


# --- the decision, pinned down exactly ------------------------------------------------
#
# `expected_decision` restates the policy of the module docstring as a plain rule list;
# the properties below compare `decide` with it on wide settings and on token counts
# drawn right at every boundary (target, threshold, hard threshold, budget, prune
# ceiling, prune minimum), where an off-by-one would hide from uniform draws.


def expected_decision(
    tokens: int,
    budget: Budget,
    settings: CompactionSettings,
    mid_tool_loop: bool,
    reclaimable: int,
    breaker: BreakerState,
    overflow: bool,
    tool_requested: bool,
    manual: bool,
) -> tuple[str, str | None]:
    tripped = breaker.consecutive_failures >= 3
    if overflow:
        return ("emergency_fold" if tripped else "fold"), "overflow"
    if manual:
        return "fold", "manual"
    if tool_requested:
        return ("none", None) if tripped else ("fold", "tool")
    limit = budget.input_budget
    if limit is None:
        return "none", None
    if tokens < settings.target * limit and tokens < settings.threshold * limit:
        return "none", None
    minimum = min(settings.prune_minimum_tokens, int(limit * 0.10))
    if (
        settings.prune
        and reclaimable >= max(minimum, 1)
        and tokens - reclaimable <= prune_ceiling(budget, settings)
    ):
        return "prune", None
    if tokens < settings.threshold * limit or not settings.auto:
        return "none", None
    hard = tokens >= settings.hard_threshold * limit
    if tripped:
        return ("emergency_fold", "auto") if hard or tokens > limit else ("none", None)
    if hard or not mid_tool_loop:
        return "fold", "auto"
    return "none", None


@st.composite
def policy_settings(draw: st.DrawFn) -> CompactionSettings:
    threshold = draw(st.sampled_from([0.3, 0.5, 0.7, 0.8, 0.9, 1.0]))
    return CompactionSettings(
        auto=draw(st.booleans()),
        prune=draw(st.booleans()),
        threshold=threshold,
        hard_threshold=draw(st.sampled_from([threshold, 0.9, 0.95, 1.0])),
        # A target above the threshold happens in hand-written configs: the threshold
        # then decides where pruning may start.
        target=draw(st.sampled_from([0.2, 0.5, 0.6, 0.85, 0.99])),
        keep_recent_tokens=draw(st.sampled_from([0, 2_000, 8_000, 30_000])),
        tool_result_token_cap=draw(st.sampled_from([64, 4_000, 20_000])),
        prune_minimum_tokens=draw(st.sampled_from([0, 1, 5_000, 20_000])),
    )


@st.composite
def policy_cases(draw: st.DrawFn) -> dict:
    window = draw(st.sampled_from([0, 1_000, 8_192, 32_768, 110_000, 200_000]))
    budget = Budget(
        context_window=window,
        max_output_tokens=draw(st.sampled_from([0, 1_024, 10_000])),
        input_limit=draw(st.sampled_from([None, None, 50_000])),
    )
    settings = draw(policy_settings())
    limit = budget.input_budget or 100_000
    ceiling = prune_ceiling(budget, settings)
    edges = [
        settings.target * limit,
        settings.threshold * limit,
        settings.hard_threshold * limit,
        limit,
        ceiling,
    ]
    tokens = max(0, math.ceil(draw(st.sampled_from(edges))) + draw(st.integers(-2, 2)))
    if draw(st.booleans()):
        tokens = draw(st.integers(0, 2 * limit))
    minimum = min(settings.prune_minimum_tokens, int(limit * 0.10))
    reclaimable = draw(
        st.sampled_from(
            [0, 1, minimum - 1, minimum, tokens - ceiling - 1, tokens - ceiling, tokens]
        )
        | st.integers(0, tokens + 1)
    )
    return {
        "tokens": tokens,
        "budget": budget,
        "settings": settings,
        "mid_tool_loop": draw(st.booleans()),
        "reclaimable_prune_tokens": max(reclaimable, 0),
        "breaker": BreakerState(consecutive_failures=draw(st.integers(0, 4))),
        "overflow": draw(st.integers(0, 9)) == 0,
        "tool_requested": draw(st.integers(0, 9)) == 0,
        "manual": draw(st.integers(0, 9)) == 0,
    }


@hyp_settings(max_examples=1500, deadline=None)
@given(case=policy_cases())
def test_decide_follows_the_policy_exactly(case: dict) -> None:
    decision = decide(**case)
    wanted = expected_decision(
        case["tokens"],
        case["budget"],
        case["settings"],
        case["mid_tool_loop"],
        case["reclaimable_prune_tokens"],
        case["breaker"],
        case["overflow"],
        case["tool_requested"],
        case["manual"],
    )
    assert (decision.action, decision.trigger) == wanted
    assert decision.reason.endswith(".") and decision.reason[0].isupper()


def test_the_boundaries_belong_to_the_next_action() -> None:
    # Exactly at the target a prune may start; exactly at the threshold a fold starts;
    # exactly at the hard threshold even a tool loop folds; exactly at the ceiling a
    # prune is still taken; exactly at the minimum a saving is still worth it.
    assert run(49_999, reclaimable_prune_tokens=40_000).action == "none"
    assert run(50_000, reclaimable_prune_tokens=50_000 - CEILING).action == "prune"
    assert run(50_000, reclaimable_prune_tokens=50_000 - CEILING - 1).action == "none"
    assert run(79_999).action == "none"
    assert run(80_000) == Decision("fold", run(80_000).reason, "auto")
    assert run(94_999, mid_tool_loop=True).action == "none"
    assert run(95_000, mid_tool_loop=True).action == "fold"
    assert run(94_999, breaker=TRIPPED).action == "none"
    assert run(95_000, breaker=TRIPPED).action == "emergency_fold"
    tiny = Budget(context_window=8_192, max_output_tokens=1_024)  # minimum: 716 tokens
    tiny_ceiling = prune_ceiling(tiny, DEFAULTS)
    at_minimum = run(tiny_ceiling + 716, budget=tiny, reclaimable_prune_tokens=716)
    assert at_minimum.action == "prune"
    under = run(tiny_ceiling + 715, budget=tiny, reclaimable_prune_tokens=715)
    assert under.action == "fold"
    # With no minimum and a low target, a view under the ceiling still never "prunes"
    # nothing.
    eager = DEFAULTS.model_copy(update={"target": 0.2, "prune_minimum_tokens": 0})
    assert run(CEILING, settings=eager, reclaimable_prune_tokens=0).action == "none"
    assert run(CEILING, settings=eager, reclaimable_prune_tokens=1).action == "prune"
    # Over budget with auto off: the reason warns that the provider may refuse it.
    off = DEFAULTS.model_copy(update={"auto": False})
    assert "over budget" in run(100_001, settings=off).reason
    assert "over budget" not in run(100_000, settings=off).reason


def test_a_tool_request_folds_with_its_trigger_whatever_the_size() -> None:
    for tokens in (0, 50_000, 200_000):
        decision = run(tokens, tool_requested=True)
        assert (decision.action, decision.trigger) == ("fold", "tool")
        assert "compactContext" in decision.reason


def test_reasons_name_the_numbers_the_person_sees() -> None:
    assert "90% of the 100,000-token budget" in run(90_000).reason
    assert "tool loop" in run(90_000, mid_tool_loop=True).reason
    assert "95%" in run(90_000, mid_tool_loop=True).reason
    assert "the last 3 folds" in run(90_000, breaker=TRIPPED).reason
    assert "10%" in run(90_000, breaker=TRIPPED).reason
    prune = run(60_000, reclaimable_prune_tokens=40_000)
    assert "40,000 tokens" in prune.reason and "20%" in prune.reason


def test_prune_ceiling_rounding() -> None:
    # A soft limit with a fraction: the ceiling is strictly under it.
    budget = Budget(context_window=1_001, max_output_tokens=0)
    settings = DEFAULTS.model_copy(update={"keep_recent_tokens": 10_000})
    assert prune_ceiling(budget, settings) == math.ceil(0.8 * 1_001) - 1 == 800
    exact = Budget(context_window=1_000, max_output_tokens=0)
    assert prune_ceiling(exact, settings) == 799
    # The floor exactly at the soft limit still prunes just under it.
    at_limit = DEFAULTS.model_copy(
        update={"keep_recent_tokens": 80_000 - summary_output_tokens(BUDGET)}
    )
    assert prune_ceiling(BUDGET, at_limit) == 79_999
    # The cost model truncates (int), it does not round.
    small = Budget(context_window=30_000, max_output_tokens=0)
    growth = 0.5 * DEFAULTS.tool_result_token_cap
    floor = 8_000 + summary_output_tokens(small)
    soft = 0.8 * 30_000
    assert prune_ceiling(small, DEFAULTS) == int(floor + 2 * growth * soft / (soft - floor))


def test_background_preparation_cold_cache_and_hard_threshold_helpers() -> None:
    budget = Budget(context_window=11_000, max_output_tokens=1_000)  # input budget 10,000
    settings = CompactionSettings(prepare_threshold=0.7, threshold=0.8, hard_threshold=0.95)
    assert not should_prepare_fold(6_999, budget, settings)
    assert should_prepare_fold(7_000, budget, settings)
    assert not should_prepare_fold(9_000, budget, settings.model_copy(update={"auto": False}))
    assert not should_prepare_fold(10**9, Budget(context_window=0, max_output_tokens=1), settings)
    # A prepare threshold above the fold threshold prepares when a fold is due.
    late = settings.model_copy(update={"prepare_threshold": 0.9})
    assert should_prepare_fold(8_000, budget, late)
    assert not at_hard_threshold(9_499, budget, settings)
    assert at_hard_threshold(9_500, budget, settings)
    assert not fold_on_cold_cache(7_500, budget, settings, 299.0)
    assert fold_on_cold_cache(7_500, budget, settings, 301.0)
    assert not fold_on_cold_cache(6_000, budget, settings, 3_600.0)
    assert not fold_on_cold_cache(7_500, budget, settings, None)
    # A change of reasoning effort breaks the cache as surely as a long pause.
    assert fold_on_cold_cache(7_500, budget, settings, 10.0, cache_broken=True)
    assert fold_on_cold_cache(7_500, budget, settings, None, cache_broken=True)
    assert not fold_on_cold_cache(6_000, budget, settings, 10.0, cache_broken=True)


# Thresholds spelled out: the rows hold whatever the defaults become.
SLOT_SETTINGS = CompactionSettings(threshold=0.8, prepare_threshold=0.75, target=0.5)


@pytest.mark.parametrize(
    ("slot_seconds", "free_seconds", "turns", "start"),
    [
        # Not a one-request server: the pace in seconds alone (5 tok/s × 10 s × 1.25 =
        # 62.5 tokens ahead of 80%), so from `prepare_threshold` (75%) as before.
        (None, None, 0, 75_000),
        (20.0, None, 0, 75_000),
        # The summary fits a pause: it still starts one turn (8k of growth) early, since
        # the turn that follows cuts it.
        (5.0, 10.0, 1, 80_000 - 10_000),
        (10.0, 10.0, 1, 80_000 - 10_000),
        # It overruns the pause: one more turn ahead per pause it needs.
        (15.0, 10.0, 2, 80_000 - 20_000),
        (25.0, 10.0, 3, 80_000 - 30_000),
        # Far slower than the pauses: at most `SLOT_LEAD_TURNS_MAX` turns, and never
        # from below the target.
        (300.0, 10.0, SLOT_LEAD_TURNS_MAX, 50_000),
        (30.0, 0.0, SLOT_LEAD_TURNS_MAX, 50_000),
    ],
)
def test_a_one_request_server_prepares_turns_ahead(
    slot_seconds: float | None, free_seconds: float | None, turns: int, start: float
) -> None:
    pace = Pace(
        tokens_per_second=5,
        tokens_per_turn=8_000,
        summary_seconds=10,
        slot_seconds=slot_seconds,
        free_seconds=free_seconds,
    )
    assert slot_turns(pace) == turns
    assert prepare_from(BUDGET, SLOT_SETTINGS, pace) == pytest.approx(start)


def test_a_slow_pace_in_seconds_still_leads_on_one_slot() -> None:
    # The lead is the longer of the two: a summary taking 100 s of wall time at
    # 200 tok/s (20k, 25k with the margin) outleads one turn of 2k.
    pace = Pace(200, 2_000, 100, slot_seconds=5.0, free_seconds=10.0)
    assert prepare_from(BUDGET, SLOT_SETTINGS, pace) == 80_000 - 25_000


def test_a_fold_is_prepared_early_enough_for_the_pace() -> None:
    # No pace known yet, or a slow one: from `prepare_threshold` (75% of 100k).
    assert prepare_from(BUDGET, DEFAULTS) == 75_000
    slow = Pace(tokens_per_second=50, tokens_per_turn=2_000, summary_seconds=30)
    assert prepare_from(BUDGET, DEFAULTS, slow) == 75_000
    # 500 tokens a second and 20 s summaries: 10k grow while one is written, so it
    # starts 12.5k (with the margin) before the 80% threshold.
    fast = Pace(tokens_per_second=500, tokens_per_turn=2_000, summary_seconds=20)
    assert prepare_from(BUDGET, DEFAULTS, fast) == 80_000 - 12_500
    # Never from below the target, however fast.
    racing = Pace(tokens_per_second=10_000, tokens_per_turn=2_000, summary_seconds=20)
    assert prepare_from(BUDGET, DEFAULTS, racing) == 50_000
    assert should_prepare_fold(60_000, BUDGET, DEFAULTS, racing)
    assert not should_prepare_fold(60_000, BUDGET, DEFAULTS, slow)

    # A ready fold lands before the soft threshold when the next turn would reach the
    # hard one (95k) at the observed growth per turn.
    big_turns = Pace(tokens_per_second=100, tokens_per_turn=30_000, summary_seconds=5)
    assert next_turn_reaches_hard(66_000, BUDGET, DEFAULTS, big_turns)
    assert not next_turn_reaches_hard(64_000, BUDGET, DEFAULTS, big_turns)
    assert not next_turn_reaches_hard(94_000, BUDGET, DEFAULTS, None)

    # Waiting for a summary is only for a request that no longer fits.
    assert not would_overflow(99_999, BUDGET) and would_overflow(100_000, BUDGET)
    assert not would_overflow(10**9, Budget(context_window=0, max_output_tokens=1))


def test_the_default_thresholds_are_ordered() -> None:
    shipped = CompactionSettings()
    # A fold's summary is prepared before the fold is due, which comes before the hard
    # threshold, with room for a prepared fold to land between them.
    assert shipped.target < shipped.prepare_threshold < shipped.threshold
    assert shipped.threshold < shipped.hard_threshold < 1
