"""Re-summarizing an emergency fold: the digest replaced by a model summary, same split."""

from __future__ import annotations

import asyncio

import pytest
from fold_setup import (
    BUDGET,
    COUNTER,
    SETTINGS,
    SYSTEM,
    TOOLS,
    agent_session,
    fold_inputs,
    request_size,
    run_emergency,
    view_tokens,
)
from strategies import ScriptedSummarizer, structured_summary, text_of

from foldline.core.budget import Budget
from foldline.core.compaction import resummarize, summary_output_tokens
from foldline.core.messages import (
    HistoryWindow,
    Message,
    assistant,
    user,
)
from foldline.core.prompts import missing_headings
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, SummarizedRange

NOW = "2025-05-05T10:00:00Z"
LATER = "2025-05-05T11:00:00Z"


def degrade(
    display: list[Message],
    state: CompactionState | None = None,
    budget: Budget = BUDGET,
    settings: CompactionSettings = SETTINGS,
) -> CompactionState:
    """The emergency fold of `display` (over `state`), as `fold` makes it on a failure."""
    degraded = run_emergency(
        display, state, budget=budget, settings=settings, trigger="overflow", now=NOW
    )
    assert degraded is not None and degraded.degraded
    return degraded


async def resummarize_display(
    display: list[Message],
    degraded: CompactionState,
    summarize: ScriptedSummarizer,
    previous: CompactionState | None = None,
    **kw: object,
) -> CompactionState | None:
    start = previous.api_start_index if previous is not None else 0
    split = degraded.api_start_index
    window = HistoryWindow(split, tuple(display[split:]))
    args: dict[str, object] = {"now": LATER, "model": "cheap-model"}
    args.update(kw)
    return await resummarize(
        fold_inputs(window, degraded, **args),
        folded=display[start:split],
        previous=previous,
        summarize=summarize,
    )


async def test_a_good_summary_replaces_the_digest_at_the_same_split(
    summarizer: ScriptedSummarizer,
) -> None:
    display = agent_session(18)
    assert view_tokens(display, None) > BUDGET.input_budget  # type: ignore[operator]
    degraded = degrade(display)
    split = degraded.api_start_index

    state = await resummarize_display(display, degraded, summarizer)

    assert state is not None and not state.degraded
    assert state.strategy == "structured" and state.trigger == "overflow"
    assert state.api_start_index == split
    assert state.summarized_range == degraded.summarized_range
    assert state.version == degraded.version + 1
    assert state.compacted_at == LATER and state.model == "cheap-model"
    assert missing_headings(state.summary_message) == []
    assert state.summary_message != degraded.summary_message
    # Before and after are the view with the digest and with the summary, tail included.
    assert state.tokens_before == view_tokens(display, degraded)
    assert state.tokens_after == view_tokens(display, state)
    assert state.tokens_after < SETTINGS.threshold * BUDGET.input_budget  # type: ignore[operator]
    # The summarizer read exactly the folded messages: #0 .. #split-1.
    assert len(summarizer.requests) == 1
    prompt = summarizer.requests[0].prompt
    assert "[#0 user]" in prompt and f"[#{split - 1} " in prompt
    assert f"[#{split} " not in prompt
    assert "<previous-summary>" not in prompt


async def test_the_summary_stacks_on_the_fold_the_digest_replaced(
    summarizer: ScriptedSummarizer,
) -> None:
    display = agent_session(8) + agent_session(14, first=8)
    first_split = 32  # display[32] is the user message of turn 8
    previous = CompactionState(
        version=3,
        compacted_at=NOW,
        summary_message=structured_summary(300, COUNTER, marker="EARLIER-WORK-7731"),
        api_start_index=first_split,
        summarized_range=SummarizedRange(from_index=0, to_index=32, message_count=32),
        strategy="structured",
        trigger="auto",
        tokens_before=0,
        tokens_after=0,
    )
    degraded = degrade(display, previous)
    assert degraded.summarized_range.from_index == first_split

    state = await resummarize_display(display, degraded, summarizer, previous=previous)

    assert state is not None and not state.degraded
    assert state.api_start_index == degraded.api_start_index
    assert state.summarized_range == degraded.summarized_range
    prompt = summarizer.requests[0].prompt
    assert "EARLIER-WORK-7731" in prompt
    assert f"[#{first_split} user]" in prompt and f"[#{first_split - 1} " not in prompt
    assert state.tokens_before == view_tokens(display, degraded)


async def test_a_summary_in_prose_replaces_the_digest_as_free_form() -> None:
    display = agent_session(14)
    degraded = degrade(display)
    prose = "Just some prose without the sections."
    state = await resummarize_display(
        display, degraded, ScriptedSummarizer(COUNTER, script=[prose, prose])
    )
    assert state is not None and not state.degraded and state.strategy == "free-form"
    assert prose in state.summary_message


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("503 overloaded"), ""],
    ids=["exception", "empty"],
)
async def test_a_failing_summarizer_leaves_the_digest(failure: object) -> None:
    display = agent_session(14)
    degraded = degrade(display)
    summarize = ScriptedSummarizer(COUNTER, script=[failure, failure])  # type: ignore[list-item]

    state = await resummarize_display(display, degraded, summarize)

    assert state is None
    assert len(summarize.requests) == 2  # one retry, then give up
    assert summarize.script == []


