"""One request to a summarizer, as the fold engine asks it and `chat/` sends it.

`SummaryRequest` is what `fold` hands to the injected `Summarizer`: a prompt, the room
for the answer and why it is asked (the whole summary, a chunk's notes, or their merge).
Its size is counted the way the provider will receive it (`request_tokens`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from foldline.core.messages import AttachmentPart, Message, TextPart
from foldline.core.tokens import TokenCounter

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


def request_tokens(counter: TokenCounter, request: SummaryRequest) -> int:
    """The input size of a summarizer request as the provider receives it."""
    return counter.count_request(request.system, [request.message()], [])
