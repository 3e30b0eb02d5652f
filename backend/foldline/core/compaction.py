"""The fold: older messages replaced in the model's view by a summary.

A fold picks a split point, summarizes `[previous summary] + display[start:split]` with
a tool-less request, and returns the next `CompactionState`; the model then sees
`[summary] + display[split:]`. The split is chosen so that the folded view lands at the
*target* (a fraction of the budget), not merely under the threshold, so that the next
turn does not fold again. The summarizer's own request is kept within its budget by
masking tool outputs and, if that is not enough, by summarizing in chunks and merging.
`fold` never raises on a summarizer failure: it falls back to the extractive digest of
`digest.py` (no model call) and marks the state degraded. A summary that answers but
ignores the requested format is kept as a free-form summary, never replaced by the
digest. Before any fold is returned, `carry_forward` keeps the person's own words after
the summary (`person_words.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from foldline.core.attachments import attached_files, name_folded_files
from foldline.core.digest import emergency_fold
from foldline.core.fold_cost import CACHE_READ, with_fold_cost
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import AttachmentPart, Message, TextPart
from foldline.core.person_words import words_cap
from foldline.core.planning import (
    SLACK_TOKENS,
    choose_split,
    kept_tail_tokens,
    pick_split,
    plan_split,
    safe_split_points,
)
from foldline.core.prompts import (
    SUMMARY_SYSTEM,
    SummaryStrategy,
    after_view_prompt,
    chunk_prompt,
    merge_prompt,
    output_mask,
    render_message,
    retry_note,
    summary_problem,
    summary_prompt,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, Strategy, SummarizedRange, Trigger
from foldline.core.summary_check import summary_defect
from foldline.core.summary_fit import finish_summary
from foldline.core.tokens import TokenCounter
from foldline.core.truncation import truncate_tool_output
from foldline.core.view import summary_to_message

if TYPE_CHECKING:
    from foldline.core.budget import Budget
    from foldline.core.planning import FoldPlanner

SUMMARY_BUDGET_SHARE = 0.10
"""The summary may use up to this share of the input budget ..."""
MIN_SUMMARY_TOKENS = 256
MAX_SUMMARY_TOKENS = 8_000
"""... within these bounds: enough for the six sections, small enough to leave room."""

LAST_REQUEST_QUOTE_TOKENS = 400
"""The last user request is quoted verbatim in the summary up to this many tokens."""

Purpose = Literal["summary", "chunk", "merge"]


@dataclass(frozen=True)
class SummaryRequest:
    """One summarizer call: `system` plus one user message holding `prompt` and the
    folded `files` (for a summarizer that reads them), tool-less. With `after_view`, the
    caller sends instead the conversation's own request (its system prompt, tools and
    view, as the last turn sent them) followed by `prompt`, and `system` is empty."""

    system: str
    prompt: str
    max_output_tokens: int
    purpose: Purpose
    files: tuple[AttachmentPart, ...] = ()
    after_view: bool = False

    def message(self) -> Message:
        """The one user message of the request."""
        return Message(role="user", parts=(TextPart(text=self.prompt), *self.files))


Summarizer = Callable[[SummaryRequest], Awaitable[str]]
"""Injected by `chat/`: sends a `SummaryRequest` to a model and returns its text."""


@dataclass(frozen=True)
class FoldOutcome:
    """What a fold did. `state` is None only when there was nothing to fold."""

    state: CompactionState | None
    summarizer_calls: int
    degraded_reason: str | None
    split_index: int | None


def request_tokens(counter: TokenCounter, request: SummaryRequest) -> int:
    """The input size of a summarizer request as the provider receives it."""
    return counter.count_request(request.system, [request.message()], [])


def summary_output_tokens(budget: Budget) -> int:
    """The `max_output_tokens` of the summary: ~10% of the budget, within bounds."""
    input_budget = budget.input_budget
    if input_budget is None:
        tokens = MAX_SUMMARY_TOKENS
    else:
        share = int(input_budget * SUMMARY_BUDGET_SHARE)
        tokens = min(MAX_SUMMARY_TOKENS, max(MIN_SUMMARY_TOKENS, share), max(input_budget // 4, 1))
    if budget.max_output_tokens > 0:
        tokens = min(tokens, budget.max_output_tokens)
    return max(tokens, 1)


SUMMARIZER_COUNT_MARGIN = 0.9
"""The share of another summarizer model's room a summary request is planned to fill:
the request is counted with the conversation's tokenizer, which may count the
summarizer's text a little low."""