async def test_a_too_short_answer_is_refused_without_asking_again() -> None:
    display = agent_session(14)
    degraded = degrade(display)
    summarize = ScriptedSummarizer(COUNTER, script=["No headings here."])

    state = await resummarize_display(display, degraded, summarize)

    assert state is None  # the digest stays
    assert len(summarize.requests) == 1


async def test_a_prose_answer_replaces_the_digest_at_the_first_call() -> None:
    display = agent_session(14)
    degraded = degrade(display)
    prose = "The person asked to handle each item, one request at a time, and read files."
    summarize = ScriptedSummarizer(COUNTER, script=[prose])

    state = await resummarize_display(display, degraded, summarize)

    assert state is not None and not state.degraded and state.strategy == "free-form"
    assert len(summarize.requests) == 1


async def test_cancellation_is_not_swallowed() -> None:
    display = agent_session(14)
    degraded = degrade(display)
    summarize = ScriptedSummarizer(COUNTER, script=[asyncio.CancelledError()])

    with pytest.raises(asyncio.CancelledError):
        await resummarize_display(display, degraded, summarize)


async def test_a_large_folded_range_is_chunked_within_the_summarizer_budget() -> None:
    budget = Budget(context_window=6_000, max_output_tokens=1_000)  # input budget 5k
    settings = CompactionSettings(keep_recent_tokens=500)
    # Long prose that masking cannot shrink: ~700 tokens of user text per turn.
    display: list[Message] = []
    for i in range(24):
        display.append(user(f"request {i}: " + text_of(2_800, i)))
        display.append(assistant(f"answer {i}: " + text_of(400, i)))
    degraded = degrade(display, budget=budget, settings=settings)
    folded = display[: degraded.api_start_index]
    capacity = budget.input_budget - summary_output_tokens(budget)  # type: ignore[operator]
    assert sum(COUNTER.count_message(m) for m in folded) > 2 * capacity
    summarize = ScriptedSummarizer(COUNTER)

    state = await resummarize_display(
        display, degraded, summarize, budget=budget, settings=settings
    )

    assert state is not None and not state.degraded
    assert state.api_start_index == degraded.api_start_index
    purposes = [r.purpose for r in summarize.requests]
    assert purposes.count("chunk") >= 2 and purposes[-1] == "merge"
    assert max(request_size(r) for r in summarize.requests) <= capacity
    assert state.tokens_after == view_tokens(display, state)
    assert state.tokens_after < settings.threshold * budget.input_budget  # type: ignore[operator]


def big_tail_case(tail_share: float) -> tuple[list[Message], CompactionState]:
    """A degraded fold at index 2 whose kept tail alone is `tail_share` of the budget."""
    input_budget = BUDGET.input_budget
    assert input_budget is not None
    display = [user("request 0: start"), assistant("started")]
    tail_tokens = int(tail_share * input_budget)
    while COUNTER.count_request(SYSTEM, display[2:], TOOLS) < tail_tokens:
        n = len(display)
        display += [user(f"request {n}: " + text_of(3_000, n)), assistant("ok " + text_of(800))]
    degraded = CompactionState(
        version=1,
        compacted_at=NOW,
        summary_message="Emergency digest: request 0.",
        api_start_index=2,
        summarized_range=SummarizedRange(from_index=0, to_index=2, message_count=2),
        strategy="emergency",
        trigger="auto",
        tokens_before=0,
        tokens_after=0,
        degraded=True,
    )
    return display, degraded


async def test_no_summary_is_asked_for_when_the_tail_alone_reaches_the_threshold() -> None:
    display, degraded = big_tail_case(SETTINGS.threshold + 0.01)
    summarize = ScriptedSummarizer(COUNTER)

    assert await resummarize_display(display, degraded, summarize) is None
    assert summarize.requests == []


async def test_a_summary_that_would_push_the_view_over_the_threshold_is_refused() -> None:
    # Over the target, under the threshold.
    display, degraded = big_tail_case(SETTINGS.threshold - 0.04)
    summary_max = summary_output_tokens(BUDGET)
    big = ScriptedSummarizer(COUNTER, default=lambda r: structured_summary(summary_max, COUNTER))
    small = ScriptedSummarizer(COUNTER)  # ~200 tokens

    assert await resummarize_display(display, degraded, big) is None
    assert len(big.requests) == 1
    state = await resummarize_display(display, degraded, small)
    assert state is not None
    assert state.tokens_after < SETTINGS.threshold * BUDGET.input_budget  # type: ignore[operator]


async def test_a_state_that_is_not_degraded_is_refused(summarizer: ScriptedSummarizer) -> None:
    display = agent_session(14)
    healthy = degrade(display).model_copy(update={"degraded": False})

    with pytest.raises(ValueError, match="not degraded"):
        await resummarize_display(display, healthy, summarizer)
    assert summarizer.requests == []
