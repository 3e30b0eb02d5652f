"""The last step of every fold: the person's words carried forward, the summary fitted.

The person's own words (those the previous fold kept, then the folded messages') are
kept after the summary within their budget, and the summary (or digest) is checked
against the details they state. Then the summary's own text is cut, if needed, so the
folded view meets the fold's target; the person's words are never cut for it (they
have their own budget).
"""

from __future__ import annotations

from collections.abc import Sequence

from foldline.core.carry_forward import carry_forward, kept_words, stack_words
from foldline.core.fold_inputs import FoldInputs
from foldline.core.person_words import words_cap
from foldline.core.planning import SLACK_TOKENS, FoldPlanner
from foldline.core.state import CompactionState, SaidWords
from foldline.core.truncation import truncate_tool_output


def finish_summary(
    state: CompactionState,
    planner: FoldPlanner,
    inputs: FoldInputs,
    said: Sequence[SaidWords],
    previous: CompactionState | None,
) -> CompactionState:
    """Keep the person's words (`previous`'s, then `said`, those of the folded messages)
    after the summary, count their details, then fit the summary to the view.

    The summary's own text is cut if the view overshoots the target (or the budget,
    when the kept tail alone is past the target); the person's words are never cut for
    it (they have their own cap). A cut can remove details the summary had kept, so the
    check runs again on the cut text.
    """
    count_text = inputs.counter.count_text
    cap = words_cap(inputs.budget.input_budget, inputs.settings.person_words_share)
    body = state.summary_message
    words = stack_words(kept_words(previous), said, cap, count_text)
    for attempt in range(3):
        carry = carry_forward(
            body,
            words=words,
            earlier_details=previous.carried_details if previous is not None else (),
            said=said,
        )
        state = carry.applied_to(state.model_copy(update={"summary_message": body}))
        if attempt == 2:
            break
        cut = _cut_body(state, body, planner, inputs)
        if cut == body:
            break
        body = cut
    return state.model_copy(
        update={"tokens_after": planner.view_tokens(state.api_start_index, state)}
    )


def _cut_body(
    state: CompactionState,
    body: str,
    planner: FoldPlanner,
    inputs: FoldInputs,
) -> str:
    """`body` cut so that the view with it as the summary meets the target (or the
    budget), or `body` itself when it already does or cannot be cut further."""
    input_budget = inputs.budget.input_budget
    if input_budget is None:
        return body
    tokens = planner.view_tokens(state.api_start_index, state)
    target = int(inputs.settings.target * input_budget)
    without_summary = planner.fixed + planner.frame + planner.tail_tokens(state.api_start_index)
    limit = target if without_summary <= target else input_budget
    count_text = planner.counter.count_text
    for _ in range(6):
        if tokens <= limit:
            break
        cap = count_text(body) - (tokens - limit) - SLACK_TOKENS
        if cap <= 0:
            break
        body = truncate_tool_output(body, cap, count_text, category="file").text
        trial = state.model_copy(update={"summary_message": body})
        tokens = planner.view_tokens(state.api_start_index, trial)
    return body
