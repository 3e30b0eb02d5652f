"""A fold's summary asked after the conversation's own view, and when it is not.

The engine asks one `after_view` request (the chat layer sends it after the view, read
back from the prompt cache) whose prompt names what to summarize and what stays; the
folded messages are not sent again. An unusable answer is asked again on its own, and
without `summary_after_view` (another summarizer model) every request is on its own.
"""

from __future__ import annotations

from fold_setup import BUDGET, COUNTER, agent_session, run_fold, view_tokens
from strategies import ScriptedSummarizer, summary_of

from foldline.core.budget import Budget
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


# On a local server that runs one request at a time (`summary_asked_once`) the request
# after the view is the fold's only one: a second request of its own would make the
# server evaluate the whole folded text again while the person waits.


async def test_on_a_local_server_an_answer_without_headings_is_kept_in_one_call() -> None:
    free_form = "request 3: please handle item 3. Item 3 was read from src/m3.py and done."
    summarizer = ScriptedSummarizer(COUNTER, script=[free_form])
    outcome = await run_fold(
        agent_session(12), summarizer, summary_after_view=True, summary_asked_once=True
    )
    assert outcome.state is not None and outcome.degraded_reason is None
    (request,) = summarizer.requests
    assert request.after_view
    assert "Item 3 was read" in outcome.state.summary_message
    # Elsewhere the same answer is asked again on its own.
    hosted = ScriptedSummarizer(COUNTER, script=[free_form])
    await run_fold(agent_session(12), hosted, summary_after_view=True)
    assert [r.after_view for r in hosted.requests] == [True, False]


async def test_on_a_local_server_a_refused_answer_falls_back_to_the_digest() -> None:
    invented = "The Drugnabels-Fantasie festival opens in Vienna on 3 March with Olaf Brandt."
    summarizer = ScriptedSummarizer(COUNTER, script=[invented])
    outcome = await run_fold(
        agent_session(12), summarizer, summary_after_view=True, summary_asked_once=True
    )
    assert len(summarizer.requests) == 1
    assert outcome.state is not None and outcome.state.degraded
    assert outcome.degraded_reason and "Drugnabels" not in outcome.state.summary_message


async def test_on_a_local_server_the_answers_reserve_is_room_for_the_request() -> None:
    # A view over the input budget with the request, but within the window once the
    # summary's own answer is set aside: asked after the view on a local server only.
    budget = Budget(context_window=44_000, max_output_tokens=8_000)
    display = agent_session(16)
    assert budget.input_budget is not None
    assert budget.input_budget < view_tokens(display, None) < budget.context_window
    local = ScriptedSummarizer(COUNTER)
    await run_fold(display, local, summary_after_view=True, summary_asked_once=True, budget=budget)
    hosted = ScriptedSummarizer(COUNTER)
    await run_fold(display, hosted, summary_after_view=True, budget=budget)
    assert [r.after_view for r in local.requests] == [True]
    assert [r.after_view for r in hosted.requests] == [False]


async def test_a_small_budget_gets_the_brief_prompt_with_every_heading() -> None:
    """On a local model's 2k or 4k window the full rules and section descriptions would
    take a third of the budget: the request is the brief one, with the same headings."""
    from foldline.core.prompts import STRUCTURED_HEADINGS, after_view_prompt

    small = Budget(context_window=2_048, max_output_tokens=512)
    display = [user(f"request {i}: the parcel for Oslo weighs {i} kg") for i in range(40)]
    asked: dict[str, str] = {}
    for name, budget in (("small", small), ("large", BUDGET)):
        summarizer = ScriptedSummarizer(COUNTER)
        await run_fold(display, summarizer, summary_after_view=True, budget=budget)
        asked[name] = summarizer.requests[0].prompt
    for prompt in asked.values():
        assert all(f"## {heading}" in prompt for heading in STRUCTURED_HEADINGS)
    assert "What the assistant is working on right now" in asked["large"]
    assert "What the assistant is working on right now" not in asked["small"]
    # The instructions themselves, without the folded text: under half the full ones.
    shapes = {
        brief: after_view_prompt(
            kept_messages=4,
            boundary="the end of the last folded message",
            previous_summary=True,
            strategy="structured",
            instructions=None,
            last_request="send the parcel",
            max_output_tokens=256,
            brief=brief,
        )
        for brief in (True, False)
    }
    assert COUNTER.count_text(shapes[True]) < COUNTER.count_text(shapes[False]) / 2
