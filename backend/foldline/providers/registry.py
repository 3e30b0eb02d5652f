"""Which provider serves a model, with which limits, and the `Provider` that calls it.

Built on the configuration (`foldline.config`), which never imports this module.

A model's limits are resolved in this order, first answer wins:
1. `[models."name"]` in config.toml: the person's explicit word (a proxy with a smaller
   window, an opted-in 1M beta, an Ollama model with a known num_ctx) beats any default;
2. for an OpenAI-compatible provider, the server itself (`discover_model`): a local
   server's window is what it was loaded with, which no catalog can know;
3. the provider's own model list (`listing`, see `foldline.providers.discovery`):
   Anthropic's models endpoint reports each model's window and output cap, newer than
   any catalog shipped with the app;
4. the built-in catalog (`foldline.providers.catalog`);
5. the server, for other kinds (rarely useful, kept for proxies);
6. a guess from the model's family (claude-* has at least 200k), flagged `known=False`;
7. the smallest common window (2048, `DEFAULT_CONTEXT_WINDOW`), flagged `known=False`
   so the UI can say so.

For an OpenAI-compatible provider, "the server" of step 2 is either a window passed in
(`discovered_context_window`) or what the server told when it was last asked, kept with
the provider's model list (`ListedModel.window_source` says where it was read).

The working budget (what the fold thresholds apply to) is the config's `working_budget`,
else `DEFAULT_WORKING_BUDGET` for windows of `LARGE_WINDOW` or more, else the whole input
budget: on a 1M-token window, folding at 80% would send 800k tokens with every turn.

An explicit entry in the file comes first because it is the only source that knows the
person's own setup, and a local server is asked before the catalog because only it knows
the window it actually loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx2

from foldline.config import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_OUTPUT_TOKENS,
    AppConfig,
    ConfigError,
    ModelConfig,
    NoModelConnected,
    ProviderKind,
    effective_base_url,
    find_provider_key,
    provider_config,
)
from foldline.core.pricing import ModelPrices
from foldline.core.reasoning import (
    DEFAULT_EFFORT,
    Effort,
    ThinkingForm,
    default_effort,
    prefers_responses_api,
    reasoning_support,
)
from foldline.providers import catalog
from foldline.providers.base import Provider
from foldline.providers.catalog import Lifecycle
from foldline.providers.listing import ListedModel

# The SDK-backed modules are imported where a provider is built: importing `anthropic`
# and `openai` takes seconds, and the server and the window should not wait for them.

LimitSource = Literal["config", "server", "provider", "catalog", "guess", "default"]
WorkingBudgetSource = Literal["config", "default"]
ModelApi = Literal["responses", "chat"]

LARGE_WINDOW = 500_000
"""Windows at least this large get `DEFAULT_WORKING_BUDGET` unless the config says."""
DEFAULT_WORKING_BUDGET = 200_000
"""Where a very large window folds by default: a turn then costs at most about this many
input tokens, and answers stay on inputs of a size models handle well."""


class ModelListing(Protocol):
    """What the providers listed (`foldline.providers.listing.ModelDirectory`)."""

    def find(self, provider: str, model: str) -> ListedModel | None: ...


def build_provider(
    config: AppConfig,
    provider_name: str,
    *,
    http_client: httpx2.AsyncClient | None = None,
    api: ModelApi = "chat",
) -> Provider:
    """The `Provider` for a configured provider, with its key and base URL resolved.

    `api` picks the OpenAI API for an OpenAI or OpenAI-compatible provider: `responses`
    gets the Responses API provider, `chat` Chat Completions."""
    provider = provider_config(config, provider_name)
    base_url, _ = effective_base_url(config, provider_name)
    found = find_provider_key(config, provider_name)
    key = found[0] if found else None
    if provider.kind == "anthropic":
        from foldline.providers.anthropic import AnthropicProvider

        return AnthropicProvider(provider_name, key, base_url, http_client=http_client)
    if api == "responses":
        from foldline.providers.openai_responses import OpenAIResponsesProvider

        if provider.kind != "openai" and not base_url:
            raise ConfigError(f"provider `{provider_name}` (openai-compatible) needs a base_url")
        return OpenAIResponsesProvider(
            provider_name,
            key,
            base_url,
            compatible=provider.kind != "openai",
            http_client=http_client,
        )
    if provider.kind == "openai":
        from foldline.providers.openai import OpenAIProvider

        return OpenAIProvider(provider_name, key, base_url, http_client=http_client)
    if not base_url:
        raise ConfigError(f"provider `{provider_name}` (openai-compatible) needs a base_url")
    from foldline.providers.compat import OpenAICompatibleProvider

    return OpenAICompatibleProvider(provider_name, key, base_url, http_client=http_client)


def _hosted_kind(model: str) -> ProviderKind | None:
    """claude-* → anthropic; gpt-*, chatgpt-*, o1/o3/o4… → openai; anything else None."""
    name = model.strip().lower()
    if ":" in name or "/" in name or name.startswith("gpt-oss"):
        # Ollama tags ("llama3:8b", "gpt-oss:20b") and router ids ("vendor/model") are
        # served by OpenAI-compatible servers, whatever the model is called.
        return None
    if name.startswith("claude-"):
        return "anthropic"
    if name.startswith(("gpt-", "chatgpt-")) or re.match(r"^o\d", name):
        return "openai"
    return None


def provider_name_for_model(config: AppConfig, model: str) -> str:
    """Which configured provider serves `model` (see `_hosted_kind` for the default rule)."""
    entry = config.models.get(model)
    if entry is not None and entry.provider:
        provider_config(config, entry.provider)
        return entry.provider
    kind = _hosted_kind(model)
    if kind is not None:
        own = config.providers.get(kind)
        if own is not None and own.kind == kind:
            return kind
        for name, provider in config.providers.items():
            if provider.kind == kind:
                return name
    for name, provider in config.providers.items():
        if provider.kind == "openai-compatible":
            return name
    if not model.strip():
        # A conversation made before any provider was connected has no model yet: naming
        # an empty model in the message would only puzzle the person.
        raise NoModelConnected(
            "no model is connected yet: connect one on the welcome page or in Settings, "
            "then pick it for this conversation"
        )
    raise ConfigError(
        f"no provider for model `{model}`: add an openai-compatible provider or a "
        f'[models."{model}"] table naming one'
    )


@dataclass(frozen=True)
class ResolvedModel:
    provider_name: str
    provider_kind: ProviderKind
    model: str
    context_window: int
    """Tokens in + out the model accepts; 0 = unlimited."""
    max_output_tokens: int
    """The most the model can write in one answer."""
    input_limit: int | None
    known: bool
    """False when the window is a guess or the default: the UI flags it."""
    source: LimitSource
    output_reserve: int
    """What to request as `max_output_tokens` and keep free in the window. The model's
    maximum would waste most of a window (Claude Opus 4.6: 128k of 200k), so the reserve
    is an eighth of the window (at least 4096), never more than a quarter nor the max."""
    note: str | None = None
    prices: ModelPrices | None = None
    """Dollars per million tokens (config overrides the catalog); None = tokens only."""
    lifecycle: Lifecycle | None = None
    """From the provider's list, else the catalog; None when neither knows the model."""
    working_budget: int | None = None
    """The input tokens the fold thresholds apply to; None = the whole input budget."""
    working_budget_source: WorkingBudgetSource | None = None
    display_name: str | None = None
    vision: bool = False
    """The model accepts image input: `[models."x"] vision`, else Claude and OpenAI's
    image-taking families (`catalog.openai_accepts_images`); false for any other model."""
    reasoning_effort: Effort = "off"
    """`[models."x"] reasoning_effort`, else `medium` for a reasoning family, else off."""
    reasons: bool = False
    """The model belongs to a family that reasons (an effort other than off means something)."""
    thinking: ThinkingForm | None = None
    """`[models."x"] thinking`: the Anthropic form of reasoning the model takes, for a
    Claude name the catalog does not know; None: told by the name."""
    temperature: float | None = None
    """`[models."x"] temperature`; None: the provider's default."""
    api: ModelApi = "chat"
    """The OpenAI API the model is reached through (`[models."x"] api`, else `responses`
    for OpenAI's own reasoning models); always `chat` for Anthropic, which has one API."""
    window_source: str | None = None
    """With `source == "server"`: where the server stated the window ("llama.cpp /props
    n_ctx", "llama-cpp-python overflow error")."""
    server: str | None = None
    """The kind of local server that serves the model, when it was asked."""
    counts_tools: bool = True
    """Tool definitions take room in the prompt. False where the server said its chat
    template has no place for them (llama.cpp's `supports_tools`, Ollama's and LM
    Studio's capabilities), and on llama-cpp-python, whose count is of the chat rendered
    without them (`providers.server_tokens`)."""


