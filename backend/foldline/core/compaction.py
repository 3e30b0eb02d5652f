"""The fold: older messages replaced in the model's view by a summary.

A fold picks a split point, summarizes `[previous summary] + display[start:split]` with
a tool-less request, and returns the next `CompactionState`; the model then sees
`[summary] + display[split:]`. The split is chosen so that the folded view lands at the
*target* (a fraction of the budget), not merely under the threshold, so that the next
turn does not fold again. The summarizer's own request is kept within its budget by
masking tool outputs and, if that is not enough, by summarizing in chunks and merging.
`fold` never raises on a summarizer failure: it falls back to the extractive digest of
`digest.py` (no model call) and marks the state degraded. A summary that answers but
ignores the requested format is kept as a free-form summary, never replaced by the
digest. Before any fold is returned, `carry_forward` keeps the person's own words after
the summary (`person_words.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from foldline.core.attachments import name_folded_files
from foldline.core.digest import emergency_fold
from foldline.core.fold_cost import with_fold_cost
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import Message
from foldline.core.person_words import words_cap
from foldline.core.planning import (
    choose_split,
    kept_tail_tokens,
    pick_split,
    plan_split,
    safe_split_points,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, Strategy, SummarizedRange, Trigger
from foldline.core.summary_fit import finish_summary
from foldline.core.summary_request import Summarizer, SummaryRequest, request_tokens
from foldline.core.summary_run import (
    LAST_REQUEST_QUOTE_TOKENS,
    AfterView,
    SummaryRun,
    after_view_for,
    last_user_request,
    quote_last_request,
)
from foldline.core.view import summary_to_message

if TYPE_CHECKING:
    from foldline.core.budget import Budget

SUMMARY_BUDGET_SHARE = 0.10
"""The summary may use up to this share of the input budget ..."""
MIN_SUMMARY_TOKENS = 256
MAX_SUMMARY_TOKENS = 8_000
"""... within these bounds: enough for the six sections, small enough to leave room."""


@dataclass(frozen=True)
class FoldOutcome:
    """What a fold did. `state` is None only when there was nothing to fold."""

    state: CompactionState | None
    summarizer_calls: int
    degraded_reason: str | None
    split_index: int | None


def summary_output_tokens(budget: Budget) -> int:
    """The `max_output_tokens` of the summary: ~10% of the budget, within bounds."""
    input_budget = budget.input_budget
    if input_budget is None:
        tokens = MAX_SUMMARY_TOKENS
    else:
        share = int(input_budget * SUMMARY_BUDGET_SHARE)
        tokens = min(MAX_SUMMARY_TOKENS, max(MIN_SUMMARY_TOKENS, share), max(input_budget // 4, 1))
    if budget.max_output_tokens > 0:
        tokens = min(tokens, budget.max_output_tokens)
    return max(tokens, 1)


SUMMARIZER_COUNT_MARGIN = 0.9
"""The share of another summarizer model's room a summary request is planned to fill:
the request is counted with the conversation's tokenizer, which may count the
summarizer's text a little low."""


def summarizer_capacity(budget: Budget, summarizer: Budget) -> int | None:
    """The input tokens a summary request may hold when the summarizer (`[compaction]
    model`) is another model than the conversation's: its own window less the summary's
    output, with a margin for the other tokenizer. None when that is no limit beyond the
    conversation's own budget, or the summarizer's window is unlimited."""
    room = summarizer.window_budget
    if room is None:
        return None
    if summarizer.input_limit is None:
        # The window holds the request and its answer: the summary's output, not the
        # summarizer's default answer reserve, is what must stay free.
        room = summarizer.context_window - summary_output_tokens(budget)
    input_budget = budget.input_budget
    if input_budget is not None and room >= input_budget - summary_output_tokens(budget):
        return None
    return max(int(room * SUMMARIZER_COUNT_MARGIN), 1)


def summary_max_tokens(inputs: FoldInputs) -> int:
    """The `max_output_tokens` of this fold's summary: the budget's share, within what the
    summarizer may write in one answer."""
    tokens = summary_output_tokens(inputs.budget)
    if inputs.summarizer_max_output:
        tokens = min(tokens, inputs.summarizer_max_output)
    return tokens


def reserved_summary_tokens(budget: Budget, settings: CompactionSettings) -> int:
    """The room a fold plans for its summary: the model's answer plus the person's
    words kept after it."""
    return summary_output_tokens(budget) + words_cap(
        budget.input_budget, settings.person_words_share
    )


