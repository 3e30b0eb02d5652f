"""A hand-off: a new conversation that continues an old one from a chosen message.

The new conversation starts clean: its display history holds only the messages the
person chose to keep (the last N up to the point), and its model view starts with a
summary of everything before them, stored as the new conversation's first fold
(trigger `handoff`, summarizing none of its own messages). The pins of the summarized
part ride in that summary, verbatim, under the same "Pinned by the person" block a fold
gives them, so nothing the person pinned is lost.

Which summary: when an existing fold ends exactly where the kept messages begin and the
person gave no instructions, its summary already says what is needed and is reused (no
model call). Otherwise a fresh one is written, stacked on the latest fold that ends at
or before that point (its summary plus the messages after it), with the instructions, by
the same summarizer a fold uses, and fitted to the new view like a fold's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from foldline.core.compaction import Summarizer, strategy_of, summarize_range
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import HistoryWindow
from foldline.core.pins import Pin, pins_block
from foldline.core.state import CompactionState, SummarizedRange
from foldline.core.summary_fit import finish_summary


@dataclass(frozen=True)
class HandoffBounds:
    """`[0, end)` is what the hand-off continues; `[cut, end)` is copied verbatim and
    `[0, cut)` summarized."""

    end: int
    cut: int


def handoff_bounds(window: HistoryWindow, point: int, keep_last: int) -> HandoffBounds:
    """The bounds for "from `point` on, keeping the last `keep_last` messages".

    `window` holds the display history around the point (from at least `keep_last`
    messages before it). The tool results that answer the point's calls come along
    (a call is never separated from its result), and the kept messages never begin with
    a tool message: the cut moves back to the call it answers, so a little more than
    `keep_last` may be kept.
    """
    end = point + 1
    while end < window.end and window.at(end).role == "tool":
        end += 1
    cut = max(end - keep_last, 0)
    while cut > window.start and cut < end and window.at(cut).role == "tool":
        cut -= 1
    return HandoffBounds(end=end, cut=cut)


def reusable_fold(chain: Sequence[CompactionState], cut: int) -> CompactionState | None:
    """The fold of the old conversation whose summary can be reused as it is: one that
    applies (on `chain`, the current fold and its ancestors) and ends exactly at `cut`.
    An emergency digest is not reused: the new conversation gets a model summary."""
    return next(
        (state for state in chain if state.api_start_index == cut and not state.degraded), None
    )


def base_fold(chain: Sequence[CompactionState], cut: int) -> CompactionState | None:
    """The fold a fresh hand-off summary stacks on: the latest one on `chain` (newest
    first) that ends at or before `cut`; None = summarize from the first message."""
    return next((state for state in chain if state.api_start_index <= cut), None)


def _new_state(
    summary: str, *, origin: CompactionState | None, now: str, model: str | None
) -> CompactionState:
    return CompactionState(
        version=1,
        compacted_at=now,
        summary_message=summary,
        api_start_index=0,
        summarized_range=SummarizedRange(from_index=0, to_index=0, message_count=0),
        strategy=origin.strategy if origin is not None else "structured",
        trigger="handoff",
        tokens_before=0,
        tokens_after=0,
        model=model,
        degraded=False,
        person_words=origin.person_words if origin is not None else (),
        carried_details=origin.carried_details if origin is not None else (),
        details_total=origin.details_total if origin is not None else 0,
        details_kept=origin.details_kept if origin is not None else 0,
        details_appended=origin.details_appended if origin is not None else 0,
    )


def _with_pins(state: CompactionState, pins: Sequence[Pin], cut: int) -> CompactionState:
    block = pins_block(pins, cut)
    if not block:
        return state
    return state.model_copy(update={"summary_message": f"{state.summary_message}\n\n{block}"})


def reused_handoff_state(
    fold: CompactionState, pins: Sequence[Pin], *, now: str
) -> CompactionState:
    """The new conversation's first fold from an existing fold's summary (no model call)."""
    state = _new_state(fold.summary_message, origin=fold, now=now, model=fold.model)
    return _with_pins(state, pins, fold.api_start_index)


async def fresh_handoff_state(
    old: FoldInputs,
    new: FoldInputs,
    *,
    cut: int,
    summarize: Summarizer,
    instructions: str | None,
) -> CompactionState | None:
    """A fresh summary of the old conversation up to `cut`, as the new one's first fold.

    `old.state` is the fold it stacks on (`base_fold`) and `old.window` the old display
    history from that fold's `api_start_index` up to `cut`; `old.pins` are the old
    conversation's pins. `new` describes the new conversation (its window: the kept
    messages from index 0; its own budget and counter). None when the summarizer failed.
    """
    start = old.start
    folded = old.window.between(start, cut)
    previous = old.state
    summary, run = await summarize_range(
        folded,
        start,
        inputs=old,
        previous_summary=previous.summary_message if previous is not None else None,
        instructions=instructions,
        summarize=summarize,
    )
    if summary is None:
        return None
    state = _new_state(summary, origin=None, now=old.now, model=old.model)
    state = state.model_copy(update={"strategy": strategy_of(old.settings, run)})
    planner = new.planner()
    state = finish_summary(state, planner, new, old.said(start, folded), previous)
    state = _with_pins(state, old.pins, cut)
    return state.model_copy(update={"tokens_after": planner.view_tokens(0, state)})
