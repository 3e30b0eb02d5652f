"""How much a summary request may hold when `[compaction] model` is another model."""

from __future__ import annotations

from foldline.core.budget import Budget
from foldline.core.compaction import (
    SUMMARIZER_COUNT_MARGIN,
    summarizer_capacity,
    summary_output_tokens,
)

BIG = Budget(context_window=131072, max_output_tokens=2048)


def test_a_smaller_summarizer_caps_the_request_at_its_window_less_the_summary() -> None:
    small = Budget(context_window=16384, max_output_tokens=2048)
    summary = summary_output_tokens(BIG)
    assert summarizer_capacity(BIG, small) == int((16384 - summary) * SUMMARIZER_COUNT_MARGIN)


def test_a_separate_input_limit_is_the_summarizers_room() -> None:
    limited = Budget(context_window=400_000, max_output_tokens=128_000, input_limit=10_000)
    assert summarizer_capacity(BIG, limited) == int(10_000 * SUMMARIZER_COUNT_MARGIN)


def test_a_summarizer_as_large_as_the_conversations_model_sets_no_limit() -> None:
    assert summarizer_capacity(BIG, BIG) is None
    assert summarizer_capacity(BIG, Budget(context_window=1_000_000, max_output_tokens=0)) is None
    assert summarizer_capacity(BIG, Budget(context_window=0, max_output_tokens=0)) is None


def test_an_unlimited_conversation_is_still_capped_by_a_limited_summarizer() -> None:
    unlimited = Budget(context_window=0, max_output_tokens=0)
    small = Budget(context_window=16384, max_output_tokens=2048)
    capacity = summarizer_capacity(unlimited, small)
    assert capacity is not None and capacity < 16384