def summarizer_capacity(budget: Budget, summarizer: Budget) -> int | None:
    """The input tokens a summary request may hold when the summarizer (`[compaction]
    model`) is another model than the conversation's: its own window less the summary's
    output, with a margin for the other tokenizer. None when that is no limit beyond the
    conversation's own budget, or the summarizer's window is unlimited."""
    room = summarizer.window_budget
    if room is None:
        return None
    if summarizer.input_limit is None:
        # The window holds the request and its answer: the summary's output, not the
        # summarizer's default answer reserve, is what must stay free.
        room = summarizer.context_window - summary_output_tokens(budget)
    input_budget = budget.input_budget
    if input_budget is not None and room >= input_budget - summary_output_tokens(budget):
        return None
    return max(int(room * SUMMARIZER_COUNT_MARGIN), 1)


def summary_max_tokens(inputs: FoldInputs) -> int:
    """The `max_output_tokens` of this fold's summary: the budget's share, within what the
    summarizer may write in one answer."""
    tokens = summary_output_tokens(inputs.budget)
    if inputs.summarizer_max_output:
        tokens = min(tokens, inputs.summarizer_max_output)
    return tokens


def _last_user_request(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if message.role == "user" and message.text.strip():
            return message.text.strip()
    return None


def _quote_last_request(
    summary: str, request: str | None, counter: TokenCounter, cap_tokens: int
) -> str:
    """Make sure the summary quotes the last folded request verbatim (models paraphrase)."""
    if not request or " ".join(request.split()) in " ".join(summary.split()):
        return summary
    quoted = truncate_tool_output(request, cap_tokens, counter.count_text, category="file").text
    line = f'Last user request (verbatim): "{quoted}"'
    lines = summary.splitlines()
    for i, text in enumerate(lines):
        if text.lstrip("# ").strip().lower() == "active task" and text.lstrip().startswith("#"):
            return "\n".join([*lines[: i + 1], line, *lines[i + 1 :]])
    return f"{line}\n\n{summary}"


@dataclass(frozen=True)
class AfterView:
    """A summary asked after the conversation's own view (see `core/prompts.py`): the
    view's size, how many of its last messages stay verbatim, the end of the last folded
    message, whether the view opens with a summary, and the room the request has."""

    view_tokens: int
    kept_messages: int
    boundary: str | None
    previous_summary: bool
    input_budget: int


BOUNDARY_CHARS = 160
"""The end of the last folded message quoted in an after-view request, in characters."""


def after_view_for(
    inputs: FoldInputs, planner: FoldPlanner, folded: Sequence[Message], split: int
) -> AfterView | None:
    """How to ask this fold's summary after the view, or None when it must be asked on
    its own: the summarizer is another model (or a server without a prompt cache), or
    the budget is unlimited."""
    input_budget = inputs.budget.input_budget
    if not inputs.summary_after_view or input_budget is None or not folded:
        return None
    tail = " ".join(folded[-1].text.split())
    return AfterView(
        view_tokens=planner.view_tokens(inputs.start, inputs.state),
        kept_messages=max(inputs.window.end - split, 0),
        boundary=("…" + tail[-BOUNDARY_CHARS:] if len(tail) > BOUNDARY_CHARS else tail) or None,
        previous_summary=inputs.state is not None,
        input_budget=input_budget,
    )


class _SummaryRun:
    """The summarizer calls of one fold: one call if it fits, else chunks and merges."""

    def __init__(
        self,
        *,
        counter: TokenCounter,
        summarize: Summarizer,
        settings: CompactionSettings,
        instructions: str | None,
        last_request: str | None,
        previous_summary: str | None,
        summary_max: int,
        capacity: int,
        pinned: Sequence[int] = (),
        reads_files: bool = False,
        after_view: AfterView | None = None,
    ) -> None:
        self.counter = counter
        self.after_view = after_view
        self.reads_files = reads_files
        self.pinned = tuple(pinned)
        self.free_form = False
        """Set when the final answer ignored the structured headings and was kept anyway."""
        self.summarize = summarize
        self.strategy: SummaryStrategy = settings.strategy
        self.instructions = instructions
        self.last_request = last_request
        self.previous = previous_summary
        self.summary_max = summary_max
        self.capacity = capacity
        self.calls = 0
        self.input_tokens = 0  # what every call sent: the fold's summarizer input
        self.problem: str | None = None
        self._retry_reserve = counter.count_text(retry_note("x" * 240)) + SLACK_TOKENS

    def fits(self, prompt: str, max_output: int, files: tuple[AttachmentPart, ...] = ()) -> bool:
        request = SummaryRequest(SUMMARY_SYSTEM, prompt, max_output, "summary", files)
        return request_tokens(self.counter, request) + self._retry_reserve <= self.capacity

    async def call(
        self,
        prompt: str,
        max_output: int,
        purpose: Purpose,
        final: bool,
        files: tuple[AttachmentPart, ...] = (),
        source: str | None = None,
    ) -> str | None:
        """One request, asked again only when the summarizer failed or answered nothing;
        None (and `problem` set) when no usable answer came.

        Every answer is judged against the text it was written from before it may stand
        for it (`summary_defect`): one that loops, invents or is about something else
        (what small local models write) is refused at once, like a failed summary, since
        the digest keeps the facts and it would not. A judged answer without the
        structured headings is kept as it is (free-form) rather than asked again: on a
        slow single-slot server a second call doubles the fold's wait, and losing a
        faithful summary for its shape would fall back to the much poorer digest. A
        request after the view (`source` given: the folded text it stands for) is tried
        once and kept only when well formed: the caller then asks on its own, as without
        a view.
        """
        problem: str | None = None
        after_view = source is not None
        for attempt in range(1 if after_view else 2):
            text = prompt if attempt == 0 else prompt + retry_note(problem or "")
            self.calls += 1
            if after_view and self.after_view is not None:
                request = SummaryRequest("", text, max_output, purpose, after_view=True)
                # The view is read from the prompt cache (a tenth of the input price);
                # only the request's last message is new input.
                self.input_tokens += round(
                    self.after_view.view_tokens * CACHE_READ
                ) + self.counter.count_text(text)
            else:
                request = SummaryRequest(SUMMARY_SYSTEM, text, max_output, purpose, files)
                self.input_tokens += request_tokens(self.counter, request)
            try:
                answer = await self.summarize(request)
            except Exception as error:  # any failure of the injected summarizer
                problem = f"the summarizer failed ({type(error).__name__}: {error})"[:240]
                continue
            if not isinstance(answer, str) or not answer.strip():
                problem = "it was empty"
                continue
            defect = summary_defect(answer, source or prompt)
            if defect is not None:
                self.problem = defect
                return None
            malformed = summary_problem(answer, self.strategy) if final else None
            if malformed is not None and after_view:
                problem = malformed
                continue
            if malformed is not None:
                self.free_form = True
            return self._fit(answer.strip(), max_output)
        self.problem = problem
        return None

    def _fit(self, text: str, max_output: int) -> str:
        if self.counter.count_text(text) <= max_output:
            return text
        return truncate_tool_output(text, max_output, self.counter.count_text, category="file").text

    async def _after_view_summary(self, full_transcript: str) -> str | None:
        """The summary asked after the conversation's view, when it fits its budget."""
        after = self.after_view
        if after is None:
            return None
        prompt = after_view_prompt(
            kept_messages=after.kept_messages,
            boundary=after.boundary,
            previous_summary=after.previous_summary,
            strategy=self.strategy,
            instructions=self.instructions,
            last_request=self.last_request,
            max_output_tokens=self.summary_max,
            pinned=self.pinned,
        )
        size = after.view_tokens + self.counter.count_text(prompt) + SLACK_TOKENS
        if size > after.input_budget:
            return None
        summary = await self.call(
            prompt, self.summary_max, "summary", final=True, source=full_transcript
        )
        if summary is None:
            self.problem = None  # asked again on its own, below
        return summary

    async def run(self, folded: Sequence[Message], start: int) -> str | None:
        count_text = self.counter.count_text
        full = [render_message(start + o, m) for o, m in enumerate(folded)]
        summary = await self._after_view_summary("\n\n".join(full))
        if summary is not None:
            return summary
        mask = output_mask(count_text)
        masked = [render_message(start + o, m, mask) for o, m in enumerate(folded)]
        # A summarizer that reads files gets the folded files themselves when they fit
        # (beside the transcript, which names each and holds its text); else the text.
        files = tuple(attached_files(folded)) if self.reads_files else ()
        for blocks in (full, masked):
            prompt = self._summary_prompt("\n\n".join(blocks))
            if files and self.fits(prompt, self.summary_max, files):
                return await self.call(prompt, self.summary_max, "summary", True, files)
            if self.fits(prompt, self.summary_max):
                return await self.call(prompt, self.summary_max, "summary", final=True)
        notes = await self._chunk_notes(masked)
        if notes is None:
            return None
        return await self._merge(notes)

    def _summary_prompt(self, transcript: str) -> str:
        return summary_prompt(
            transcript=transcript,
            previous_summary=self.previous,
            strategy=self.strategy,
            instructions=self.instructions,
            last_request=self.last_request,
            max_output_tokens=self.summary_max,
            pinned=self.pinned,
        )

    def _note_max(self) -> int:
        overhead = request_tokens(
            self.counter,
            SummaryRequest(SUMMARY_SYSTEM, self._merge_prompt([], None), 0, "merge"),
        )
        room = self.capacity - overhead - self._retry_reserve
        return max(32, min(self.summary_max, room // 4))

    async def _chunk_notes(self, blocks: list[str]) -> list[str] | None:
        count_text = self.counter.count_text
        note_max = self._note_max()
        empty = chunk_prompt(transcript="", part=999, parts=999, max_output_tokens=note_max)
        overhead = request_tokens(self.counter, SummaryRequest(SUMMARY_SYSTEM, empty, 0, "chunk"))
        room = self.capacity - overhead - self._retry_reserve - SLACK_TOKENS
        if room < 64:
            self.problem = "the summarizer's budget is too small for any part of the history"
            return None
        # Check before spending any call that the notes can be merged at all: two notes
        # per intermediate merge, one in the final request.
        note = "note " * note_max
        if not (
            self.fits(self._merge_prompt([note, note], None, final=False), note_max)
            and self.fits(self._merge_prompt([note], None), self.summary_max)
        ):
            self.problem = "the summarizer's budget is too small to merge the notes"
            return None
        chunks: list[list[str]] = [[]]
        used = 0
        for block in blocks:
            size = count_text(block)
            if size > room:
                block = truncate_tool_output(block, room, count_text, category="file").text
                size = count_text(block)
            if chunks[-1] and used + size + 2 > room:
                chunks.append([])
                used = 0
            chunks[-1].append(block)
            used += size + 2
        notes: list[str] = []
        for number, chunk in enumerate(chunks, 1):
            prompt = chunk_prompt(
                transcript="\n\n".join(chunk),
                part=number,
                parts=len(chunks),
                max_output_tokens=note_max,
            )
            note = await self.call(prompt, note_max, "chunk", final=False)
            if note is None:
                return None
            notes.append(note)
        return notes

    def _merge_prompt(self, notes: Sequence[str], previous: str | None, final: bool = True) -> str:
        return merge_prompt(
            notes=notes,
            previous_summary=previous,
            strategy=self.strategy if final else None,
            instructions=self.instructions if final else None,
            last_request=self.last_request if final else None,
            max_output_tokens=self.summary_max if final else self._note_max(),
            pinned=self.pinned if final else (),
        )

    async def _merge(self, notes: list[str]) -> str | None:
        items = list(notes)
        previous = self.previous
        if previous and not self.fits(self._merge_prompt([], previous), self.summary_max):
            # A previous summary too big to sit beside the notes becomes the oldest note.
            items.insert(0, self._fit(previous, self._note_max()))
            previous = None
        note_max = self._note_max()
        while True:
            final_prompt = self._merge_prompt(items, previous)
            if self.fits(final_prompt, self.summary_max):
                return await self.call(final_prompt, self.summary_max, "merge", final=True)
            groups: list[list[str]] = [[]]
            for item in items:
                trial = [*groups[-1], item]
                if groups[-1] and not self.fits(self._merge_prompt(trial, None, False), note_max):
                    groups.append([item])
                else:
                    groups[-1] = trial
            if len(groups) >= len(items):
                self.problem = "the summarizer's budget is too small to merge the notes"
                return None
            merged: list[str] = []
            for group in groups:
                if len(group) == 1:
                    merged.append(group[0])
                    continue
                prompt = self._merge_prompt(group, None, False)
                note = await self.call(prompt, note_max, "merge", final=False)
                if note is None:
                    return None
                merged.append(note)
            items = merged


def reserved_summary_tokens(budget: Budget, settings: CompactionSettings) -> int:
    """The room a fold plans for its summary: the model's answer plus the person's
    words kept after it."""
    return summary_output_tokens(budget) + words_cap(
        budget.input_budget, settings.person_words_share
    )


def planned_split(inputs: FoldInputs) -> int | None:
    """The split `fold` would make now, for a preview of what a fold would summarize
    (a fold that falls back to the digest may fold a little more)."""
    return plan_split(
        inputs.planner(),
        summary_tokens=reserved_summary_tokens(inputs.budget, inputs.settings),
        input_budget=inputs.budget.input_budget,
        settings=inputs.settings,
    )


async def summarize_range(
    folded: Sequence[Message],
    start: int,
    *,
    inputs: FoldInputs,
    previous_summary: str | None,
    instructions: str | None,
    summarize: Summarizer,
    after_view: AfterView | None = None,
) -> tuple[str | None, _SummaryRun]:
    """Summarize `folded` (display indices from `start`) stacked on `previous_summary`,
    within the summarizer's own budget, with the last user request quoted verbatim.
    Returns the summary (None when the summarizer failed) and the run, for its calls,
    the problem it met and whether the summary is free-form."""
    budget = inputs.budget
    summary_max = summary_max_tokens(inputs)
    capacity = inputs.summarizer_budget
    if capacity is None:
        input_budget = budget.input_budget
        capacity = (input_budget - summary_max) if input_budget is not None else 1 << 62
    last_request = _last_user_request(folded)
    stop = start + len(folded)
    run = _SummaryRun(
        counter=inputs.counter,
        summarize=summarize,
        settings=inputs.settings,
        instructions=instructions,
        last_request=last_request,
        previous_summary=previous_summary,
        summary_max=summary_max,
        capacity=capacity,
        pinned=sorted(p.index for p in inputs.pins if start <= p.index < stop),
        reads_files=inputs.summarizer_reads_files,
        after_view=after_view,
    )
    summary = await run.run(folded, start)
    if summary is None:
        return None, run
    quote_cap = min(LAST_REQUEST_QUOTE_TOKENS, max(summary_max // 4, 16))
    summary = _quote_last_request(summary, last_request, inputs.counter, quote_cap)
    return name_folded_files(summary, folded), run


async def fold(
    inputs: FoldInputs,
    *,
    summarize: Summarizer | None,
    trigger: Trigger,
    instructions: str | None = None,
) -> FoldOutcome:
    """Fold older messages into a summary, down to the target. Never raises on a
    summarizer failure (exception, empty answer, unreachable): the extractive digest is
    used instead and the outcome says why (`degraded_reason`). An answer that ignores
    the format but passes the summary judge is kept as a free-form summary."""
    state = inputs.state
    start = inputs.start
    if inputs.window.end <= start:
        return FoldOutcome(None, 0, None, None)
    input_budget = inputs.budget.input_budget
    planner = inputs.planner()
    split = plan_split(
        planner,
        summary_tokens=reserved_summary_tokens(inputs.budget, inputs.settings),
        input_budget=input_budget,
        settings=inputs.settings,
        keep_recent_tokens=kept_tail_tokens(inputs.settings, input_budget, trigger),
    )
    if split is None:
        return FoldOutcome(None, 0, None, None)

    def degrade(reason: str, calls: int) -> FoldOutcome:
        em_state = emergency_fold(inputs, trigger=trigger, reason=reason)
        split_index = em_state.api_start_index if em_state is not None else None
        return FoldOutcome(em_state, calls, reason, split_index)

    if summarize is None:
        return degrade("no summarizer is available", 0)
    folded = inputs.window.between(start, split)
    summary, run = await summarize_range(
        folded,
        start,
        inputs=inputs,
        previous_summary=state.summary_message if state is not None else None,
        instructions=instructions,
        summarize=summarize,
        after_view=after_view_for(inputs, planner, folded, split),
    )
    if summary is None:
        return degrade(run.problem or "the summarizer failed", run.calls)

    new_state = CompactionState(
        version=(state.version if state is not None else 0) + 1,
        compacted_at=inputs.now,
        summary_message=summary,
        api_start_index=split,
        summarized_range=SummarizedRange(
            from_index=start, to_index=split, message_count=split - start
        ),
        strategy=strategy_of(inputs.settings, run),
        trigger=trigger,
        tokens_before=planner.view_tokens(start, state),
        tokens_after=0,
        model=inputs.model,
        degraded=False,
    )
    new_state = finish_summary(new_state, planner, inputs, inputs.said(start, folded), state)
    if input_budget is not None and new_state.tokens_after > input_budget:
        return degrade("the folded view would not fit the budget", run.calls)
    new_state = with_fold_cost(new_state, run.input_tokens, planner, inputs, folded, split)
    return FoldOutcome(new_state, run.calls, None, split)


def strategy_of(settings: CompactionSettings, run: _SummaryRun) -> Strategy:
    return "free-form" if run.free_form else settings.strategy


async def resummarize(
    inputs: FoldInputs,
    *,
    folded: Sequence[Message],
    previous: CompactionState | None,
    summarize: Summarizer,
) -> CompactionState | None:
    """Replace an emergency digest by a model summary of the messages it stands for.

    `inputs.state` is the current fold, made by `emergency_fold`, and `inputs.window`
    the display history from its `api_start_index` as it is now (the view's size, and
    so the budget check and `tokens_before/after`, count it). `previous` is the fold it
    stacked on (None for none), whose summary is stacked on again; `folded` is
    `display[previous.api_start_index (0 without previous) : degraded.api_start_index]`,
    the messages the digest replaced. `previous` may also be an earlier fold of the same
    lineage (skipping digests stacked on digests); `summarized_range` then starts at its
    `api_start_index`, otherwise it equals the degraded fold's.

    The split does not move (same `api_start_index`), so the next request only swaps the
    digest for the summary. The summary is made exactly as `fold` makes one (summarizer
    budget, masking, chunks and merges, every answer judged, free-form kept,
    the person's details carried) and cut to the target like a fold's. Returns None when
    the summarizer fails again (exception, empty answer) or when the view with the
    summary would reach the soft threshold (the next turn would fold again); the digest
    then stays. Never raises on a summarizer failure; cancellation propagates.
    """
    degraded = inputs.state
    if degraded is None or not degraded.degraded:
        raise ValueError("the current fold is not degraded")
    start = previous.api_start_index if previous is not None else 0
    split = degraded.api_start_index
    if len(folded) != split - start:
        raise ValueError(
            f"{len(folded)} folded messages given for the range {start}:{split} of the fold"
        )
    if inputs.window.start != split:
        raise ValueError(f"the window starts at {inputs.window.start}, the fold at {split}")
    input_budget = inputs.budget.input_budget
    settings = inputs.settings
    planner = inputs.planner()
    tokens_before = planner.view_tokens(split, degraded)
    soft_limit = settings.threshold * input_budget if input_budget is not None else None
    if soft_limit is not None and planner.fixed + planner.frame + planner.tail_tokens(split) >= (
        soft_limit
    ):
        return None  # no summary at all would keep the view under the threshold
    summary, run = await summarize_range(
        folded,
        start,
        inputs=inputs,
        previous_summary=previous.summary_message if previous is not None else None,
        instructions=None,
        summarize=summarize,
    )
    if summary is None:
        return None
    new_state = CompactionState(
        version=degraded.version + 1,
        compacted_at=inputs.now,
        summary_message=summary,
        api_start_index=split,
        summarized_range=SummarizedRange(
            from_index=start, to_index=split, message_count=split - start
        ),
        strategy=strategy_of(settings, run),
        trigger=degraded.trigger,
        tokens_before=tokens_before,
        tokens_after=0,
        model=inputs.model,
        degraded=False,
    )
    new_state = finish_summary(new_state, planner, inputs, inputs.said(start, folded), previous)
    if soft_limit is not None and new_state.tokens_after >= soft_limit:
        return None
    return new_state.model_copy(update={"summary_input_tokens": run.input_tokens})


__all__ = [
    "FoldInputs",
    "FoldOutcome",
    "Summarizer",
    "SummaryRequest",
    "choose_split",
    "fold",
    "pick_split",
    "planned_split",
    "request_tokens",
    "resummarize",
    "safe_split_points",
    "summary_output_tokens",
    "summary_to_message",
]
