from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foldline.core.calibration import (
    UNSAMPLED_RATIO,
    Calibration,
    counting_calibration,
    update_calibration,
)


def test_default_is_neutral() -> None:
    assert Calibration() == Calibration(ratio=1.0, samples=0)


def test_first_sample_jumps_to_the_observed_ratio() -> None:
    cal = update_calibration(Calibration(), actual=1_200, estimate=1_000)
    assert cal.ratio == pytest.approx(1.2)
    assert cal.samples == 1


def test_later_samples_are_an_exponential_moving_average() -> None:
    cal = Calibration(ratio=1.2, samples=5)
    updated = update_calibration(cal, actual=1_000, estimate=1_000, alpha=0.2)
    assert updated.ratio == pytest.approx(0.8 * 1.2 + 0.2 * 1.0)
    assert updated.samples == 6


def test_ratio_is_clamped() -> None:
    high = update_calibration(Calibration(), actual=10_000, estimate=100)
    low = update_calibration(Calibration(), actual=10, estimate=1_000)
    assert high.ratio == 3.0
    assert low.ratio == 0.5
    custom = update_calibration(Calibration(), actual=10_000, estimate=100, low=0.9, high=1.1)
    assert custom.ratio == 1.1


@pytest.mark.parametrize(("actual", "estimate"), [(1_000, 0), (1_000, -5), (0, 1_000)])
def test_observations_without_information_are_ignored(actual: int, estimate: int) -> None:
    cal = Calibration(ratio=1.3, samples=4)
    assert update_calibration(cal, actual=actual, estimate=estimate) is cal


def test_converges_to_a_steady_ratio() -> None:
    cal = Calibration(ratio=2.5, samples=10)
    for _ in range(60):
        cal = update_calibration(cal, actual=1_150, estimate=1_000)
    assert cal.ratio == pytest.approx(1.15, abs=1e-3)


def test_invalid_values_are_rejected() -> None:
    with pytest.raises(ValueError):
        Calibration(ratio=0.0)
    with pytest.raises(ValueError):
        Calibration(ratio=float("nan"))
    with pytest.raises(ValueError):
        Calibration(samples=-1)
    with pytest.raises(ValueError):
        update_calibration(Calibration(), 10, 10, alpha=0.0)
    with pytest.raises(ValueError):
        update_calibration(Calibration(), 10, 10, low=2.0, high=1.0)


def test_calibration_is_frozen() -> None:
    with pytest.raises(AttributeError):
        Calibration().ratio = 2.0  # type: ignore[misc]


@given(
    observations=st.lists(st.tuples(st.integers(-10, 10**7), st.integers(-10, 10**7)), max_size=40)
)
def test_ratio_always_stays_within_bounds(observations: list[tuple[int, int]]) -> None:
    cal = Calibration()
    for actual, estimate in observations:
        cal = update_calibration(cal, actual=actual, estimate=estimate)
        assert 0.5 <= cal.ratio <= 3.0
    informative = sum(1 for actual, estimate in observations if actual > 0 and estimate > 0)
    assert cal.samples == informative


def test_a_model_counts_with_its_own_then_its_providers_then_an_upper_guess() -> None:
    own = Calibration(ratio=1.1, samples=3)
    sibling = Calibration(ratio=1.4, samples=9)
    nothing = Calibration()
    assert counting_calibration(own, sibling, 2.0) == own
    # Borrowed ratios keep samples=0: the model's first call replaces them outright.
    assert counting_calibration(nothing, sibling, 2.0) == Calibration(1.4, 0)
    # A provider that taught nothing yet: the highest ratio learned anywhere, and never
    # under the cautious default, so the gate folds rather than the provider refusing.
    assert counting_calibration(nothing, nothing, 1.6) == Calibration(1.6, 0)
    assert counting_calibration(nothing, nothing, 0.9) == Calibration(UNSAMPLED_RATIO, 0)
    assert counting_calibration(nothing, nothing, None) == Calibration(UNSAMPLED_RATIO, 0)
    assert UNSAMPLED_RATIO > 1.0
