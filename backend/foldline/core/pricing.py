"""What a model call costs: prices per million tokens, and the cost of one call's usage.

Prices come from the model catalog or from `[models."name"]` in config.toml. A model
with no known price (a local server, a model newer than the catalog) has `prices=None`
and is shown in tokens only: a made-up price would be worse than none.
"""

from __future__ import annotations

from dataclasses import dataclass

PER_MILLION = 1_000_000


@dataclass(frozen=True)
class ModelPrices:
    """US dollars per million tokens of each kind."""

    input: float
    output: float
    cache_read: float
    """A cached prefix read back (Anthropic: 0.1 x input; OpenAI: 0.1-0.5 x input)."""
    cache_write: float
    """Tokens written to the cache (Anthropic: 1.25 x input for the 5-minute cache;
    OpenAI charges nothing extra, so this equals `input` there)."""


@dataclass(frozen=True)
class CallCost:
    """The dollars of one call, split by kind, and what the cache saved."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    saved: float
    """What the cache-read tokens would have cost at the full input price, minus what
    they did cost, minus the cache-write premium: caching's net saving on this call."""

    @property
    def total(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write


def call_cost(
    prices: ModelPrices,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_creation_tokens: int = 0,
) -> CallCost:
    """The cost of one call. `input_tokens` excludes cache reads and writes, as both
    providers' usage (normalized by the providers layer) reports it."""
    read = cache_read_tokens * prices.cache_read / PER_MILLION
    write = cache_creation_tokens * prices.cache_write / PER_MILLION
    saved = (
        cache_read_tokens * (prices.input - prices.cache_read)
        - cache_creation_tokens * (prices.cache_write - prices.input)
    ) / PER_MILLION
    return CallCost(
        input=input_tokens * prices.input / PER_MILLION,
        output=output_tokens * prices.output / PER_MILLION,
        cache_read=read,
        cache_write=write,
        saved=saved,
    )
