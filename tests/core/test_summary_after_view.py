"""A fold's summary asked after the conversation's own view, and when it is not.

The engine asks one `after_view` request (the chat layer sends it after the view, read
back from the prompt cache) whose prompt names what to summarize and what stays; the
folded messages are not sent again. An unusable answer is asked again on its own, and
without `summary_after_view` (another summarizer model) every request is on its own.
"""

from __future__ import annotations

from fold_setup import BUDGET, COUNTER, agent_session, run_fold
from strategies import ScriptedSummarizer, summary_of

from foldline.core.messages import user
from foldline.core.prompts import is_fold_request, missing_headings


async def test_the_summary_is_asked_after_the_view() -> None:
    summarizer = ScriptedSummarizer(COUNTER)
    display = agent_session(12)
    outcome = await run_fold(display, summarizer, summary_after_view=True)
    state = outcome.state
    assert state is not None and outcome.degraded_reason is None
    assert outcome.summarizer_calls == 1
    (request,) = summarizer.requests
    assert request.after_view and request.system == ""
    assert is_fold_request(request.prompt)
    # The folded messages are in the view, not in the prompt.
    assert "<transcript>" not in request.prompt and "request 0:" not in request.prompt
    kept = len(display) - state.api_start_index
    assert f"except its last {kept} messages" in request.prompt
    assert not missing_headings(state.summary_message)
    # Its input is billed mostly as cache reads: far less than the view it reads.
    assert 0 < state.summary_input_tokens < state.tokens_before // 2


async def test_an_unusable_answer_after_the_view_is_asked_again_on_its_own() -> None:
    summarizer = ScriptedSummarizer(COUNTER, script=[""])
    outcome = await run_fold(agent_session(12), summarizer, summary_after_view=True)
    assert outcome.state is not None and outcome.degraded_reason is None
    first, second = summarizer.requests
    assert first.after_view and not second.after_view
    assert "<transcript>" in second.prompt and second.system


async def test_without_a_shared_view_the_summary_is_asked_on_its_own() -> None:
    summarizer = ScriptedSummarizer(COUNTER)
    outcome = await run_fold(agent_session(12), summarizer)
    assert outcome.state is not None
    (request,) = summarizer.requests
    assert not request.after_view and not is_fold_request(request.prompt)
    assert "<transcript>" in request.prompt


async def test_a_view_too_large_for_the_budget_is_summarized_on_its_own() -> None:
    summarizer = ScriptedSummarizer(COUNTER)
    # Far over the budget: the view with the request would not fit.
    display = agent_session(40)
    assert BUDGET.input_budget is not None
    outcome = await run_fold(display, summarizer, summary_after_view=True)
    assert outcome.state is not None
    assert summarizer.requests and not summarizer.requests[0].after_view


async def test_an_answer_after_the_view_may_carry_the_earlier_summary_forward() -> None:
    # The names are stated before the first fold only; the second fold's range never
    # mentions them, but its view opens with the first summary, which carries them.
    fact = "request 0: Ingrid Halvorsen signs every Zephyr release."
    display = [user(fact), *agent_session(12, first=1)]
    first = await run_fold(display, ScriptedSummarizer(COUNTER))
    assert first.state is not None and "Ingrid Halvorsen" in first.state.summary_message
    display += agent_session(12, first=13)
    summarizer = ScriptedSummarizer(
        COUNTER, default=lambda request: summary_of(request.prompt, 300, COUNTER) + "\n" + fact
    )
    second = await run_fold(display, summarizer, first.state, summary_after_view=True)
    assert second.state is not None and second.degraded_reason is None
    # One request, after the view, kept: not refused as inventing the earlier names.
    (request,) = summarizer.requests
    assert request.after_view
    assert "Ingrid Halvorsen" in second.state.summary_message
