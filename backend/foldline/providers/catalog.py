"""Built-in limits and prices of the Anthropic and OpenAI models: the fallback when the
provider cannot be asked.

The providers' own model lists win over this file when they can be reached (Anthropic's
models endpoint reports each model's window, output cap and lifecycle; OpenAI's lists the
ids), and `[models."name"]` in config.toml wins over both. This catalog is what a fresh
install, an offline machine or a refused key falls back on, so it is kept to the published
numbers as of `CATALOG_DATE` and says which models are retired.

Prices are US dollars per million tokens from the providers' pricing pages. Anthropic bills
a prompt-cache read at 0.1 x the input price and a 5-minute cache write at 1.25 x; OpenAI
caches by itself, bills cached input at the model's published discount (0.1 x on the
GPT-5 family, 0.25 x on GPT-4.1, 0.5 x on GPT-4o and the o-series) and charges nothing
extra for writing, so the write price there is the input price. Models without prompt
caching get a cache-read price equal to the input price (no discount assumed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from foldline.core.pricing import ModelPrices

CATALOG_DATE = "2026-11-23"
"""The day the numbers below were checked against the providers' published pages."""

CatalogProvider = Literal["anthropic", "openai"]
Lifecycle = Literal["active", "deprecated", "retired"]
"""Anthropic's lifecycle words: a deprecated model still answers but has a retirement
date; a retired one is refused by the API."""


@dataclass(frozen=True)
class ModelInfo:
    id: str
    provider: CatalogProvider
    context_window: int
    max_output_tokens: int
    known: bool = True
    """True for a model in the catalog; False for a guess from the model's family."""
    note: str | None = None
    prices: ModelPrices | None = None
    """Published list prices; None where the catalog does not know them."""
    lifecycle: Lifecycle = "active"


def _claude(input_price: float, output_price: float) -> ModelPrices:
    """Anthropic's prices: cache reads 0.1 x input, 5-minute cache writes 1.25 x input."""
    return ModelPrices(
        input=input_price,
        output=output_price,
        cache_read=round(input_price * 0.1, 6),
        cache_write=round(input_price * 1.25, 6),
    )


def _gpt(input_price: float, output_price: float, cached_input: float | None) -> ModelPrices:
    """OpenAI's prices: cached input at its published rate (None: no prompt caching, the
    full input price); writing to the cache costs nothing extra."""
    return ModelPrices(
        input=input_price,
        output=output_price,
        cache_read=input_price if cached_input is None else cached_input,
        cache_write=input_price,
    )


def _gpt_cache_billed(input_price: float, output_price: float) -> ModelPrices:
    """OpenAI's GPT-6 and GPT-5.6 prices: cached input at 0.1 x the input price, and,
    unlike earlier models, writes to the (30-minute) prompt cache billed at 1.25 x."""
    return ModelPrices(
        input=input_price,
        output=output_price,
        cache_read=round(input_price * 0.1, 6),
        cache_write=round(input_price * 1.25, 6),
    )


_ONE_MILLION_BETA = "1M-token window available with the context-1m beta; 200k by default"
_LONG_INPUT_PRICE = "input over 272k tokens is billed at a higher rate"
_M = 1_000_000

