"""What every fold reads, as one frozen value.

`fold`, `resummarize`, `emergency_fold` and `planned_split` all need the same view of a
conversation (its loaded window, current fold, counter, request frame, budget, settings,
pins) and the caller's clock reading. Passing them as one value keeps the three entry
points in step and lets the chat layer build it once per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from foldline.core.budget import Budget
from foldline.core.messages import History, HistoryWindow, Message, ToolSpec, as_window
from foldline.core.person_words import said_words
from foldline.core.pins import Pin, pins_tokens
from foldline.core.planning import FoldPlanner
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, SaidWords
from foldline.core.tokens import TokenCounter


@dataclass(frozen=True)
class FoldInputs:
    """The conversation as a fold sees it.

    `window` holds the display history from the current fold's `api_start_index` on
    (or all of it); `now` is an ISO timestamp (the engine reads no clock); `model` is the
    summarizer's name, recorded on the fold; `summarizer_budget` is the summarizer's own
    input budget when it differs from the conversation's model; `pins` are every pinned
    message of the conversation, folded or not.
    """

    window: HistoryWindow
    state: CompactionState | None
    counter: TokenCounter
    system: str
    tools: tuple[ToolSpec, ...]
    budget: Budget
    settings: CompactionSettings
    now: str
    model: str | None = None
    summarizer_budget: int | None = None
    summarizer_max_output: int | None = None
    """The most the summarizer (`[compaction] model`, when another model) may write in one
    answer: a summary asked for more would be refused."""
    pins: tuple[Pin, ...] = field(default=())
    summarizer_reads_files: bool = False
    """The summarizer takes images and PDFs: the folded files go to it as files (when they
    fit its budget), not only as their names and text."""
    summary_after_view: bool = False
    """The summarizer is the conversation's own model on a provider with a prompt cache:
    a fold's summary may be asked after the conversation's own view (read back from the
    cache) instead of in a request of its own that sends the folded messages again."""
    summary_asked_once: bool = False
    """The summarizer is a local server that runs one request at a time (its prompt cache
    holds the view the last turn sent): the summary asked after the view is the fold's
    only request. An answer without the structured headings is kept as written and one
    that is refused falls back to the digest, rather than a second request that would
    evaluate the whole folded text again while the person waits."""

    @classmethod
    def of(
        cls,
        display: History,
        state: CompactionState | None,
        *,
        counter: TokenCounter,
        system: str,
        tools: Sequence[ToolSpec],
        budget: Budget,
        settings: CompactionSettings,
        now: str,
        model: str | None = None,
        summarizer_budget: int | None = None,
        pins: Sequence[Pin] = (),
        summarizer_reads_files: bool = False,
        summary_after_view: bool = False,
        summary_asked_once: bool = False,
    ) -> FoldInputs:
        """Build from any history (a list is a complete one) and any sequences."""
        return cls(
            window=as_window(display),
            state=state,
            counter=counter,
            system=system,
            tools=tuple(tools),
            budget=budget,
            settings=settings,
            now=now,
            model=model,
            summarizer_budget=summarizer_budget,
            pins=tuple(pins),
            summarizer_reads_files=summarizer_reads_files,
            summary_after_view=summary_after_view,
            summary_asked_once=summary_asked_once,
        )

    @property
    def start(self) -> int:
        """The current fold's `api_start_index` (0 without a fold)."""
        return self.state.api_start_index if self.state is not None else 0

    def said(self, start: int, messages: Sequence[Message]) -> list[SaidWords]:
        """The person's words in `messages` (display indices from `start`), pinned
        messages aside: a pin rides verbatim anyway."""
        return said_words(
            messages, start, self.counter.count_text, skip=(pin.index for pin in self.pins)
        )

    @property
    def pinned_tokens(self) -> int:
        """The pins block at its largest (every pin folded): the planner reserves it."""
        return pins_tokens(self.pins, self.counter.count_text, self.counter.count_message)

    def planner(self) -> FoldPlanner:
        """The sizes of the current view for choosing a split, with room for every pin."""
        return FoldPlanner(
            self.window,
            self.state,
            self.counter,
            self.system,
            self.tools,
            pinned_tokens=self.pinned_tokens,
        )
