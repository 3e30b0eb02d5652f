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

from foldline.core.messages import Message
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


def pins_block(pins: Sequence[Pin], before: int) -> str:
    """The block for the pins folded out of the view (display index < `before`);
    '' when there are none. Oldest first, each headed by its index and role."""
    folded = sorted((p for p in pins if p.index < before), key=lambda p: p.index)
    if not folded:
        return ""
    quoted = "\n\n".join(render_message(p.index, p.message) for p in folded)
    return f"<pinned>\n{PINS_HEADING}. {PINS_INTRO}\n\n{quoted}\n</pinned>"


def pins_tokens(pins: Sequence[Pin], count_text: Callable[[str], int]) -> int:
    """The size of the block holding every pin: what the pins can cost at most."""
    block = pins_block(pins, before=max((p.index for p in pins), default=-1) + 1)
    return count_text(block) if block else 0


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
