"""Messages as pure values.

A message is a role plus ordered parts; every part carries a `kind` discriminator so a
list of parts round-trips through JSON without losing its type. Identity (ids, sequence
numbers, timestamps) belongs to the store, not to these values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Value(BaseModel):
    """Base for immutable values: frozen so a message can be shared without copying."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Value):
    kind: Literal["text"] = "text"
    text: str


class ReasoningPart(_Value):
    """Model reasoning ("thinking") that came before an answer or a tool call.

    `text` is what the person is shown: the full thinking where the provider gives it
    (Anthropic), else the provider's summary of it (OpenAI Responses). The other fields
    are the provider's opaque proof that the reasoning is its own; inside a tool loop the
    reasoning must go back to the same provider byte-identical, so they are kept as
    received and each wire sends only the reasoning it can verify:
    - Anthropic: `signature` of a `thinking` block, or `redacted` (the encrypted `data`
      of a `redacted_thinking` block, whose `text` is empty);
    - OpenAI Responses: `item_id` of the `reasoning` item and its `encrypted_content`
      (asked for with `include: ["reasoning.encrypted_content"]`, since nothing is stored).
    """

    kind: Literal["reasoning"] = "reasoning"
    text: str
    signature: str | None = None
    redacted: str | None = None
    item_id: str | None = None
    encrypted_content: str | None = None


class ToolCallPart(_Value):
    kind: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultPart(_Value):
    """The result of one tool call.

    `output` is what the model is shown (possibly truncated at ingest); when it was
    truncated, `full_output` keeps the original so nothing is lost. `compacted_at` is set
    (an ISO timestamp given by the caller) when pruning replaced the output in the model's
    view by a placeholder; the output itself is never deleted.
    """

    kind: Literal["tool-result"] = "tool-result"
    call_id: str
    name: str
    output: str
    is_error: bool = False
    compacted_at: str | None = None
    full_output: str | None = None


class AttachmentPart(_Value):
    """A file: attached by the person, or returned by a tool (an image, a resource).

    `text` is the content of a text-like file, or the text extracted from a PDF (what a
    model that takes no PDFs is sent). `data_base64` holds the bytes where the model's
    view needs them; the store keeps identical bytes once (by `sha256`) and leaves them
    out of message pages. `size` is in bytes; `width`/`height` are an image's pixels and
    `pages` a PDF's page count, known at upload so tokens can be counted without decoding.
    `as_text` marks a PDF that is sent as its extracted text rather than as a document,
    because its page images would take too much of the model's window (decided once,
    when the message is sent: `foldline.core.attachments.settle_pdf_form`).
    """

    kind: Literal["attachment"] = "attachment"
    name: str
    media_type: str
    text: str | None = None
    data_base64: str | None = None
    sha256: str | None = None
    size: int | None = None
    width: int | None = None
    height: int | None = None
    pages: int | None = None
    as_text: bool | None = None


Part = Annotated[
    TextPart | ReasoningPart | ToolCallPart | ToolResultPart | AttachmentPart,
    Field(discriminator="kind"),
]

Role = Literal["user", "assistant", "tool"]
"""`tool` messages hold only ToolResultParts answering the calls of the assistant message
before them; providers map them to their own shape (OpenAI `tool` messages, Anthropic
`tool_result` blocks inside a user message)."""


class Message(_Value):
    role: Role
    parts: tuple[Part, ...] = ()

    @property
    def text(self) -> str:
        """The concatenated text parts, for display and search."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))


def user(text: str) -> Message:
    return Message(role="user", parts=(TextPart(text=text),))


def assistant(text: str, *calls: ToolCallPart) -> Message:
    parts: tuple[Part, ...] = ((TextPart(text=text),) if text else ()) + calls
    return Message(role="assistant", parts=parts)


def tool_results(*results: ToolResultPart) -> Message:
    return Message(role="tool", parts=results)


class ToolSpec(_Value):
    """A tool offered to the model: name, description and JSON-Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


@dataclass(frozen=True)
class HistoryWindow:
    """The display history from `start` on: `tail[k]` is the message at display index
    `start + k`.

    The store loads only the rows from `apiStartIndex`, so the cost of building the
    model's view does not grow with the history. This is deliberately not a `Sequence`:
    it has no length and cannot be iterated, so nothing can mistake it for the whole
    history. Reads go through `at(i)` and `since(i)` with absolute display indices, and a
    read before `start` raises IndexError: an accidental full-history scan fails loudly
    instead of silently slowing down.
    """

    start: int
    tail: tuple[Message, ...]

    @classmethod
    def whole(cls, messages: Sequence[Message]) -> HistoryWindow:
        """A window over a complete history (from display index 0)."""
        return cls(0, tuple(messages))

    @property
    def end(self) -> int:
        """The display index after the last message (the history's length)."""
        return self.start + len(self.tail)

    def at(self, index: int) -> Message:
        if not self.start <= index < self.end:
            raise IndexError(f"index {index} is outside the loaded window {self.start}:{self.end}")
        return self.tail[index - self.start]

    def since(self, index: int) -> list[Message]:
        """The messages from display index `index` to the end."""
        return self.between(index, self.end)

    def between(self, begin: int, stop: int) -> list[Message]:
        """The messages with display indices in [begin, stop)."""
        if begin < self.start and stop > begin:
            raise IndexError(f"index {begin} is before the loaded window ({self.start})")
        return list(self.tail[max(begin - self.start, 0) : max(stop - self.start, 0)])


History = HistoryWindow | Sequence[Message]
"""What the engine functions read: a loaded window, or a complete list of messages."""


def as_window(history: History) -> HistoryWindow:
    """A window for `history`; a plain sequence is a complete history from index 0."""
    return history if isinstance(history, HistoryWindow) else HistoryWindow.whole(history)
