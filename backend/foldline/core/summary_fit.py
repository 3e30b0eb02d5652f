"""The last step of every fold: the person's details carried forward, the summary fitted.

A summary the model wrote (or a digest) is checked against what the person said in the
folded messages; what it lost is appended verbatim. Then the summary's own text is cut,
if needed, so the folded view meets the fold's target; the appended details are never
cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from foldline.core.carry_forward import carry_forward, carry_tokens
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import Message
from foldline.core.planning import SLACK_TOKENS, FoldPlanner
from foldline.core.state import CompactionState
from foldline.core.truncation import truncate_tool_output


def finish_summary(
    state: CompactionState,
    planner: FoldPlanner,
    inputs: FoldInputs,
    folded: Sequence[Message],
    earlier: Sequence[str],
) -> CompactionState:
    """Carry the person's details forward, then fit the summary to the view.

    The summary's own text is cut if the view overshoots the target (or the budget,
    when the kept tail alone is past the target); the appended details are never cut
    (they have their own cap). A cut can remove details the summary had kept, so the
    check runs again on the cut text.
    """
    count_text = inputs.counter.count_text
    cap = carry_tokens(inputs.budget.input_budget)
    body = state.summary_message
    for attempt in range(3):
        carry = carry_forward(
            body, earlier=earlier, folded=folded, cap_tokens=cap, count_text=count_text
        )
        state = carry.applied_to(state)
        if attempt == 2:
            break
        cut = _cut_body(state, body, carry.section, planner, inputs)
        if cut == body:
            break
        body = cut
    return state.model_copy(
        update={"tokens_after": planner.view_tokens(state.api_start_index, state)}
    )


def _cut_body(
    state: CompactionState,
    body: str,
    section: str,
    planner: FoldPlanner,
    inputs: FoldInputs,
) -> str:
    """`body` cut so that the view with `body + section` meets the target (or the
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
        trial = state.model_copy(update={"summary_message": body + section})
        tokens = planner.view_tokens(state.api_start_index, trial)
    return body
