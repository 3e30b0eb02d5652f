"""Where a hand-off cuts: calls stay with their results, kept messages never begin with
a tool message, and which fold's summary can be reused."""

from __future__ import annotations

from foldline.core.handoff import base_fold, handoff_bounds, reusable_fold
from foldline.core.messages import HistoryWindow, Message, TextPart, ToolCallPart, ToolResultPart
from foldline.core.state import CompactionState, SummarizedRange


def _text(role: str, text: str) -> Message:
    return Message(role=role, parts=(TextPart(text=text),))  # type: ignore[arg-type]


CALL = Message(role="assistant", parts=(ToolCallPart(id="c", name="t", input={}),))
RESULT = Message(role="tool", parts=(ToolResultPart(call_id="c", name="t", output="ok"),))
HISTORY = [
    _text("user", "q0"),  # 0
    _text("assistant", "a0"),  # 1
    _text("user", "q1"),  # 2
    CALL,  # 3
    RESULT,  # 4
    _text("assistant", "a1"),  # 5
]


def test_the_results_of_the_point_s_calls_come_along() -> None:
    bounds = handoff_bounds(HistoryWindow(0, tuple(HISTORY)), point=3, keep_last=0)
    assert (bounds.end, bounds.cut) == (5, 5)


def test_kept_messages_never_begin_with_a_tool_message() -> None:
    window = HistoryWindow(0, tuple(HISTORY))
    bounds = handoff_bounds(window, point=5, keep_last=2)
    assert (bounds.end, bounds.cut) == (6, 3)  # moved back to the call
    assert handoff_bounds(window, point=5, keep_last=3) == bounds
    assert handoff_bounds(window, point=5, keep_last=4).cut == 2
    assert handoff_bounds(window, point=5, keep_last=100).cut == 0
    # A window that starts later (only the part around the point is loaded).
    late = HistoryWindow(2, tuple(HISTORY[2:]))
    assert handoff_bounds(late, point=5, keep_last=2).cut == 3


def _fold(version: int, start: int, degraded: bool = False) -> CompactionState:
    return CompactionState(
        version=version,
        compacted_at="2026-01-01T00:00:00Z",
        summary_message=f"summary {version}",
        api_start_index=start,
        summarized_range=SummarizedRange(from_index=0, to_index=start, message_count=start),
        strategy="emergency" if degraded else "structured",
        trigger="auto",
        tokens_before=100,
        tokens_after=10,
        degraded=degraded,
    )


def test_which_fold_is_reused_and_which_is_stacked_on() -> None:
    chain = [_fold(3, 8), _fold(2, 5), _fold(1, 2)]  # newest first
    assert reusable_fold(chain, 5) == chain[1]
    assert reusable_fold(chain, 6) is None
    assert base_fold(chain, 6) == chain[1]
    assert base_fold(chain, 9) == chain[0]
    assert base_fold(chain, 1) is None
    assert reusable_fold([_fold(1, 5, degraded=True)], 5) is None
