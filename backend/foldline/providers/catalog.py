"""Built-in limits of the Anthropic and OpenAI models: context window and output cap.

The numbers are the providers' published defaults. Where a larger window exists only
behind a beta flag or a higher usage tier (Claude's 1M-token context), the catalog gives
the default window and says so in `note`: assuming the larger one would overflow for
everybody who has not opted in. A person who has can say so in config.toml
(`[models."claude-sonnet-4-5"] context_window = 1000000`), which wins over the catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from foldline.core.pricing import ModelPrices

CatalogProvider = Literal["anthropic", "openai"]


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


_ONE_MILLION_BETA = "1M-token window available with the context-1m beta; 200k by default"

_ENTRIES: tuple[ModelInfo, ...] = (
    # Anthropic. Every Claude model since Claude 3 has a 200k default window.
    ModelInfo("claude-opus-4-6", "anthropic", 200_000, 128_000, note=_ONE_MILLION_BETA),
    ModelInfo("claude-sonnet-4-6", "anthropic", 200_000, 64_000, note=_ONE_MILLION_BETA),
    ModelInfo("claude-opus-4-5", "anthropic", 200_000, 64_000),
    ModelInfo("claude-sonnet-4-5", "anthropic", 200_000, 64_000, note=_ONE_MILLION_BETA),
    ModelInfo("claude-haiku-4-5", "anthropic", 200_000, 64_000),
    ModelInfo("claude-opus-4-1", "anthropic", 200_000, 32_000),
    ModelInfo("claude-opus-4", "anthropic", 200_000, 32_000),
    ModelInfo("claude-opus-4-0", "anthropic", 200_000, 32_000),
    ModelInfo("claude-sonnet-4", "anthropic", 200_000, 64_000, note=_ONE_MILLION_BETA),
    ModelInfo("claude-sonnet-4-0", "anthropic", 200_000, 64_000, note=_ONE_MILLION_BETA),
    ModelInfo("claude-3-7-sonnet", "anthropic", 200_000, 64_000),
    ModelInfo("claude-3-5-sonnet", "anthropic", 200_000, 8_192),
    ModelInfo("claude-3-5-haiku", "anthropic", 200_000, 8_192),
    ModelInfo("claude-3-opus", "anthropic", 200_000, 4_096),
    ModelInfo("claude-3-haiku", "anthropic", 200_000, 4_096),
    # OpenAI.
    ModelInfo("gpt-5.1", "openai", 400_000, 128_000),
    ModelInfo("gpt-5.1-chat-latest", "openai", 128_000, 16_384),
    ModelInfo("gpt-5", "openai", 400_000, 128_000),
    ModelInfo("gpt-5-mini", "openai", 400_000, 128_000),
    ModelInfo("gpt-5-nano", "openai", 400_000, 128_000),
    ModelInfo("gpt-5-chat-latest", "openai", 128_000, 16_384),
    ModelInfo("gpt-4.1", "openai", 1_047_576, 32_768),
    ModelInfo("gpt-4.1-mini", "openai", 1_047_576, 32_768),
    ModelInfo("gpt-4.1-nano", "openai", 1_047_576, 32_768),
    ModelInfo("gpt-4o", "openai", 128_000, 16_384),
    # The first gpt-4o snapshot had a smaller output cap than the later ones.
    ModelInfo("gpt-4o-2024-05-13", "openai", 128_000, 4_096),
    ModelInfo("gpt-4o-mini", "openai", 128_000, 16_384),
    ModelInfo("chatgpt-4o-latest", "openai", 128_000, 16_384),
    ModelInfo("o4-mini", "openai", 200_000, 100_000),
    ModelInfo("o3", "openai", 200_000, 100_000),
    ModelInfo("o3-pro", "openai", 200_000, 100_000),
    ModelInfo("o3-mini", "openai", 200_000, 100_000),
    ModelInfo("o1", "openai", 200_000, 100_000),
    ModelInfo("o1-mini", "openai", 128_000, 65_536),
    ModelInfo("o1-preview", "openai", 128_000, 32_768),
    ModelInfo("gpt-4-turbo", "openai", 128_000, 4_096),
    ModelInfo("gpt-4-turbo-preview", "openai", 128_000, 4_096),
    ModelInfo("gpt-4", "openai", 8_192, 8_192),
    ModelInfo("gpt-4-32k", "openai", 32_768, 8_192),
    ModelInfo("gpt-3.5-turbo", "openai", 16_385, 4_096),
)

CATALOG: dict[str, ModelInfo] = {entry.id: entry for entry in _ENTRIES}

# Snapshot suffixes that name a dated or moving version of a catalog model:
# `claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `claude-3-7-sonnet-latest`,
# `gpt-4-0613`, `gpt-4-turbo-2024-04-09`.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|\d{4}|latest|preview)$")
# `claude-sonnet-4.5` (OpenRouter spelling) → `claude-sonnet-4-5`.
_CLAUDE_DOTTED_VERSION = re.compile(r"(?<=\d)\.(?=\d)")


def _candidates(model: str) -> list[str]:
    """Names to try for `model`, most specific first."""
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
    for candidate in _candidates(model):
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
    name = _candidates(model)[0]
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