_ENTRIES: tuple[ModelInfo, ...] = (
    # Anthropic. The current generation has a 1M-token window at standard prices.
    ModelInfo("claude-fable-5-1", "anthropic", _M, 128_000, prices=_claude(10, 50)),
    ModelInfo("claude-opus-5-5", "anthropic", _M, 128_000, prices=_claude(4, 20)),
    ModelInfo("claude-sonnet-5-5", "anthropic", _M, 128_000, prices=_claude(2, 10)),
    ModelInfo("claude-opus-5", "anthropic", _M, 128_000, prices=_claude(5, 25)),
    ModelInfo("claude-sonnet-5", "anthropic", _M, 128_000, prices=_claude(2, 10)),
    ModelInfo("claude-opus-4-8", "anthropic", _M, 128_000, prices=_claude(5, 25)),
    ModelInfo("claude-opus-4-7", "anthropic", _M, 128_000, prices=_claude(5, 25)),
    ModelInfo("claude-opus-4-6", "anthropic", _M, 128_000, prices=_claude(5, 25)),
    ModelInfo("claude-sonnet-4-6", "anthropic", _M, 64_000, prices=_claude(3, 15)),
    ModelInfo("claude-haiku-4-5", "anthropic", 200_000, 64_000, prices=_claude(1, 5)),
    ModelInfo("claude-opus-4-5", "anthropic", 200_000, 64_000, prices=_claude(5, 25)),
    ModelInfo(
        "claude-sonnet-4-5",
        "anthropic",
        200_000,
        64_000,
        note=_ONE_MILLION_BETA,
        prices=_claude(3, 15),
    ),
    ModelInfo("claude-opus-4-1", "anthropic", 200_000, 32_000, prices=_claude(15, 75)),
    # Retired: kept so a conversation that used one can say so and offer a switch.
    *(
        ModelInfo(name, "anthropic", 200_000, output, prices=_claude(i, o), lifecycle="retired")
        for name, output, i, o in (
            ("claude-opus-4", 32_000, 15, 75),
            ("claude-opus-4-0", 32_000, 15, 75),
            ("claude-sonnet-4", 64_000, 3, 15),
            ("claude-sonnet-4-0", 64_000, 3, 15),
            ("claude-3-7-sonnet", 64_000, 3, 15),
            ("claude-3-5-sonnet", 8_192, 3, 15),
            ("claude-3-5-haiku", 8_192, 0.8, 4),
            ("claude-3-opus", 4_096, 15, 75),
            ("claude-3-haiku", 4_096, 0.25, 1.25),
        )
    ),
    # OpenAI. The GPT-6 and GPT-5.6 families: 1.05M-token windows (922k of input), 128k
    # output, cached input at 0.1 x and cache writes at 1.25 x the input price.
    *(
        ModelInfo(
            name,
            "openai",
            1_050_000,
            128_000,
            note=_LONG_INPUT_PRICE,
            prices=_gpt_cache_billed(i, o),
        )
        for name, i, o in (
            ("gpt-6-astra", 10, 50),
            ("gpt-6.2-sol", 2, 10),
            ("gpt-6.1-sol", 2, 10),
            ("gpt-6-sol", 2, 10),
            ("gpt-6.1-terra", 1, 5),
            ("gpt-6-luna", 0.1, 0.5),
            ("gpt-5.6-sol", 4, 20),
            ("gpt-5.6-terra", 2, 12),
            ("gpt-5.6-luna", 0.2, 1.2),
        )
    ),
    ModelInfo(
        "gpt-5.5", "openai", 1_050_000, 128_000, note=_LONG_INPUT_PRICE, prices=_gpt(5, 30, 0.5)
    ),
    ModelInfo(
        "gpt-5.4", "openai", 1_050_000, 128_000, note=_LONG_INPUT_PRICE, prices=_gpt(2.5, 15, 0.25)
    ),
    ModelInfo("gpt-5.4-mini", "openai", 400_000, 128_000, prices=_gpt(0.75, 4.5, 0.075)),
    ModelInfo("gpt-5.4-nano", "openai", 400_000, 128_000, prices=_gpt(0.2, 1.25, 0.02)),
    ModelInfo("gpt-5.2", "openai", 400_000, 128_000, prices=_gpt(1.75, 14, 0.175)),
    ModelInfo("gpt-5.1", "openai", 400_000, 128_000, prices=_gpt(1.25, 10, 0.125)),
    ModelInfo("gpt-5.1-chat-latest", "openai", 128_000, 16_384, prices=_gpt(1.25, 10, 0.125)),
    ModelInfo("gpt-5", "openai", 400_000, 128_000, prices=_gpt(1.25, 10, 0.125)),
    ModelInfo("gpt-5-mini", "openai", 400_000, 128_000, prices=_gpt(0.25, 2, 0.025)),
    ModelInfo("gpt-5-nano", "openai", 400_000, 128_000, prices=_gpt(0.05, 0.4, 0.005)),
    ModelInfo("gpt-5-chat-latest", "openai", 128_000, 16_384, prices=_gpt(1.25, 10, 0.125)),
    ModelInfo("gpt-4.1", "openai", 1_047_576, 32_768, prices=_gpt(2, 8, 0.5)),
    ModelInfo("gpt-4.1-mini", "openai", 1_047_576, 32_768, prices=_gpt(0.4, 1.6, 0.1)),
    ModelInfo("gpt-4.1-nano", "openai", 1_047_576, 32_768, prices=_gpt(0.1, 0.4, 0.025)),
    ModelInfo("gpt-4o", "openai", 128_000, 16_384, prices=_gpt(2.5, 10, 1.25)),
    # The first gpt-4o snapshot had a smaller output cap than the later ones.
    ModelInfo("gpt-4o-2024-05-13", "openai", 128_000, 4_096, prices=_gpt(5, 15, None)),
    ModelInfo("gpt-4o-mini", "openai", 128_000, 16_384, prices=_gpt(0.15, 0.6, 0.075)),
    ModelInfo("chatgpt-4o-latest", "openai", 128_000, 16_384, prices=_gpt(5, 15, None)),
    ModelInfo("o4-mini", "openai", 200_000, 100_000, prices=_gpt(1.1, 4.4, 0.275)),
    ModelInfo("o3", "openai", 200_000, 100_000, prices=_gpt(2, 8, 0.5)),
    ModelInfo("o3-pro", "openai", 200_000, 100_000, prices=_gpt(20, 80, None)),
    ModelInfo("o3-mini", "openai", 200_000, 100_000, prices=_gpt(1.1, 4.4, 0.55)),
    ModelInfo("o1", "openai", 200_000, 100_000, prices=_gpt(15, 60, 7.5)),
    ModelInfo("o1-mini", "openai", 128_000, 65_536, prices=_gpt(1.1, 4.4, 0.55)),
    ModelInfo(
        "o1-preview", "openai", 128_000, 32_768, prices=_gpt(15, 60, 7.5), lifecycle="retired"
    ),
    ModelInfo("gpt-4-turbo", "openai", 128_000, 4_096, prices=_gpt(10, 30, None)),
    ModelInfo("gpt-4-turbo-preview", "openai", 128_000, 4_096, prices=_gpt(10, 30, None)),
    ModelInfo("gpt-4", "openai", 8_192, 8_192, prices=_gpt(30, 60, None)),
    ModelInfo(
        "gpt-4-32k", "openai", 32_768, 8_192, prices=_gpt(60, 120, None), lifecycle="retired"
    ),
    ModelInfo("gpt-3.5-turbo", "openai", 16_385, 4_096, prices=_gpt(0.5, 1.5, None)),
)