def planned_fold_frees(inputs: FoldInputs) -> int:
    """The tokens the fold planned now would free at least: the view now less the view
    after it, with its summary and the person's words at their largest (0 when nothing
    can be folded). A fold prepared long before it lands (on a one-request server it is
    started turns ahead) must be worth its summary: one freeing next to nothing would be
    dropped when it is due, and the person would wait for the fold made then."""
    planner = inputs.planner()
    summary = reserved_summary_tokens(inputs.budget, inputs.settings)
    split = plan_split(
        planner,
        summary_tokens=summary,
        input_budget=inputs.budget.input_budget,
        settings=inputs.settings,
    )
    if split is None:
        return 0
    now = planner.view_tokens(inputs.start, inputs.state)
    after = planner.fixed + planner.frame + summary + planner.tail_tokens(split)
    return max(now - after, 0)


def planned_split(inputs: FoldInputs) -> int | None:
    """The split `fold` would make now, for a preview of what a fold would summarize
    (a fold that falls back to the digest may fold a little more)."""
    return plan_split(
        inputs.planner(),
        summary_tokens=reserved_summary_tokens(inputs.budget, inputs.settings),
        input_budget=inputs.budget.input_budget,
        settings=inputs.settings,
    )


async def summarize_range(
    folded: Sequence[Message],
    start: int,
    *,
    inputs: FoldInputs,
    previous_summary: str | None,
    instructions: str | None,
    summarize: Summarizer,
    after_view: AfterView | None = None,
) -> tuple[str | None, SummaryRun]:
    """Summarize `folded` (display indices from `start`) stacked on `previous_summary`,
    within the summarizer's own budget, with the last user request quoted verbatim.
    Returns the summary (None when the summarizer failed) and the run, for its calls,
    the problem it met and whether the summary is free-form."""
    budget = inputs.budget
    summary_max = summary_max_tokens(inputs)
    capacity = inputs.summarizer_budget
    if capacity is None:
        input_budget = budget.input_budget
        capacity = (input_budget - summary_max) if input_budget is not None else 1 << 62
    last_request = last_user_request(folded)
    stop = start + len(folded)
    run = SummaryRun(
        counter=inputs.counter,
        summarize=summarize,
        settings=inputs.settings,
        instructions=instructions,
        last_request=last_request,
        previous_summary=previous_summary,
        summary_max=summary_max,
        capacity=capacity,
        pinned=sorted(p.index for p in inputs.pins if start <= p.index < stop),
        reads_files=inputs.summarizer_reads_files,
        after_view=after_view,
    )
    summary = await run.run(folded, start)
    if summary is None:
        return None, run
    quote_cap = min(LAST_REQUEST_QUOTE_TOKENS, max(summary_max // 4, 16))
    summary = quote_last_request(summary, last_request, inputs.counter, quote_cap)
    return name_folded_files(summary, folded), run


async def fold(
    inputs: FoldInputs,
    *,
    summarize: Summarizer | None,
    trigger: Trigger,
    instructions: str | None = None,
) -> FoldOutcome:
    """Fold older messages into a summary, down to the target. Never raises on a
    summarizer failure (exception, empty answer, unreachable): the extractive digest is
    used instead and the outcome says why (`degraded_reason`). An answer that ignores
    the format but passes the summary judge is kept as a free-form summary."""
    state = inputs.state
    start = inputs.start
    if inputs.window.end <= start:
        return FoldOutcome(None, 0, None, None)
    input_budget = inputs.budget.input_budget
    planner = inputs.planner()
    split = plan_split(
        planner,
        summary_tokens=reserved_summary_tokens(inputs.budget, inputs.settings),
        input_budget=input_budget,
        settings=inputs.settings,
        keep_recent_tokens=kept_tail_tokens(inputs.settings, input_budget, trigger),
    )
    if split is None:
        return FoldOutcome(None, 0, None, None)

    def degrade(reason: str, calls: int) -> FoldOutcome:
        em_state = emergency_fold(inputs, trigger=trigger, reason=reason)
        split_index = em_state.api_start_index if em_state is not None else None
        return FoldOutcome(em_state, calls, reason, split_index)

    if summarize is None:
        return degrade("no summarizer is available", 0)
    folded = inputs.window.between(start, split)
    summary, run = await summarize_range(
        folded,
        start,
        inputs=inputs,
        previous_summary=state.summary_message if state is not None else None,
        instructions=instructions,
        summarize=summarize,
        after_view=after_view_for(inputs, planner, folded, split, summary_max_tokens(inputs)),
    )
    if summary is None:
        return degrade(run.problem or "the summarizer failed", run.calls)

    new_state = CompactionState(
        version=(state.version if state is not None else 0) + 1,
        compacted_at=inputs.now,
        summary_message=summary,
        api_start_index=split,
        summarized_range=SummarizedRange(
            from_index=start, to_index=split, message_count=split - start
        ),
        strategy=strategy_of(inputs.settings, run),
        trigger=trigger,
        tokens_before=planner.view_tokens(start, state),
        tokens_after=0,
        model=inputs.model,
        degraded=False,
    )
    new_state = finish_summary(new_state, planner, inputs, inputs.said(start, folded), state)
    if input_budget is not None and new_state.tokens_after > input_budget:
        return degrade("the folded view would not fit the budget", run.calls)
    new_state = with_fold_cost(new_state, run.input_tokens, planner, inputs, folded, split)
    return FoldOutcome(new_state, run.calls, None, split)


def strategy_of(settings: CompactionSettings, run: SummaryRun) -> Strategy:
    return "free-form" if run.free_form else settings.strategy


async def resummarize(
    inputs: FoldInputs,
    *,
    folded: Sequence[Message],
    previous: CompactionState | None,
    summarize: Summarizer,
) -> CompactionState | None:
    """Replace an emergency digest by a model summary of the messages it stands for.

    `inputs.state` is the current fold, made by `emergency_fold`, and `inputs.window`
    the display history from its `api_start_index` as it is now (the view's size, and
    so the budget check and `tokens_before/after`, count it). `previous` is the fold it
    stacked on (None for none), whose summary is stacked on again; `folded` is
    `display[previous.api_start_index (0 without previous) : degraded.api_start_index]`,
    the messages the digest replaced. `previous` may also be an earlier fold of the same
    lineage (skipping digests stacked on digests); `summarized_range` then starts at its
    `api_start_index`, otherwise it equals the degraded fold's.

    The split does not move (same `api_start_index`), so the next request only swaps the
    digest for the summary. The summary is made exactly as `fold` makes one (summarizer
    budget, masking, chunks and merges, every answer judged, free-form kept,
    the person's details carried) and cut to the target like a fold's. Returns None when
    the summarizer fails again (exception, empty answer) or when the view with the
    summary would reach the soft threshold (the next turn would fold again); the digest
    then stays. Never raises on a summarizer failure; cancellation propagates.
    """
    degraded = inputs.state
    if degraded is None or not degraded.degraded:
        raise ValueError("the current fold is not degraded")
    start = previous.api_start_index if previous is not None else 0
    split = degraded.api_start_index
    if len(folded) != split - start:
        raise ValueError(
            f"{len(folded)} folded messages given for the range {start}:{split} of the fold"
        )
    if inputs.window.start != split:
        raise ValueError(f"the window starts at {inputs.window.start}, the fold at {split}")
    input_budget = inputs.budget.input_budget
    settings = inputs.settings
    planner = inputs.planner()
    tokens_before = planner.view_tokens(split, degraded)
    soft_limit = settings.threshold * input_budget if input_budget is not None else None
    if soft_limit is not None and planner.fixed + planner.frame + planner.tail_tokens(split) >= (
        soft_limit
    ):
        return None  # no summary at all would keep the view under the threshold
    summary, run = await summarize_range(
        folded,
        start,
        inputs=inputs,
        previous_summary=previous.summary_message if previous is not None else None,
        instructions=None,
        summarize=summarize,
    )
    if summary is None:
        return None
    new_state = CompactionState(
        version=degraded.version + 1,
        compacted_at=inputs.now,
        summary_message=summary,
        api_start_index=split,
        summarized_range=SummarizedRange(
            from_index=start, to_index=split, message_count=split - start
        ),
        strategy=strategy_of(settings, run),
        trigger=degraded.trigger,
        tokens_before=tokens_before,
        tokens_after=0,
        model=inputs.model,
        degraded=False,
    )
    new_state = finish_summary(new_state, planner, inputs, inputs.said(start, folded), previous)
    if soft_limit is not None and new_state.tokens_after >= soft_limit:
        return None
    return new_state.model_copy(update={"summary_input_tokens": run.input_tokens})


__all__ = [
    "FoldInputs",
    "FoldOutcome",
    "Summarizer",
    "SummaryRequest",
    "choose_split",
    "fold",
    "pick_split",
    "planned_split",
    "request_tokens",
    "resummarize",
    "safe_split_points",
    "summary_output_tokens",
    "summary_to_message",
]
