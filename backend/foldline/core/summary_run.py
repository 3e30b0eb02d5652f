"""The summarizer calls of one fold: asked after the view, in one request, or in chunks.

`SummaryRun` asks for the summary of the folded messages the cheapest way that fits:
after the conversation's own view when the summarizer is the conversation's model (the
provider then reads the view from its prompt cache), else in one request of its own,
else in chunks whose notes are merged. Every answer is judged against the text it was
written from before it may stand for it. `fold` (compaction.py) decides what to fold;
this module only gets its summary written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from foldline.core.attachments import attached_files
from foldline.core.fold_cost import CACHE_READ
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import AttachmentPart, Message
from foldline.core.planning import SLACK_TOKENS
from foldline.core.prompts import (
    BRIEF_PROMPT_BUDGET,
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
from foldline.core.summary_check import summary_defect
from foldline.core.summary_request import Purpose, Summarizer, SummaryRequest, request_tokens
from foldline.core.tokens import TokenCounter
from foldline.core.truncation import truncate_tool_output
from foldline.core.view import summary_to_message

if TYPE_CHECKING:
    from foldline.core.planning import FoldPlanner

LAST_REQUEST_QUOTE_TOKENS = 400
"""The last user request is quoted verbatim in the summary up to this many tokens."""


def last_user_request(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if message.role == "user" and message.text.strip():
            return message.text.strip()
    return None


def quote_last_request(
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
    head: str = ""
    """What the view opens with (an earlier fold's summary, the person's words, the
    pins): the model reads it with the folded messages, so its answer is judged with it."""
    only_request: bool = False
    """The fold asks nothing else (`FoldInputs.summary_asked_once`): an answer without the
    headings is kept free-form, a refused one is not asked again on its own."""


BOUNDARY_CHARS = 160
"""The end of the last folded message quoted in an after-view request, in characters."""


def after_view_for(
    inputs: FoldInputs,
    planner: FoldPlanner,
    folded: Sequence[Message],
    split: int,
    summary_max: int,
) -> AfterView | None:
    """How to ask this fold's summary after the view, or None when it must be asked on
    its own: the summarizer is another model (or a server without a prompt cache), or
    the budget is unlimited."""
    budget = inputs.budget
    input_budget = budget.input_budget
    if not inputs.summary_after_view or input_budget is None or not folded:
        return None
    if inputs.summary_asked_once and budget.input_limit is None:
        # A local server's window holds the request and the summary it writes: the
        # turn's answer reserve is not needed for it. On a small window the view at the
        # preparing threshold plus the request is over the input budget, and a request
        # of its own there would evaluate the whole folded text again.
        input_budget = max(input_budget, budget.context_window - summary_max)
    tail = " ".join(folded[-1].text.split())
    return AfterView(
        view_tokens=planner.view_tokens(inputs.start, inputs.state),
        kept_messages=max(inputs.window.end - split, 0),
        boundary=("…" + tail[-BOUNDARY_CHARS:] if len(tail) > BOUNDARY_CHARS else tail) or None,
        previous_summary=inputs.state is not None,
        input_budget=input_budget,
        head=summary_to_message(inputs.state, inputs.pins).text if inputs.state else "",
        only_request=inputs.summary_asked_once,
    )


class SummaryRun:
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
        self.brief = capacity < BRIEF_PROMPT_BUDGET
        """A small summarizer budget: the brief prompts leave the folded text the room."""
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
        a view; except where it is the fold's only request (`AfterView.only_request`),
        where it is kept free-form like an answer of its own.
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
            if malformed is not None and after_view and not self._after_view_only():
                problem = malformed
                continue
            if malformed is not None:
                self.free_form = True
            return self._fit(answer.strip(), max_output)
        self.problem = problem
        return None

    def _after_view_only(self) -> bool:
        return self.after_view is not None and self.after_view.only_request

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
            brief=self.brief,
        )
        size = after.view_tokens + self.counter.count_text(prompt) + SLACK_TOKENS
        if size > after.input_budget:
            return None
        # Judged against all the model read: what a request of its own would send and
        # the view's head (the earlier summary, the person's words, the pins), whose
        # names a faithful merge carries forward.
        source = "\n\n".join(p for p in (after.head, self._summary_prompt(full_transcript)) if p)
        summary = await self.call(prompt, self.summary_max, "summary", final=True, source=source)
        if summary is None and not after.only_request:
            self.problem = None  # asked again on its own, below
        return summary

    async def run(self, folded: Sequence[Message], start: int) -> str | None:
        count_text = self.counter.count_text
        full = [render_message(start + o, m) for o, m in enumerate(folded)]
        summary = await self._after_view_summary("\n\n".join(full))
        if summary is not None or self.problem is not None:
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
            brief=self.brief,
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
