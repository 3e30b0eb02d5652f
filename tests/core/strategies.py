"""Test support for the engine: hypothesis strategies and test doubles.

Strategies: random conversations shaped like real agent use.

A conversation is a list of turns: a user message, then zero or more tool rounds (an
assistant message with a batch of parallel calls, then their results), then usually a
final answer. Turns can be interrupted: a batch with no results at all, or with only
some of them (the app crashed or the user pressed Stop mid-batch). Some results are
errors, some belong to protected tools, and some are already pruned.

Test doubles: `CharCounter`, a deterministic `TokenCounter` (~4 characters a token,
additive by construction), and `ScriptedSummarizer`, a fake summarizer that records
its requests.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st

from foldline.core.compaction import SummaryRequest
from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    user,
)
from foldline.core.prompts import STRUCTURED_HEADINGS
from foldline.core.state import CompactionState, SummarizedRange

TOOL_NAMES = ("read_file", "bash", "grep", "write_file", "getContextStats")
PRUNED_AT = "2025-01-01T00:00:00Z"


def state_at(index: int, summary: str = "S", version: int = 1) -> CompactionState:
    """A fold (automatic, structured) of everything before INDEX."""
    return CompactionState(
        version=version,
        compacted_at="t",
        summary_message=summary,
        api_start_index=index,
        summarized_range=SummarizedRange(from_index=0, to_index=index, message_count=index),
        strategy="structured",
        trigger="auto",
        tokens_before=0,
        tokens_after=0,
    )


def text_of(size: int, seed: int = 0) -> str:
    """Deterministic text of exactly `size` characters, in lines of varied length."""
    words = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
    pieces: list[str] = []
    length = 0
    i = seed
    while length < size:
        word = words[i % len(words)]
        piece = f"{word}\n" if i % 9 == 8 else f"{word} "
        pieces.append(piece)
        length += len(piece)
        i += 1
    return "".join(pieces)[:size]


@st.composite
def conversations(
    draw: st.DrawFn,
    max_turns: int = 10,
    max_output_chars: int = 3000,
    pruned: bool = True,
    interrupted: bool = True,
) -> list[Message]:
    """A random well-formed history (as the store keeps it), interruptions included."""
    ids = itertools.count()
    messages: list[Message] = []
    for turn in range(draw(st.integers(1, max_turns))):
        messages.append(user(f"request {turn}: " + text_of(draw(st.integers(0, 300)), turn)))
        cut = False
        for _ in range(draw(st.integers(0, 3))):
            batch = draw(st.integers(1, 3))
            calls = tuple(
                ToolCallPart(
                    id=f"call_{next(ids)}",
                    name=draw(st.sampled_from(TOOL_NAMES)),
                    input={"path": f"src/file_{draw(st.integers(0, 5))}.py"},
                )
                for _ in range(batch)
            )
            preface = draw(st.sampled_from(["", "Let me look.", text_of(120, 3)]))
            parts = ((TextPart(text=preface),) if preface else ()) + calls
            messages.append(Message(role="assistant", parts=parts))
            fate = (
                draw(st.sampled_from(["complete"] * 4 + ["partial", "none"]))
                if interrupted
                else "complete"
            )
            answered = [
                c
                for c in calls
                if fate == "complete" or (fate == "partial" and draw(st.booleans()))
            ]
            results = [
                ToolResultPart(
                    call_id=c.id,
                    name=c.name,
                    output=text_of(draw(st.integers(0, max_output_chars)), len(messages)),
                    is_error=draw(st.integers(0, 9)) == 0,
                    compacted_at=PRUNED_AT if pruned and draw(st.integers(0, 4)) == 0 else None,
                )
                for c in answered
            ]
            if results:
                # Results of one batch sometimes arrive as two tool messages.
                split = draw(st.integers(1, len(results))) if len(results) > 1 else len(results)
                messages.append(Message(role="tool", parts=tuple(results[:split])))
                if results[split:]:
                    messages.append(Message(role="tool", parts=tuple(results[split:])))
            if fate != "complete":
                cut = True
                break
        if not cut and draw(st.integers(0, 4)) > 0:
            messages.append(Message(role="assistant", parts=(TextPart(text=text_of(400, 5)),)))
    return messages


@st.composite
def message_soups(draw: st.DrawFn, max_size: int = 14) -> list[Message]:
    """Arbitrary message lists: orphan results, duplicate ids, results in odd places.

    Also the shapes well-formed histories never have but imports and old versions can:
    user messages carrying stray tool parts, tool messages with attachments before,
    between and after their results, pruned results beside unpruned ones, reasoning.
    """
    pool = [f"id_{i}" for i in range(6)]
    names = ("bash", "read_file", "getContextStats")
    attachment = st.builds(
        AttachmentPart,
        name=st.sampled_from(["a.png", "notes.txt"]),
        media_type=st.just("text/plain"),
        text=st.sampled_from(["seen", None]),
    )
    result = st.builds(
        ToolResultPart,
        call_id=st.sampled_from(pool),
        name=st.sampled_from(names),
        output=st.sampled_from(["out", "", text_of(200)]),
        is_error=st.booleans(),
        compacted_at=st.sampled_from([None, None, PRUNED_AT]),
        full_output=st.sampled_from([None, "the full output"]),
    )
    call = st.builds(
        ToolCallPart, id=st.sampled_from(pool), name=st.sampled_from(names), input=st.just({})
    )
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, max_size))):
        role = draw(st.sampled_from(["user", "assistant", "tool"]))
        if role == "user":
            parts: list = [TextPart(text=draw(st.sampled_from(["hi", "", "do it"])))]
            parts += draw(st.lists(st.one_of(call, result, attachment), max_size=2))
            messages.append(Message(role="user", parts=tuple(draw(st.permutations(parts)))))
        elif role == "assistant":
            parts = []
            if draw(st.booleans()):
                parts.append(TextPart(text="thinking aloud"))
            if draw(st.integers(0, 3)) == 0:
                parts.append(ReasoningPart(text="hmm"))
            parts += draw(st.lists(call, max_size=3))
            if draw(st.integers(0, 5)) == 0:
                parts.append(draw(result))  # a result where none belongs
            messages.append(Message(role="assistant", parts=tuple(parts)))
        else:
            parts = draw(st.lists(st.one_of(result, result, attachment), max_size=5))
            if draw(st.integers(0, 5)) == 0:  # a call where none belongs, anywhere
                parts.insert(draw(st.integers(0, len(parts))), draw(call))
            messages.append(Message(role="tool", parts=tuple(parts)))
    return messages


# --- test doubles -------------------------------------------------------------------


class CharCounter:
    """~4 characters per token, with fixed framing costs; additive by construction.

    `count_request(system, messages, tools)` is exactly
    `count_request(system, [], tools) + sum(count_message(m))`, the law of the
    `TokenCounter` protocol.
    """

    exact = False
    REQUEST_BASE = 3
    REPLY_PRIMING = 3
    PER_MESSAGE = 4
    PER_PART = 2
    PER_TOOL = 2

    def count_text(self, text: str) -> int:
        return (len(text) + 3) // 4

    def _part(self, part: object) -> int:
        if isinstance(part, TextPart | ReasoningPart):
            return self.count_text(part.text)
        if isinstance(part, ToolCallPart):
            return (
                self.PER_PART + self.count_text(part.name) + self.count_text(json.dumps(part.input))
            )
        if isinstance(part, ToolResultPart):
            return self.PER_PART + self.count_text(part.name) + self.count_text(part.output)
        if isinstance(part, AttachmentPart):
            return self.PER_PART + self.count_text(part.name) + self.count_text(part.text or "")
        raise TypeError(part)

    def count_message(self, message: Message) -> int:
        return self.PER_MESSAGE + sum(self._part(p) for p in message.parts)

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return sum(
            self.PER_TOOL
            + self.count_text(t.name)
            + self.count_text(t.description)
            + self.count_text(json.dumps(t.input_schema))
            for t in tools
        )

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        return (
            self.REQUEST_BASE
            + self.count_text(system)
            + self.count_tools(tools)
            + sum(self.count_message(m) for m in messages)
            + self.REPLY_PRIMING
        )


def request_size(counter: CharCounter, request: SummaryRequest) -> int:
    return counter.count_request(request.system, [user(request.prompt)], [])


def structured_summary(body_tokens: int, counter: CharCounter, marker: str = "") -> str:
    """A summary with the six headings, padded to about `body_tokens` tokens in all."""
    head = "\n\n".join(f"## {h}\n{marker or 'None.'}" for h in STRUCTURED_HEADINGS)
    missing = body_tokens - counter.count_text(head) - 2
    filler = summary_filler(max(missing, 0) * 4)
    return f"{head}\n\n{filler}".rstrip()


def summary_of(prompt: str, body_tokens: int, counter: CharCounter) -> str:
    """An honest summary of what `prompt` holds: the six headings and the distinct lines
    of the prompt that name a request (the sessions of these tests number them), up to
    about `body_tokens` tokens; padding from `summary_filler` when there are none."""
    lines = list(dict.fromkeys(re.findall(r"[^\n]*\brequest \d+[^\n]*", prompt)))
    head = "\n\n".join(f"## {h}\nNone." for h in STRUCTURED_HEADINGS)
    room = max(body_tokens - counter.count_text(head) - 2, 0) * 4
    body = ""
    for line in reversed(lines):  # the latest requests first, as a summary keeps them
        line = line.strip()[:200]
        if len(body) + len(line) + 1 > room:
            break
        body = f"{line}\n{body}"
    return f"{head}\n\n{body or summary_filler(room)}".rstrip()


def summary_filler(size: int) -> str:
    """About `size` characters of the words `text_of` writes, in an order that never
    repeats itself: padding a summary judge takes for an honest summary of a session
    built from `text_of` (it shares the source's words and does not loop)."""
    words = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta")
    pieces: list[str] = []
    length = 0
    state = 12345
    while length < size:
        # A small linear congruential sequence: deterministic, and with seven words no
        # run of eight repeats often enough to read as a loop.
        state = (state * 1103515245 + 12345) % 2**31
        piece = words[(state >> 16) % len(words)] + " "
        pieces.append(piece)
        length += len(piece)
    return "".join(pieces)[:size]


@dataclass
class ScriptedSummarizer:
    """A fake summarizer: answers from a script (or a function) and records requests.

    Each entry of `script` is a string to return or an exception to raise; after the
    script runs out, `default` builds the answer from the request.
    """

    counter: CharCounter
    script: list[str | BaseException] = field(default_factory=list)
    default: Callable[[SummaryRequest], str] | None = None
    requests: list[SummaryRequest] = field(default_factory=list)

    async def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        if self.script:
            answer = self.script.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return answer
        if self.default is not None:
            return self.default(request)
        if "## Active Task" not in request.prompt:
            return f"notes on request {len(self.requests)}: please handle each item"
        return summary_of(request.prompt, min(request.max_output_tokens, 200), self.counter)
