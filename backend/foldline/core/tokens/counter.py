"""What every token counter is: the `TokenCounter` protocol, the injected `Encoder`, and
`ScaledCounter`, which calibrates an estimate by a learned ratio.

The counters themselves live beside this module, one per wire: `openai_chat` (exact, by
OpenAI's documented formulas) and `anthropic_messages` (an estimate; Claude's tokenizer
is not public). Both count the wire payload `foldline.core.wire` builds, so what is
counted is what is sent. The package is pure: the tokenizer is injected as an `Encoder`
(anything with `encode(text) -> list[int]`), so no tokenizer file is read here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from foldline.core.messages import Message, ToolSpec

CountText = Callable[[str], int]
"""Counts the tokens of a bare string (no message framing)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of engine values as the provider will receive them.

    `count_request(system, messages, tools)` must equal
    `count_request(system, [], tools) + sum(count_message(m) for m in messages)`, so a
    caller may cache per-message counts and add them up.
    """

    exact: bool
    """True when counts are exact (OpenAI tokenizers); False for estimates."""

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_tools(self, tools: Sequence[ToolSpec]) -> int: ...

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int: ...


class Encoder(Protocol):
    """A tokenizer. It must treat special-token text such as "<|endoftext|>" as ordinary
    text (tiktoken's `encode_ordinary`, i.e. `disallowed_special=()`), never raise on it:
    user text can contain anything. `foldline.tokenizers.get_encoder` returns such an
    encoder for the shipped OpenAI encodings."""

    def encode(self, text: str) -> list[int]: ...


def media_tokens(counter: object, message: Message) -> int:
    """The tokens of `message`'s images and PDF page images by `counter`'s formula (0 for
    a counter that counts no media: its counts are all text)."""
    count = getattr(counter, "media_tokens", None)
    return int(cast(int, count(message))) if callable(count) else 0


def json_compact(value: Any) -> str:
    """A JSON value as a compact string: the stand-in count of parts with no known cost."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


class ScaledCounter:
    """Another counter's counts multiplied by a calibration ratio.

    Every component (the base, each message, the tools) is scaled and rounded on its own
    and `count_request` is their sum, so the additivity law of `TokenCounter` holds
    exactly, not just up to rounding.
    """

    def __init__(self, base: TokenCounter, ratio: float = 1.0) -> None:
        if not math.isfinite(ratio) or ratio <= 0:
            raise ValueError(f"calibration ratio must be a positive number, got {ratio!r}")
        self.base = base
        self.ratio = ratio
        # A scaled count is a calibrated estimate by definition: the base stands in for a
        # tokenizer we do not have, even while the learned ratio happens to be 1.0.
        self.exact: bool = False

    def scale(self, tokens: int) -> int:
        """`tokens` of the base counter, calibrated (also for counts the base cached)."""
        # Round half up: unbiased enough over many messages, and deterministic.
        return math.floor(tokens * self.ratio + 0.5)

    def scale_message(self, tokens: int, media: int) -> int:
        """A message's base count calibrated: `media` of its `tokens` are images and page
        images, billed by the provider's formula rather than its tokenizer, so the ratio
        (learned on text) does not apply to them."""
        media = min(media, tokens)
        return self.scale(tokens - media) + media

    def media_tokens(self, message: Message) -> int:
        """The base counter's formula-billed tokens (never scaled)."""
        return media_tokens(self.base, message)

    def count_text(self, text: str) -> int:
        return self.scale(self.base.count_text(text))

    def count_message(self, message: Message) -> int:
        return self.scale_message(
            self.base.count_message(message), media_tokens(self.base, message)
        )

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return self.scale(self.base.count_tools(tools))

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        base = self.scale(self.base.count_request(system, [], tools))
        return base + sum(self.count_message(m) for m in messages)
