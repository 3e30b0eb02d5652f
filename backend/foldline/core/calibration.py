"""Calibration of token estimates from the usage providers report.

For models whose tokenizer is not public (Claude, local models), counts are estimates.
After every call the provider reports how many input tokens the model really received;
the ratio `actual / estimate` of that call, smoothed over calls, corrects later
estimates (`foldline.core.tokens.ScaledCounter`). The store keeps one `Calibration` per
provider and model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_ALPHA = 0.2
"""Weight of a new observation in the moving average: about the last ten calls matter."""
DEFAULT_LOW = 0.5
DEFAULT_HIGH = 3.0
"""Clamp bounds of the ratio. A ratio outside them means the estimate and the usage
describe different payloads (a provider adding a large hidden prompt, a misreported
usage), not a tokenizer difference; clamping keeps one bad sample from wrecking the
budget."""


@dataclass(frozen=True)
class Calibration:
    """The learned ratio `actual / estimate` for one model, and how many calls taught it."""

    ratio: float = 1.0
    samples: int = 0

    def __post_init__(self) -> None:
        if not math.isfinite(self.ratio) or self.ratio <= 0:
            raise ValueError(f"ratio must be a positive number, got {self.ratio!r}")
        if self.samples < 0:
            raise ValueError(f"samples must be >= 0, got {self.samples!r}")


def update_calibration(
    cal: Calibration,
    actual: int,
    estimate: int,
    alpha: float = DEFAULT_ALPHA,
    low: float = DEFAULT_LOW,
    high: float = DEFAULT_HIGH,
) -> Calibration:
    """Fold one call's observation into the calibration.

    `actual` is the input the model received in ONE call, as the provider reported it:
    `input_tokens + cache_read_tokens + cache_creation_tokens` of that call
    (`providers.base.Usage.total_input`). It is never a sum over several calls — a tool
    loop makes many calls with overlapping prompts, and adding them up would count the
    same history again and again. `estimate` is the unscaled estimate of that same
    request (the base counter's `count_request`, before any ratio is applied).

    The ratio is an exponential moving average (`alpha` is the weight of the new
    observation); the first sample replaces the default outright, since a prior of 1.0
    carries no information. The result is clamped to `[low, high]`. An observation with
    `estimate <= 0` or `actual <= 0` carries no information and leaves `cal` unchanged.
    """
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
    if not 0 < low <= high:
        raise ValueError(f"need 0 < low <= high, got low={low!r} high={high!r}")
    if estimate <= 0 or actual <= 0:
        return cal
    observed = actual / estimate
    ratio = observed if cal.samples == 0 else (1 - alpha) * cal.ratio + alpha * observed
    return Calibration(ratio=min(max(ratio, low), high), samples=cal.samples + 1)


UNSAMPLED_RATIO = 1.25
"""The ratio of a model that nothing has been learned for yet (no samples of its own, none
from its provider): the estimate's base encoding is cl100k_base, and the tokenizers people
switch to count English prose up to about a quarter higher than it (Claude's, sentencepiece
models'), more for code. A count that errs high folds a little early; one that errs low
sends a request the provider refuses. The first call replaces it with a measured ratio."""


def counting_calibration(
    own: Calibration, provider_best: Calibration, highest_learned: float | None
) -> Calibration:
    """The calibration to count a model with before and after it has samples of its own.

    `own` is the model's, `provider_best` its provider's most-sampled model's (siblings
    share a tokenizer far more often than not), and `highest_learned` the highest ratio
    learned for any model of any provider (None: none yet). A model of a provider that
    has taught nothing (a switch across providers) is counted with the higher of that
    and `UNSAMPLED_RATIO`: the learned ratios also say how this person's text (its
    languages, its code) tokenizes against the estimate's encoding, which a new tokenizer
    shares to a good degree, and the higher guess errs on the side of folding.
    The result keeps `samples=0` unless it is the model's own, so the first call of the
    model replaces it outright (`update_calibration`).
    """
    if own.samples:
        return own
    if provider_best.samples:
        return Calibration(ratio=provider_best.ratio, samples=0)
    return Calibration(ratio=max(UNSAMPLED_RATIO, highest_learned or 0.0), samples=0)
