"""Pinned messages: what the person chose to keep in the model's view, verbatim.

A pinned message that a fold has moved out of the view rides in a "Pinned by the person"
block right after the summary, in every request, whatever folds happen (undo included:
pins belong to messages, not to folds). A pinned message still in the view is not
repeated. Pins are counted in the budget like everything sent, and their total is capped
so that they cannot crowd out the conversation itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from foldline.core.messages import AttachmentPart, Message
from foldline.core.prompts import render_message

PINS_BUDGET_SHARE = 0.15
"""All pins together may take at most this share of the input budget."""
UNLIMITED_PINS_TOKENS = 32_000
"""The cap when the model's window is unlimited (no budget to take a share of)."""

PINS_HEADING = "Pinned by the person"
PINS_INTRO = (
    "The person pinned these earlier messages so that they stay in your context word for "
    "word; they are quoted exactly as written:"
)


@dataclass(frozen=True)
class Pin:
    """A pinned message and its display index."""

    index: int
    message: Message


def pins_cap(input_budget: int | None) -> int:
    """How many tokens all pins together may take."""
    if input_budget is None:
        return UNLIMITED_PINS_TOKENS
    return int(input_budget * PINS_BUDGET_SHARE)


def _folded(pins: Sequence[Pin], before: int) -> list[Pin]:
    return sorted((p for p in pins if p.index < before), key=lambda p: p.index)


def pins_block(pins: Sequence[Pin], before: int) -> str:
    """The block for the pins folded out of the view (display index < `before`);
    '' when there are none. Oldest first, each headed by its index and role. A pinned
    message's files are named here; they ride as files after it (`pinned_files`)."""
    folded = _folded(pins, before)
    if not folded:
        return ""
    # A person's files ride as files (`pinned_files`), so only their names are quoted
    # here; a tool's attachments are quoted with their text, as the transcript shows them.
    quoted = "\n\n".join(
        render_message(p.index, p.message, file_text=p.message.role != "user") for p in folded
    )
    return f"<pinned>\n{PINS_HEADING}. {PINS_INTRO}\n\n{quoted}\n</pinned>"


def pinned_files(pins: Sequence[Pin], before: int) -> tuple[AttachmentPart, ...]:
    """The files of the pins folded out of the view, verbatim, in order: images and PDFs
    as the wire sends files, text files as their text."""
    return tuple(
        part
        for pin in _folded(pins, before)
        if pin.message.role == "user"
        for part in pin.message.parts
        if isinstance(part, AttachmentPart)
    )


def pins_tokens(
    pins: Sequence[Pin],
    count_text: Callable[[str], int],
    count_message: Callable[[Message], int] | None = None,
) -> int:
    """The size of the block holding every pin, and of their files when `count_message`
    is given: what the pins can cost at most."""
    before = max((p.index for p in pins), default=-1) + 1
    block = pins_block(pins, before)
    total = count_text(block) if block else 0
    files = pinned_files(pins, before)
    if files and count_message is not None:
        # The files' own cost: the message holding them less an empty one's framing.
        total += count_message(Message(role="user", parts=files)) - count_message(
            Message(role="user")
        )
    return total


def pins_over_cap(
    pins: Sequence[tuple[Pin, str]], cap: int, count_text: Callable[[str], int]
) -> list[Pin]:
    """Which pins to unpin so that the rest fit `cap`: the oldest pinned go first.

    `pins` pairs each pin with when it was pinned (an ISO timestamp). Used where pins
    arrive without the person choosing them one by one under the cap (an import)."""
    newest_first = [pin for pin, _ in sorted(pins, key=lambda item: item[1], reverse=True)]
    kept: list[Pin] = []
    dropped: list[Pin] = []
    for pin in newest_first:
        if pins_tokens([*kept, pin], count_text) <= cap:
            kept.append(pin)
        else:
            dropped.append(pin)
    return dropped
