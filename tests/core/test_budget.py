from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foldline.core.budget import Budget, TokenAnchor, tokens_now


def test_input_budget_is_window_minus_output_reserve() -> None:
    assert Budget(context_window=200_000, max_output_tokens=8_000).input_budget == 192_000


def test_input_limit_wins_over_window() -> None:
    budget = Budget(context_window=400_000, max_output_tokens=128_000, input_limit=272_000)
    assert budget.input_budget == 272_000


def test_zero_window_means_unlimited() -> None:
    budget = Budget(context_window=0, max_output_tokens=4096, input_limit=1000)
    assert budget.unlimited
    assert budget.input_budget is None
    assert budget.fraction(10**9) == 0.0


def test_budget_never_below_one() -> None:
    assert Budget(context_window=4096, max_output_tokens=8192).input_budget == 1
    assert Budget(context_window=4096, max_output_tokens=0, input_limit=0).input_budget == 1


def test_fraction_of_budget() -> None:
    budget = Budget(context_window=10_000, max_output_tokens=2_000)
    assert budget.fraction(4_000) == pytest.approx(0.5)
    assert budget.fraction(12_000) == pytest.approx(1.5)


def test_negative_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        Budget(context_window=-1, max_output_tokens=0)
    with pytest.raises(ValueError):
        Budget(context_window=10, max_output_tokens=-1)
    with pytest.raises(ValueError):
        Budget(context_window=10, max_output_tokens=1, input_limit=-5)


def test_budget_is_frozen() -> None:
    budget = Budget(context_window=10, max_output_tokens=1)
    with pytest.raises(AttributeError):
        budget.context_window = 20  # type: ignore[misc]


# --- tokens_now ---------------------------------------------------------------------


def test_no_anchor_is_a_fresh_estimate() -> None:
    assert tokens_now(None, 0, [10, 20, 30], base_tokens=100) == 160


def test_valid_anchor_adds_only_new_messages() -> None:
    anchor = TokenAnchor(tokens=5_000, view_length=2, state_version=3)
    # Messages 0 and 1 were in the anchored call; 30 and 40 were added since.
    assert tokens_now(anchor, 3, [10, 20, 30, 40], base_tokens=100) == 5_070


def test_anchor_with_same_view_is_the_reported_usage() -> None:
    anchor = TokenAnchor(tokens=5_000, view_length=3, state_version=1)
    assert tokens_now(anchor, 1, [10, 20, 30], base_tokens=100) == 5_000


def test_anchor_is_reset_by_a_fold() -> None:
    anchor = TokenAnchor(tokens=5_000, view_length=2, state_version=3)
    assert tokens_now(anchor, 4, [10, 20, 30, 40], base_tokens=100) == 200


def test_anchor_is_ignored_when_the_view_shrank() -> None:
    anchor = TokenAnchor(tokens=5_000, view_length=4, state_version=3)
    assert tokens_now(anchor, 3, [10, 20], base_tokens=100) == 130


@given(
    counts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=50),
    base=st.integers(min_value=0, max_value=10_000),
    data=st.data(),
)
def test_anchor_on_exact_usage_agrees_with_the_fresh_estimate(
    counts: list[int], base: int, data: st.DataObject
) -> None:
    # If the reported usage equals the estimate of what was sent, anchoring changes nothing.
    cut = data.draw(st.integers(min_value=0, max_value=len(counts)))
    anchor = TokenAnchor(tokens=base + sum(counts[:cut]), view_length=cut, state_version=7)
    assert tokens_now(anchor, 7, counts, base) == tokens_now(None, 7, counts, base)


def test_a_working_budget_caps_the_input_budget() -> None:
    budget = Budget(context_window=1_000_000, max_output_tokens=125_000, working_budget=200_000)
    assert budget.input_budget == 200_000
    assert budget.window_budget == 875_000
    assert budget.working_budget_applies
    assert budget.fraction(160_000) == 0.8


def test_a_working_budget_at_or_over_the_window_is_the_window() -> None:
    full = Budget(context_window=1_000_000, max_output_tokens=125_000, working_budget=1_000_000)
    assert full.input_budget == 875_000
    assert not full.working_budget_applies
    unlimited = Budget(context_window=0, max_output_tokens=4096, working_budget=200_000)
    assert unlimited.input_budget is None


def test_a_working_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="working_budget"):
        Budget(context_window=1_000, max_output_tokens=100, working_budget=0)


def test_a_fresh_count_goes_on_the_meters_scale() -> None:
    from foldline.core.budget import on_meter_scale

    # The case: 946 on the anchored meter, 1,131 estimated afresh, 971 after.
    after = on_meter_scale(971, estimate_now=1_131, meter_now=946)
    assert after == round(971 * 946 / 1_131) < 946
    assert on_meter_scale(971, estimate_now=900, meter_now=900) == 971
    assert on_meter_scale(50, estimate_now=0, meter_now=10) == 50
