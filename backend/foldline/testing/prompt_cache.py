"""A simulation of the providers' prompt caches, so usage has realistic cache fields.

Anthropic caches only what the client marks: a `cache_control` breakpoint makes the
prefix up to it cacheable. A later request that repeats a written prefix reads it
(`cache_read_input_tokens`); the part up to its last breakpoint that was not read is
written (`cache_creation_input_tokens`); `input_tokens` is the rest. The three add up to
the whole prompt, which is why Foldline's calibration must sum them.

OpenAI caches automatically: the longest previously seen prefix of at least 1024 tokens,
rounded down to a multiple of 128, is reported as `prompt_tokens_details.cached_tokens`,
and `prompt_tokens` still counts the whole prompt.

Prefixes are compared element by element (tools, system, messages: see
`fake_tokenizer.Element`), per model; a real cache also expires, this one does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from foldline.testing.fake_tokenizer import Element


@dataclass(frozen=True)
class CacheOutcome:
    """How a prompt of `total` tokens splits between cache reads, writes and plain input."""

    total: int
    cache_read: int = 0
    cache_creation: int = 0

    @property
    def uncached(self) -> int:
        return self.total - self.cache_read - self.cache_creation


def _prefixes(model: str, fixed: int, elements: Sequence[Element]) -> list[tuple[str, int]]:
    """(identity, cumulative tokens) of every prefix ending at an element boundary."""
    digest = hashlib.sha256(model.encode())
    cumulative = fixed
    out: list[tuple[str, int]] = []
    for element in elements:
        digest.update(element.key.encode())
        cumulative += element.tokens
        out.append((digest.copy().hexdigest(), cumulative))
    return out


class PromptCache:
    """Remembers written prefixes; one instance per fake server (cleared by `reset`)."""

    def __init__(self, *, minimum_tokens: int = 1024, openai_increment: int = 128) -> None:
        self.minimum_tokens = minimum_tokens
        self.openai_increment = openai_increment
        self._written: set[str] = set()

    def clear(self) -> None:
        self._written.clear()

    def anthropic(self, model: str, fixed: int, elements: Sequence[Element]) -> CacheOutcome:
        prefixes = _prefixes(model, fixed, elements)
        total = prefixes[-1][1] if prefixes else fixed
        breakpoints = [i for i, e in enumerate(elements) if e.breakpoint]
        if not breakpoints:
            return CacheOutcome(total=total)
        last = breakpoints[-1]
        read = 0
        for identity, cumulative in prefixes[: last + 1]:
            if identity in self._written:
                read = cumulative
        creation = 0
        last_cumulative = prefixes[last][1]
        if last_cumulative >= self.minimum_tokens and last_cumulative > read:
            creation = last_cumulative - read
        for i in breakpoints:
            identity, cumulative = prefixes[i]
            if cumulative >= self.minimum_tokens:
                self._written.add(identity)
        return CacheOutcome(total=total, cache_read=read, cache_creation=creation)

    def openai(self, model: str, fixed: int, elements: Sequence[Element]) -> CacheOutcome:
        prefixes = _prefixes(model, fixed, elements)
        total = prefixes[-1][1] if prefixes else fixed
        hit = 0
        # Look up before recording this prompt, so only earlier prompts can be hits.
        for identity, cumulative in prefixes:
            if identity in self._written:
                hit = cumulative
        cached = 0
        if hit >= self.minimum_tokens:
            cached = hit - hit % self.openai_increment
        for identity, _ in prefixes:
            self._written.add(identity)
        return CacheOutcome(total=total, cache_read=cached)
