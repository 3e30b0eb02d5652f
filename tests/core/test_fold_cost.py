"""A fold's cost and saving: the arithmetic, and what `fold` records for it."""

from __future__ import annotations

import math

import pytest
from fold_setup import BUDGET, COUNTER, SETTINGS, agent_session, request_size, run_fold
from strategies import ScriptedSummarizer

from foldline.core.fold_cost import (
    ANTHROPIC_WRITE,
    CACHE_READ,
    MAX_SAVING_TURNS,
    OPENAI_WRITE,
    fold_cost,
    growth_per_turn,
    turns_until_next_fold,
)
from foldline.core.planning import kept_tail_tokens
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState


def test_a_fold_costs_its_summary_and_the_rewrite_premium() -> None:
    cost = fold_cost(tokens_before=10_000, tokens_after=4_000, summary_input_tokens=7_000, turns=8)
    assert cost.summary_input_tokens == 7_000 and cost.rewritten_tokens == 4_000
    assert cost.cost == pytest.approx(7_000 + 4_000 * (ANTHROPIC_WRITE - CACHE_READ))
    assert cost.saved_per_turn == 6_000
    assert cost.saving == pytest.approx(6_000 * CACHE_READ * 8)


def test_openai_has_no_write_premium_so_a_fold_costs_less_there() -> None:
    anthropic = fold_cost(tokens_before=9, tokens_after=5, summary_input_tokens=3, turns=1)
    openai = fold_cost(
        tokens_before=9, tokens_after=5, summary_input_tokens=3, turns=1, write_price=OPENAI_WRITE
    )
    assert openai.cost < anthropic.cost and openai.saving == anthropic.saving


def test_a_fold_that_grew_the_view_saves_nothing() -> None:
    cost = fold_cost(tokens_before=5_000, tokens_after=6_000, summary_input_tokens=1, turns=4)
    assert cost.saved_per_turn == 0 and cost.saving == 0


@pytest.mark.parametrize(
    ("after", "threshold", "growth", "turns"),
    [
        (4_000, 10_000, 600.0, math.ceil(6_000 / 600)),
        (10_500, 10_000, 600.0, 1),  # already past it: the next turn folds again
        (4_000, 10_000, 0.0, MAX_SAVING_TURNS),  # a view that does not grow
        (0, 10**9, 1.0, MAX_SAVING_TURNS),
    ],
)
def test_turns_until_the_next_fold(after: int, threshold: int, growth: float, turns: int) -> None:
    assert turns_until_next_fold(after, threshold, growth) == turns


def test_growth_per_turn_is_per_message_of_the_person() -> None:
    assert growth_per_turn(6_000, 4) == 1_500
    assert growth_per_turn(6_000, 0) == 0


async def test_a_fold_records_what_its_summarizer_read_and_how_long_it_saves(
    summarizer: ScriptedSummarizer,
) -> None:
    display = agent_session(12)
    state = (await run_fold(display, summarizer)).state
    assert state is not None
    assert state.summary_input_tokens == sum(request_size(r) for r in summarizer.requests) > 0
    # Twelve turns grew the view evenly; the folded ones tell the pace.
    folded = display[: state.api_start_index]
    turns = sum(m.role == "user" for m in folded)
    assert turns > 0
    threshold = int(SETTINGS.threshold * BUDGET.input_budget)
    growth = growth_per_turn(sum(COUNTER.count_message(m) for m in folded), turns)
    assert state.saving_turns == turns_until_next_fold(state.tokens_after, threshold, growth)
    assert state.saving_turns > 1


async def test_the_digest_records_no_summarizer_input() -> None:
    state = (await run_fold(agent_session(12), None)).state
    assert state is not None and state.degraded
    assert state.summary_input_tokens == 0 and state.saving_turns == 0


def test_the_kept_tail_is_a_share_of_the_budget_unless_the_person_asks() -> None:
    settings = CompactionSettings(keep_recent_tokens=8_000, keep_recent_share=0.10)
    assert kept_tail_tokens(settings, 12_288, "auto") == 1_228
    assert kept_tail_tokens(settings, 12_288, "overflow") == 1_228
    assert kept_tail_tokens(settings, 192_000, "auto") == 8_000
    assert kept_tail_tokens(settings, 12_288, "manual") == 8_000
    assert kept_tail_tokens(settings, 12_288, "handoff") == 8_000
    assert kept_tail_tokens(settings, None, "auto") == 8_000


async def test_an_automatic_fold_keeps_a_shorter_tail_than_one_asked_for(
    summarizer: ScriptedSummarizer,
) -> None:
    # 40k budget: a 5% share is 2,000 tokens, under the 6,000 asked for.
    settings = CompactionSettings(keep_recent_tokens=6_000, keep_recent_share=0.05)
    display = agent_session(12)
    auto = (await run_fold(display, summarizer, settings=settings)).state
    manual = (await run_fold(display, summarizer, settings=settings, trigger="manual")).state
    assert auto is not None and manual is not None

    def tail(state: CompactionState) -> int:
        return sum(COUNTER.count_message(m) for m in display[state.api_start_index :])

    assert manual.api_start_index < auto.api_start_index
    assert tail(manual) >= 6_000 > tail(auto)
    assert auto.tokens_after < manual.tokens_after