def _output_reserve(window: int, max_output: int) -> int:
    if window <= 0:
        return min(max_output, 32_768)
    return max(1, min(max_output, max(window // 8, 4096), window // 4))


def _window_and_source(
    entry: ModelConfig,
    kind: ProviderKind,
    discovered: int | None,
    listed: ListedModel | None,
    info: catalog.ModelInfo | None,
    guessed: catalog.ModelInfo | None,
) -> tuple[int, LimitSource]:
    """A model's context window and where it was read, the most trusted source first:
    the configuration, a local server's own word, the provider's list, the catalog, a
    guess from the name, the smallest common window."""
    if entry.context_window is not None:
        return entry.context_window, "config"
    if kind == "openai-compatible" and discovered:
        return discovered, "server"
    if listed is not None and listed.context_window:
        # A local server's own word (kept in its listing when it was asked) is "server".
        return listed.context_window, "server" if kind == "openai-compatible" else "provider"
    if info is not None:
        return info.context_window, "catalog"
    if discovered:
        return discovered, "server"
    if guessed is not None:
        return guessed.context_window, "guess"
    return DEFAULT_CONTEXT_WINDOW, "default"


def resolve_model(
    config: AppConfig,
    model_name: str,
    *,
    discovered_context_window: int | None = None,
    listing: ModelListing | None = None,
    provider_name: str | None = None,
) -> ResolvedModel:
    """The provider and limits of `model_name` (order in the module docstring).

    `provider_name` names the provider when the caller knows it (a model from that
    provider's list); otherwise it is chosen by `provider_name_for_model`.
    """
    if provider_name is None:
        provider_name = provider_name_for_model(config, model_name)
    kind = provider_config(config, provider_name).kind
    entry = config.models.get(model_name) or ModelConfig()
    info = catalog.lookup(model_name)
    guessed = catalog.guess(model_name)
    discovered = discovered_context_window if discovered_context_window else None
    listed = listing.find(provider_name, model_name) if listing is not None else None

    window, source = _window_and_source(entry, kind, discovered, listed, info, guessed)

    if entry.max_output_tokens is not None:
        max_output = entry.max_output_tokens
    elif listed is not None and listed.max_output_tokens:
        max_output = listed.max_output_tokens
    elif info is not None:
        max_output = info.max_output_tokens
    elif guessed is not None:
        max_output = guessed.max_output_tokens
    else:
        max_output = DEFAULT_MAX_OUTPUT_TOKENS
    if window > 0 and entry.max_output_tokens is None and source not in ("catalog", "provider"):
        # A catalog output cap larger than a smaller loaded or configured window cannot
        # hold; half the window is the most an answer can sensibly take.
        max_output = min(max_output, max(window // 2, 1))

    working_budget, working_source = _working_budget(entry, window)
    # The configured form of thinking means something on Anthropic only (the config
    # refuses it elsewhere; a model moved to another provider by hand just ignores it).
    thinking = entry.thinking if kind == "anthropic" else None
    note = info.note if info is not None and source == "catalog" else None
    if source in ("guess", "default"):
        note = f"context window of `{model_name}` unknown; assuming {window} tokens"
    if source == "default":
        note = f"{note} (the smallest window local servers load by default)"
    window_source = None
    if source == "server":
        window_source = (
            listed.window_source
            if listed is not None and listed.window_source and not discovered
            else "the server"
        )
    return ResolvedModel(
        provider_name=provider_name,
        provider_kind=kind,
        model=model_name,
        context_window=window,
        max_output_tokens=max_output,
        input_limit=entry.input_limit,
        known=source in ("config", "server", "provider", "catalog"),
        source=source,
        output_reserve=_output_reserve(window, max_output),
        note=note,
        prices=_prices(entry, info),
        lifecycle=(listed.lifecycle if listed is not None else None)
        or (info.lifecycle if info is not None else None),
        working_budget=working_budget,
        working_budget_source=working_source,
        display_name=listed.display_name if listed is not None else None,
        vision=_accepts_images(entry, kind, model_name, listed),
        reasoning_effort=entry.reasoning_effort
        or (DEFAULT_EFFORT if thinking else default_effort(model_name)),
        temperature=entry.temperature,
        reasons=reasoning_support(model_name, thinking).reasons,
        thinking=thinking,
        api=_model_api(entry, kind, model_name),
        window_source=window_source,
        server=listed.server if listed is not None else None,
        counts_tools=not (
            kind == "openai-compatible"
            and listed is not None
            and (listed.tools is False or listed.server == "llama-cpp-python")
        ),
    )


def _model_api(entry: ModelConfig, kind: ProviderKind, model: str) -> ModelApi:
    if kind == "anthropic":
        return "chat"
    if entry.api is not None:
        return entry.api
    return "responses" if kind == "openai" and prefers_responses_api(model) else "chat"


def _accepts_images(
    entry: ModelConfig, kind: ProviderKind, model: str, listed: ListedModel | None = None
) -> bool:
    if entry.vision is not None:
        return entry.vision
    if kind == "openai-compatible" and listed is not None and listed.vision is not None:
        return listed.vision  # the server said (llama.cpp's modalities, Ollama's capabilities)
    if kind == "anthropic":
        return True
    return kind == "openai" and catalog.openai_accepts_images(model)


def _working_budget(
    entry: ModelConfig, window: int
) -> tuple[int | None, WorkingBudgetSource | None]:
    if entry.working_budget is not None:
        return entry.working_budget, "config"
    if window >= LARGE_WINDOW:
        return DEFAULT_WORKING_BUDGET, "default"
    return None, None


def _prices(entry: ModelConfig, info: catalog.ModelInfo | None) -> ModelPrices | None:
    """The catalog's prices with each price the config sets put over them.

    A model with no catalog price gets one only when the config sets at least input and
    output; the cache prices then default to the input price (no discount assumed).
    """
    base = info.prices if info is not None else None
    if base is None:
        if entry.input_price is None or entry.output_price is None:
            return None
        base = ModelPrices(
            input=entry.input_price,
            output=entry.output_price,
            cache_read=entry.input_price,
            cache_write=entry.input_price,
        )
    return ModelPrices(
        input=entry.input_price if entry.input_price is not None else base.input,
        output=entry.output_price if entry.output_price is not None else base.output,
        cache_read=entry.cache_read_price
        if entry.cache_read_price is not None
        else base.cache_read,
        cache_write=(
            entry.cache_write_price if entry.cache_write_price is not None else base.cache_write
        ),
    )


async def discover_model(
    config: AppConfig, model_name: str, *, http_client: httpx2.AsyncClient | None = None
) -> ResolvedModel:
    """`resolve_model`, asking an OpenAI-compatible server for its window first."""
    resolved = resolve_model(config, model_name)
    if resolved.provider_kind != "openai-compatible" or resolved.source == "config":
        return resolved
    base_url, _ = effective_base_url(config, resolved.provider_name)
    if not base_url:
        return resolved
    from foldline.providers.compat import discover_context_window

    window = await discover_context_window(base_url, model_name, http_client)
    if not window:
        return resolved
    return resolve_model(config, model_name, discovered_context_window=window)


def provider_for_model(config: AppConfig, model: str) -> Provider:
    resolved = resolve_model(config, model)
    return build_provider(config, resolved.provider_name, api=resolved.api)
