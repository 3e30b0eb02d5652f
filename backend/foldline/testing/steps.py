"""Scripted model answers ("steps") and the helpers that build them.

A test scripts what a fake model answers as a queue of steps. A step is one of:

- a `Reply`: text streamed in deltas, optional reasoning, tool calls, a stop reason, an
  explicit usage, an error raised after the text, a delay between deltas;
- a plain `str`: shorthand for `Reply(text=...)`;
- an exception (for example `ProviderError("rate_limited", ...)`): raised instead of
  answering;
- a callable `(ModelRequest) -> step`: decides the answer when the request arrives, for
  dynamic answers that depend on what the model was sent.

The same steps drive both `ScriptedModel` (a `Provider` used in-process) and
`FakeProviderServer` (the same answers spoken over the Anthropic and OpenAI wires), so a
test written against one transfers to the other.

This module also holds the summary helpers: how a summarization request is recognised
and a deterministic structured summary computed from the request itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from foldline.core.messages import Message, TextPart, ToolCallPart
from foldline.core.prompts import is_fold_request
from foldline.providers.base import ModelRequest, StopReason, Usage


@dataclass(frozen=True)
class Reply:
    """One scripted answer of a fake model.

    `stop=None` means "what a real model would say": `tool_use` when the reply calls tools,
    `end_turn` otherwise. `usage=None` means "computed": the fake tokenizer's count of the
    request and of this reply. `error`, when set, is raised after the text and reasoning
    have been streamed, which is how a failure in the middle of a stream is scripted.
    """

    text: str = ""
    reasoning: str = ""
    reasoning_signature: str = "fake-signature"
    tool_calls: tuple[ToolCallPart, ...] = ()
    stop: StopReason | None = None
    usage: Usage | None = None
    error: BaseException | None = None
    chunk_chars: int = 8
    """Text and reasoning are streamed in deltas of at most this many characters."""
    delay: float = 0.0
    """Seconds to wait before each delta: a slow stream."""
    kind: Literal["reply"] = "reply"

    def __post_init__(self) -> None:
        if self.chunk_chars < 1:
            raise ValueError("chunk_chars must be at least 1")
        if self.delay < 0:
            raise ValueError("delay must not be negative")

    @property
    def stop_reason(self) -> StopReason:
        """The stop reason the model reports for this reply."""
        if self.stop is not None:
            return self.stop
        return "tool_use" if self.tool_calls else "end_turn"

    def text_chunks(self) -> list[str]:
        return split_chunks(self.text, self.chunk_chars)

    def reasoning_chunks(self) -> list[str]:
        return split_chunks(self.reasoning, self.chunk_chars)

    def with_call_ids(self, make_id: Callable[[], str]) -> Reply:
        """This reply with an id given to every tool call scripted without one."""
        if all(c.id for c in self.tool_calls):
            return self
        calls = tuple(
            c if c.id else c.model_copy(update={"id": make_id()}) for c in self.tool_calls
        )
        return replace(self, tool_calls=calls)


StepValue: TypeAlias = Reply | str | BaseException
"""A step once resolved: an answer, a text shorthand, or an exception to raise."""

Step: TypeAlias = StepValue | Callable[[ModelRequest], "Step"]
"""What a test puts in a script: a resolved step or a function of the request."""


def split_chunks(text: str, size: int) -> list[str]:
    """`text` cut into pieces of at most `size` characters (none for the empty string)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def resolve_step(step: Step, request: ModelRequest) -> Reply | BaseException:
    """A step turned into a Reply or an exception, calling dynamic steps with `request`."""
    # A callable may itself return a callable (a small state machine); follow it, but not
    # forever: a step that keeps returning functions is a bug in the test.
    for _ in range(32):
        if isinstance(step, Reply | BaseException):
            return step
        if isinstance(step, str):
            return Reply(text=step)
        if callable(step):
            step = step(request)
            continue
        raise TypeError(f"not a step: {step!r}")
    raise RecursionError("a dynamic step kept returning callables")


# --- helpers that build steps ----------------------------------------------------------


def call(name: str, input: dict[str, Any] | None = None, *, id: str = "") -> ToolCallPart:
    """A tool call for a scripted reply; without `id` one is assigned when it is sent."""
    return ToolCallPart(id=id, name=name, input=dict(input or {}))


def text_step(
    text: str,
    *,
    reasoning: str = "",
    chunk_chars: int = 8,
    delay: float = 0.0,
    stop: StopReason | None = None,
    usage: Usage | None = None,
) -> Reply:
    """A reply that streams `text` (and optionally reasoning first)."""
    return Reply(
        text=text,
        reasoning=reasoning,
        chunk_chars=chunk_chars,
        delay=delay,
        stop=stop,
        usage=usage,
    )


def tool_step(
    *calls: ToolCallPart,
    text: str = "",
    reasoning: str = "",
    usage: Usage | None = None,
) -> Reply:
    """A reply that calls tools (a parallel batch when several are given)."""
    if not calls:
        raise ValueError("tool_step needs at least one call")
    return Reply(text=text, reasoning=reasoning, tool_calls=tuple(calls), usage=usage)


