"""An assistant answer as a turn assembles it: the streamed text, reasoning and tool
calls gathered into one message, the usage stored on it, and whether Continue may extend
it in place. The turn loop (`chat/turn.py`) drives these; they hold no I/O of their own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from foldline.api.events import CallUsageOut
from foldline.chat.usage import Billing, cut_off_call, model_call
from foldline.core.messages import Message, Part, ReasoningPart, TextPart, ToolCallPart
from foldline.providers.base import ReasoningDelta, Stop, Usage
from foldline.store import MessageRecord
from foldline.store.usage import ModelCall


@dataclass
class StreamedAnswer:
    """An assistant message being assembled from provider events."""

    text: str = ""
    reasoning: str = ""
    """The reasoning block being streamed (not yet closed by its provider's proof)."""
    thoughts: list[ReasoningPart] = field(default_factory=list)
    """The reasoning blocks already closed, in order."""
    reasoning_started: float | None = None
    reasoning_seconds: float | None = None
    """How long the model reasoned: from its first reasoning delta to its first answer
    delta (text or tool call), or to the end of the call."""
    calls: list[ToolCallPart] = field(default_factory=list)
    sent_at: float | None = None
    """When the request went out (the turn's monotonic clock)."""
    first_at: float | None = None
    """When the first delta (text, reasoning or a tool call) came back."""
    last_at: float | None = None
    """When the last delta came back."""
    usage: Usage | None = None
    stop: Stop | None = None
    before: tuple[Part, ...] = ()
    """The parts of the cut-off answer this one continues in place (Continue)."""

    def add_reasoning(self, delta: ReasoningDelta, now: float) -> None:
        if self.reasoning_started is None:
            self.reasoning_started = now
        self.reasoning += delta.text
        if delta.closes:
            self.thoughts.append(
                ReasoningPart(
                    text=self.reasoning,
                    signature=delta.signature,
                    redacted=delta.redacted,
                    item_id=delta.item_id,
                    encrypted_content=delta.encrypted_content,
                )
            )
            self.reasoning = ""

    def arrived(self, now: float) -> None:
        """A delta came back at `now`: the answer's speed is timed from the first one."""
        if self.first_at is None:
            self.first_at = now
        self.last_at = now

    def speed(self) -> dict[str, float]:
        """`firstTokenSeconds` (from the request to the first delta) and
        `tokensPerSecond` (this call's output tokens over the time they streamed), as far
        as they are known; stored with the answer's usage for its meta row."""
        out: dict[str, float] = {}
        if self.sent_at is not None and self.first_at is not None:
            out["firstTokenSeconds"] = round(self.first_at - self.sent_at, 2)
        streamed = (
            self.last_at - self.first_at
            if self.first_at is not None and self.last_at is not None
            else 0.0
        )
        if self.usage is not None and self.usage.output_tokens > 1 and streamed > 0:
            out["tokensPerSecond"] = round(self.usage.output_tokens / streamed, 1)
        return out

    def end_reasoning(self, now: float) -> None:
        """The answer itself began (or the call ended): the thinking time is known."""
        if self.reasoning_started is not None and self.reasoning_seconds is None:
            self.reasoning_seconds = round(now - self.reasoning_started, 1)

    def message(self) -> Message:
        parts: list[Part] = list(self.before)
        thoughts = list(self.thoughts)
        if self.reasoning:
            thoughts.append(ReasoningPart(text=self.reasoning))
        parts.extend(thoughts)
        if self.text:
            # The continuation goes on the same text: one text part, so the wire (which
            # joins separate parts with a blank line on OpenAI) reads it as one answer.
            last = parts[-1] if parts else None
            if isinstance(last, TextPart) and not thoughts:
                parts[-1] = TextPart(text=last.text + self.text)
            else:
                parts.append(TextPart(text=self.text))
        parts.extend(self.calls)
        return Message(role="assistant", parts=tuple(parts))

    @property
    def empty(self) -> bool:
        return not (self.text or self.reasoning or self.thoughts or self.calls)


def call_usage(usage: Usage) -> CallUsageOut:
    """A call's usage as the API shows it (in the `usage` event and on its message)."""
    return CallUsageOut.model_validate(usage, from_attributes=True)


def answer_usage(
    usage: Usage,
    earlier: dict[str, Any] | None,
    reasoning_seconds: float | None = None,
    speed: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The usage stored on an answer: its last call's, with `outputTokens` counting every
    call that wrote it (an answer continued in place was written by two or more),
    `reasoningSeconds`, how long the model reasoned, when it did, and the last call's
    speed (`StreamedAnswer.speed`)."""
    stored = call_usage(usage).model_dump()
    stored.update(speed or {})
    if earlier:
        stored["outputTokens"] += int(earlier.get("outputTokens") or 0)
        if earlier.get(ESTIMATED_OUTPUT):
            stored[ESTIMATED_OUTPUT] = int(earlier[ESTIMATED_OUTPUT])
    if reasoning_seconds is not None:
        stored["reasoningSeconds"] = reasoning_seconds
    return stored


ESTIMATED_OUTPUT = "estimatedOutputTokens"
"""In a stored usage: how many of `outputTokens` were counted with the tokenizer, not
reported by the provider (a call stopped before the end of its stream, where providers
report usage)."""


def stopped_usage(earlier: dict[str, Any] | None, counted_output: int) -> dict[str, Any] | None:
    """The usage stored on an answer stopped before its call's usage was reported: the
    earlier calls' (an answer continued, then stopped again) plus this call's output as
    counted (`counted_output`), so a later Continue adds to the whole answer's tokens, not
    only its own. None when there is nothing to say."""
    if not counted_output:
        return None
    stored = dict(earlier or {})
    stored["outputTokens"] = int(stored.get("outputTokens") or 0) + counted_output
    stored[ESTIMATED_OUTPUT] = int(stored.get(ESTIMATED_OUTPUT) or 0) + counted_output
    return stored


def cut_off_usage(
    answer: StreamedAnswer,
    record: MessageRecord,
    count_text: Callable[[str], int],
    billing: Billing,
    *,
    turn: int,
    view_tokens: int,
    last_call: Callable[[], ModelCall | None],
) -> tuple[dict[str, Any] | None, ModelCall | None]:
    """The usage to store on `record`, an answer cut off (Stop, a broken stream), and
    the call to record for it (None when it had none to bill). A call that got as far as
    its usage stored it as reported; one cut before it is counted (`estimated`): the
    view it was sent (`view_tokens`) and what it wrote, which the provider bills."""
    if answer.usage is not None:
        stored = answer_usage(answer.usage, record.usage, answer.reasoning_seconds)
        return stored, model_call(
            answer.usage, billing, purpose="chat", turn=turn, message_id=record.id
        )
    written = answer.text + answer.reasoning + "".join(part.text for part in answer.thoughts)
    if not written:  # refused or stopped before a word: nothing to bill that is known
        return None, None
    output = count_text(written)
    call = cut_off_call(
        billing,
        turn=turn,
        message_id=record.id,
        input_tokens=view_tokens,
        output_tokens=output,
        last_call=last_call(),
    )
    return stopped_usage(record.usage, output), call


def continuable(record: MessageRecord) -> bool:
    """An answer Continue extends in place: cut off (stopped, stream broken) with text
    and without tool calls. An answer that made calls is followed by their results and a
    new answer instead, and an empty failed one is simply answered again."""
    message = record.message
    return (
        message.role == "assistant"
        and record.status in ("interrupted", "error")
        and bool(message.text.strip())
        and not message.tool_calls
    )
