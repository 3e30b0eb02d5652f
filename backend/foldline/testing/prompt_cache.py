"""A simulation of the providers' prompt caches, as strict as the real ones.

Anthropic caches only what the client marks. A `cache_control` breakpoint on a block
(or the request's top-level `cache_control`, which marks its last block) writes the
prefix up to that block, if it is at least `minimum_tokens` long (1,024 for most
models). A request reads the longest written prefix it finds by looking, from each of its
breakpoints, at most `lookback_blocks` (20) blocks back; a prefix written further back
than that is not found, as with the real API. The part up to the last breakpoint that
was not read is written (`cache_creation_input_tokens`); `input_tokens` is the rest.
The three add up to the whole prompt, which is why Foldline's calibration sums them.
At most 4 breakpoints per request: the fake server refuses a fifth with the API's 400
(`validation.py`).

OpenAI caches automatically: the longest previously seen prefix of at least 1,024
tokens, rounded down to a multiple of 128, is reported as
`prompt_tokens_details.cached_tokens`, and `prompt_tokens` still counts the whole prompt.

Both caches forget an entry `ttl_seconds` (5 minutes) after it was last written or read,
as the real ones do; the clock is injectable so tests and benchmarks can pause without
waiting. Prefixes are compared element by element (see `fake_tokenizer.Element`), per
model.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from foldline.testing.fake_tokenizer import Element

CACHE_TTL_SECONDS = 300.0
"""Both providers' default cache lifetime, refreshed by every hit."""
LOOKBACK_BLOCKS = 20
"""How many blocks before a breakpoint Anthropic looks for an earlier cached prefix."""


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

    def __init__(
        self,
        *,
        minimum_tokens: int = 1024,
        openai_increment: int = 128,
        lookback_blocks: int = LOOKBACK_BLOCKS,
        ttl_seconds: float = CACHE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.minimum_tokens = minimum_tokens
        self.openai_increment = openai_increment
        self.lookback_blocks = lookback_blocks
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._expiry: dict[str, float] = {}

    def clear(self) -> None:
        self._expiry.clear()

    def _live(self, identity: str, now: float) -> bool:
        expiry = self._expiry.get(identity)
        return expiry is not None and expiry > now

    def _touch(self, identity: str, now: float) -> None:
        self._expiry[identity] = now + self.ttl_seconds

    def anthropic(self, model: str, fixed: int, elements: Sequence[Element]) -> CacheOutcome:
        prefixes = _prefixes(model, fixed, elements)
        total = prefixes[-1][1] if prefixes else fixed
        breakpoints = [i for i, e in enumerate(elements) if e.breakpoint]
        if not breakpoints:
            return CacheOutcome(total=total)
        now = self.clock()
        read, read_identity = 0, None
        for point in breakpoints:
            # From each breakpoint, the nearest written prefix within the look-back.
            for i in range(point, max(point - self.lookback_blocks, -1), -1):
                identity, cumulative = prefixes[i]
                if self._live(identity, now):
                    if cumulative > read:
                        read, read_identity = cumulative, identity
                    break
        if read_identity is not None:
            self._touch(read_identity, now)
        creation = 0
        last_cumulative = prefixes[breakpoints[-1]][1]
        if last_cumulative >= self.minimum_tokens and last_cumulative > read:
            creation = last_cumulative - read
        for i in breakpoints:
            identity, cumulative = prefixes[i]
            if cumulative >= self.minimum_tokens:
                self._touch(identity, now)
        return CacheOutcome(total=total, cache_read=read, cache_creation=creation)

    def openai(self, model: str, fixed: int, elements: Sequence[Element]) -> CacheOutcome:
        prefixes = _prefixes(model, fixed, elements)
        total = prefixes[-1][1] if prefixes else fixed
        now = self.clock()
        hit = 0
        # Look up before recording this prompt, so only earlier prompts can be hits.
        for identity, cumulative in prefixes:
            if self._live(identity, now):
                hit = cumulative
        cached = 0
        if hit >= self.minimum_tokens:
            cached = hit - hit % self.openai_increment
        for identity, _ in prefixes:
            self._touch(identity, now)
        return CacheOutcome(total=total, cache_read=cached)