def error_step(error: BaseException, *, after_text: str = "", chunk_chars: int = 8) -> Reply:
    """A reply that fails: `error` is raised, after streaming `after_text` if any.

    Over HTTP a `ProviderError` becomes the wire's own error (an HTTP status before any
    text, an in-stream error event after some text); any other exception becomes a 500
    before the stream, and a dropped connection after some text.
    """
    return Reply(text=after_text, error=error, chunk_chars=chunk_chars)


def usage_step(text: str, usage: Usage) -> Reply:
    """A text reply that reports exactly `usage` instead of the computed one."""
    return Reply(text=text, usage=usage)


# --- summaries -------------------------------------------------------------------------

SUMMARY_HEADINGS: tuple[str, ...] = (
    "Active Task",
    "Key Decisions & Rationale",
    "Files & Artifacts",
    "Constraints & Requirements",
    "Pending Items",
    "Session Narrative",
)
"""The sections of a `structured` summary (the headings of `core/prompts.py`)."""

_SUMMARY_WORD = re.compile(r"summar", re.IGNORECASE)


_KEPT_MESSAGES = re.compile(r"except its last (\d+) messages?\b")


def looks_like_summary_request(request: ModelRequest) -> bool:
    """The default test for "this request asks for a summary".

    A summary asked after the conversation's own view carries the fold request
    (`<fold-request>`, `core/prompts.py`) in its last user message, tools and all. A
    summary asked on its own is tool-less and its system prompt (or, failing that, its
    last user message) asks for a summary. Tests whose summarizer prompt says something
    else pass their own predicate.
    """
    users = [m for m in request.messages if m.role == "user"]
    if users and is_fold_request(users[-1].text):
        return True
    if request.tools:
        return False
    if _SUMMARY_WORD.search(request.system):
        return True
    return bool(users) and bool(_SUMMARY_WORD.search(users[-1].text))


def summary_source(request: ModelRequest) -> list[Message]:
    """The messages a summary request asks to summarize.

    For a request on its own, all of them (the prompt holds the transcript). For one
    after the conversation's view, the view without the fold request itself and without
    the last messages it says stay verbatim (as a faithful model reads the request)."""
    messages = list(request.messages)
    if not messages or not is_fold_request(messages[-1].text):
        return messages
    last = messages.pop()
    kept = _KEPT_MESSAGES.search(last.text)
    others = tuple(
        p for p in last.parts if not (isinstance(p, TextPart) and is_fold_request(p.text))
    )
    if others:
        messages.append(last.model_copy(update={"parts": others}))
    if kept is not None and 0 < int(kept.group(1)) < len(messages):
        messages = messages[: -int(kept.group(1))]
    return messages


def request_text(messages: Sequence[Message]) -> str:
    """Everything a summarizer was given to read: text, reasoning and tool traffic."""
    pieces: list[str] = []
    for message in messages:
        for part in message.parts:
            if part.kind == "text":
                pieces.append(part.text)
            elif part.kind == "tool-call":
                pieces.append(f"[call {part.name} {part.input}]")
            elif part.kind == "tool-result":
                pieces.append(f"[result {part.name}] {part.output}")
            elif part.kind == "attachment" and part.text:
                pieces.append(part.text)
    return "\n".join(p for p in pieces if p)


@dataclass(frozen=True)
class StructuredSummary:
    """A deterministic summarizer: headings plus the head and tail of what it was given.

    Used as `ScriptedModel(summaries=StructuredSummary())`. The head of the input is kept
    because a stacked summary starts with the previous summary, so facts from the first
    turns survive fold after fold; the tail keeps the latest requests. The result is
    bounded by `head_chars + tail_chars` plus the headings, so summaries do not grow
    without limit as folds stack.
    """

    head_chars: int = 1200
    tail_chars: int = 600
    heading_prefix: str = "## "
    headings: tuple[str, ...] = SUMMARY_HEADINGS

    def __call__(self, request: ModelRequest) -> str:
        source = request_text(summary_source(request))
        if len(source) > self.head_chars + self.tail_chars:
            head = source[: self.head_chars]
            tail = source[len(source) - self.tail_chars :] if self.tail_chars else ""
            omitted = len(source) - len(head) - len(tail)
            source = f"{head}\n[... {omitted} characters condensed ...]\n{tail}"
        body = {heading: "- (none recorded)" for heading in self.headings}
        if self.headings:
            body[self.headings[-1]] = source or "- (nothing to summarize)"
        return "\n\n".join(f"{self.heading_prefix}{h}\n{body[h]}" for h in self.headings)


structured_summary = StructuredSummary()
"""The default deterministic structured summarizer."""

MALFORMED_SUMMARY = "Here is what happened: we talked about several things and made progress."
"""A summary with none of the required headings: what a sloppy model may answer."""


def echo_reply(request: ModelRequest) -> Reply:
    """An answer that repeats the last user message: the "echo" default of a script."""
    users = [m for m in request.messages if m.role == "user"]
    last = users[-1].text if users else ""
    return Reply(text=f"echo: {last}")
