"""The decision function and the circuit breaker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from foldline.core.budget import Budget
from foldline.core.compaction import summary_output_tokens
from foldline.core.policy import (
    BreakerState,
    Decision,
    at_hard_threshold,
    decide,
    fold_on_cold_cache,
    prune_ceiling,
    record_fold,
    should_prepare_fold,
)
from foldline.core.settings import CompactionSettings

BUDGET = Budget(context_window=110_000, max_output_tokens=10_000)  # input budget 100k
DEFAULTS = CompactionSettings()
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
