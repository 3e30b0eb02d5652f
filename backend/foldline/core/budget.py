"""How many input tokens a conversation may use, and how many it uses now.

`Budget` turns a model's limits into the input budget the policy compares against.
`TokenAnchor` and `tokens_now` implement "anchor on the last call": the usage the
provider reported for the last call is the best count of everything it was sent, so
the current size is that number plus estimates of only the messages added since —
until a fold changes the view, which invalidates the anchor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """A model's limits.

    `context_window == 0` means unlimited: the budget is None and nothing is ever folded
    automatically. Otherwise the window's budget is `input_limit` when the model has a
    separate input limit, else the window minus the tokens reserved for the answer; and
    the input budget the fold thresholds apply to is the smaller of that and the
    `working_budget`, which very large windows use to fold for cost and answer quality
    long before they would overflow.
    """

    context_window: int
    max_output_tokens: int
    input_limit: int | None = None
    working_budget: int | None = None

    def __post_init__(self) -> None:
        if self.context_window < 0:
            raise ValueError(f"context_window must be >= 0, got {self.context_window}")
        if self.max_output_tokens < 0:
            raise ValueError(f"max_output_tokens must be >= 0, got {self.max_output_tokens}")
        if self.input_limit is not None and self.input_limit < 0:
            raise ValueError(f"input_limit must be >= 0, got {self.input_limit}")
        if self.working_budget is not None and self.working_budget < 1:
            raise ValueError(f"working_budget must be >= 1, got {self.working_budget}")

    @property
    def unlimited(self) -> bool:
        return self.context_window == 0

    @property
    def input_budget(self) -> int | None:
        """Input tokens the fold thresholds apply to: the window's budget, capped by the
        working budget; None when unlimited; never below 1."""
        budget = self.window_budget
        if budget is None or self.working_budget is None:
            return budget
        return min(budget, self.working_budget)

    @property
    def working_budget_applies(self) -> bool:
        """True when the working budget, not the window, sets the input budget."""
        window, working = self.window_budget, self.working_budget
        return window is not None and working is not None and working < window

    @property
    def window_budget(self) -> int | None:
        """Input tokens the window allows per call; None when unlimited; never below 1."""
        if self.unlimited:
            return None
        if self.input_limit is not None:
            budget = self.input_limit
        else:
            budget = self.context_window - self.max_output_tokens
        # A misconfigured model (output reserve >= window) still gets a positive budget,
        # so fractions stay finite and the policy folds rather than dividing by zero.
        return max(budget, 1)

    def fraction(self, tokens: int) -> float:
        """`tokens` as a fraction of the input budget (0.0 when unlimited; may exceed 1)."""
        budget = self.input_budget
        if budget is None:
            return 0.0
        return tokens / budget


@dataclass(frozen=True)
class TokenAnchor:
    """The last call's reported input, and what that call was sent.

    `tokens` is the total input the provider reported for that ONE call
    (`Usage.total_input`), `view_length` the number of view messages (the model's view:
    summary + messages after `apiStartIndex`) it was sent, and `state_version` the
    fold version (CompactionState.version, 0 before any fold) at the time.
    """

    tokens: int
    view_length: int
    state_version: int


def tokens_now(
    anchor: TokenAnchor | None,
    state_version: int,
    view_counts: Sequence[int],
    base_tokens: int,
) -> int:
    """The input tokens the next call will use.

    `view_counts` are the cached per-message counts of the current view, in order, and
    `base_tokens` the count of everything else in a request (system prompt, tool schemas,
    framing: `count_request(system, [], tools)`).

    With a valid anchor — same fold version and a view at least as long as the one the
    anchored call was sent — the answer is the reported usage plus the counts of the
    messages added since. Otherwise (no anchor, a fold happened, or the view shrank,
    e.g. a message was deleted) it is a fresh estimate: `base_tokens + sum(view_counts)`.

    The anchor cannot see changes that keep the version and the length: after pruning
    (placeholders replace old outputs), or a change of system prompt or tools, the
    caller passes `anchor=None` so the count is estimated afresh.
    """
    if (
        anchor is not None
        and anchor.state_version == state_version
        and anchor.view_length <= len(view_counts)
    ):
        return anchor.tokens + sum(view_counts[anchor.view_length :])
    return base_tokens + sum(view_counts)


def on_meter_scale(tokens: int, *, estimate_now: int, meter_now: int) -> int:
    """A fresh count of some view (`tokens`, e.g. the view after a fold), on the scale of
    the meter, so that it can be compared with what the meter shows now.

    The meter is anchored on the provider's last report (`meter_now`) while a fold counts
    its before and after afresh; the fresh count of the current view is `estimate_now`.
    Comparing an anchored "before" with a fresh "after" judges the estimate's error, not
    the fold (a fold that frees 160 tokens can look 25 tokens larger), so the after is
    scaled by the same ratio as the meter: `tokens × meter_now / estimate_now`.
    """
    if estimate_now <= 0 or meter_now == estimate_now:
        return tokens
    return round(tokens * meter_now / estimate_now)