SUGGESTED_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-5-5",
    "openai": "gpt-6.2-sol",
}
"""What onboarding and an empty default suggest for each hosted provider: a current model
with a good balance of price and quality."""

CATALOG: dict[str, ModelInfo] = {entry.id: entry for entry in _ENTRIES}

# Snapshot suffixes that name a dated or moving version of a catalog model:
# `claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `claude-3-7-sonnet-latest`,
# `gpt-4-0613`, `gpt-4-turbo-2024-04-09`.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|\d{4}|latest|preview)$")
# `claude-sonnet-4.5` (OpenRouter spelling) → `claude-sonnet-4-5`.
_CLAUDE_DOTTED_VERSION = re.compile(r"(?<=\d)\.(?=\d)")


def name_candidates(model: str) -> list[str]:
    """Names to try for `model`, most specific first: the name lower-cased without a
    router prefix, then with its snapshot suffixes stripped one by one."""
    name = model.strip().lower()
    # A router's vendor prefix ("anthropic/claude-…", "openai/gpt-4o") is not part of the id.
    if "/" in name:
        name = name.rsplit("/", 1)[1]
    names = [name]
    if name.startswith("claude-"):
        undotted = _CLAUDE_DOTTED_VERSION.sub("-", name)
        if undotted != name:
            names.append(undotted)
    for candidate in list(names):
        stripped = candidate
        while True:
            shorter = _SNAPSHOT_SUFFIX.sub("", stripped)
            if shorter == stripped:
                break
            stripped = shorter
            names.append(stripped)
    return names


def lookup(model: str) -> ModelInfo | None:
    """The catalog entry for `model`, allowing snapshot suffixes; None when unknown."""
    for candidate in name_candidates(model):
        entry = CATALOG.get(candidate)
        if entry is not None:
            return entry
    return None


# A family's smallest published window and output cap, so a model newer than this
# catalog is neither refused nor given limits it might not have. Guesses say so
# (`known=False`) and the UI flags them.
_FAMILY_GUESSES: tuple[tuple[re.Pattern[str], CatalogProvider, int, int], ...] = (
    (re.compile(r"^claude-"), "anthropic", 200_000, 8_192),
    (re.compile(r"^gpt-5"), "openai", 128_000, 16_384),
    (re.compile(r"^gpt-4\.1"), "openai", 1_047_576, 32_768),
    (re.compile(r"^(gpt-4o|chatgpt-4o)"), "openai", 128_000, 4_096),
    (re.compile(r"^o\d"), "openai", 128_000, 32_768),
    (re.compile(r"^gpt-4"), "openai", 8_192, 4_096),
    (re.compile(r"^gpt-3\.5"), "openai", 4_096, 4_096),
)


def guess(model: str) -> ModelInfo | None:
    """A conservative guess from the model's family (`known=False`), or None."""
    name = name_candidates(model)[0]
    for pattern, provider, window, output in _FAMILY_GUESSES:
        if pattern.search(name):
            return ModelInfo(
                model, provider, window, output, known=False, note="limits guessed from family"
            )
    return None


def family_provider(model: str) -> CatalogProvider | None:
    """Which hosted API serves a model of this name: claude-* → anthropic, gpt-*/o* → openai."""
    entry = lookup(model) or guess(model)
    return entry.provider if entry else None


def all_models() -> list[ModelInfo]:
    """The catalog, for the Settings UI's model picker."""
    return list(_ENTRIES)


_OPENAI_VISION = re.compile(
    r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-5|gpt-6|o1|o3|o4)"
)
_OPENAI_NO_VISION = re.compile(r"^(o1-mini|o1-preview|o3-mini)|(audio|realtime|transcribe|tts)")


def openai_accepts_images(model: str) -> bool:
    """Whether an OpenAI model takes image input, by family: GPT-4o, GPT-4.1, GPT-4.5,
    GPT-4 Turbo, GPT-5 and GPT-6 do, and so do o1, o3 and o4-mini; o1-mini, o1-preview,
    o3-mini, GPT-3.5, the original GPT-4 and the audio/realtime/speech models do not."""
    name = model.strip().lower()
    return bool(_OPENAI_VISION.match(name)) and not _OPENAI_NO_VISION.search(name)
