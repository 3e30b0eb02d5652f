"""Asking each configured provider which models it serves, through the official SDKs.

- Anthropic: `client.models.list()` pages through every model with its window
  (`max_input_tokens`), output cap (`max_tokens`), `lifecycle` and `line`. Retired models
  are asked for explicitly: they are not offered, but a conversation that used one must
  be able to say so.
- OpenAI: `client.models.list()` gives the ids (and a `shutdown_date` where one is
  announced, which marks the model deprecated); limits come from the catalog.
- OpenAI-compatible servers: their `/v1/models` ids, as onboarding already lists them;
  windows come from the server when a conversation uses the model.

Failures never raise: a provider that is offline or refuses the key keeps its last good
list (or the catalog) and the failure is recorded for the UI to show.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import re
import time
from collections.abc import AsyncIterable, Awaitable, Callable
from types import ModuleType
from typing import Any

import httpx2

from foldline.config import AppConfig, effective_base_url, find_provider_key, provider_config
from foldline.providers.listing import ListedModel, ModelDirectory, ProviderListing
from foldline.providers.server_facts import ServerFacts

log = logging.getLogger("foldline.providers")

LIST_TIMEOUT_SECONDS = 15.0
MAX_MODELS_ASKED = 8
"""A server's models asked about after its list was fetched; more are asked at first use."""
RELEARN_AFTER_SECONDS = 24 * 60 * 60
"""What a server said is asked again after a day (a model may be reloaded meanwhile)."""
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
OPENAI_BASE_URL = "https://api.openai.com/v1"

Clock = Callable[[], float]


class DiscoveryError(Exception):
    """A provider did not give its list; the message is meant for the person."""


# OpenAI's list holds every model the key may use: embeddings, images, speech, realtime
# and search variants too. Only chat models can hold a conversation.
_OPENAI_CHAT = re.compile(r"^(gpt-|chatgpt-|o\d)")
_OPENAI_NOT_CHAT = re.compile(
    r"(image|audio|realtime|transcribe|tts|search|embedding|moderation|instruct|"
    r"computer-use|deep-research|codex|davinci|babbage|whisper|dall-e|sora)"
)


def is_openai_chat_model(model_id: str) -> bool:
    """True for the ids in OpenAI's list that serve chat completions."""
    name = model_id.lower()
    return bool(_OPENAI_CHAT.match(name)) and not _OPENAI_NOT_CHAT.search(name)


def listable_providers(config: AppConfig) -> list[str]:
    """The providers worth asking: hosted ones with a key, and every local server."""
    names = []
    for name, provider in config.providers.items():
        if provider.kind == "openai-compatible" or find_provider_key(config, name) is not None:
            names.append(name)
    return names


async def _imported(name: str) -> ModuleType:
    """An SDK module, imported in a worker thread the first time: the first import of the
    OpenAI SDK held the event loop (every request and stream) for a second at launch,
    when the model lists are refreshed. Its client is built in a worker thread too (its
    HTTP client's TLS setup took 0.1 s on the loop)."""
    return await asyncio.to_thread(importlib.import_module, name)


async def _anthropic_models(
    key: str, base_url: str | None, http_client: httpx2.AsyncClient | None
) -> list[ListedModel]:
    anthropic = await _imported("anthropic")
    client = await asyncio.to_thread(
        anthropic.AsyncAnthropic,
        **_client_options(key, base_url or ANTHROPIC_BASE_URL, http_client),
    )
    return await _collect(
        anthropic,
        client,
        lambda: client.models.list(limit=1000, lifecycle=["active", "deprecated", "retired"]),
        lambda info: ListedModel(
            id=info.id,
            display_name=info.display_name,
            context_window=info.max_input_tokens,
            max_output_tokens=info.max_tokens,
            lifecycle=info.lifecycle,
            line=info.line,
            created_at=info.created_at.isoformat(),
        ),
        owns_client=http_client is None,
    )


async def _openai_models(
    key: str, base_url: str | None, http_client: httpx2.AsyncClient | None
) -> list[ListedModel]:
    openai = await _imported("openai")
    client = await asyncio.to_thread(
        openai.AsyncOpenAI, **_client_options(key, base_url or OPENAI_BASE_URL, http_client)
    )
    return await _collect(
        openai,
        client,
        client.models.list,
        lambda model: ListedModel(
            id=model.id,
            lifecycle="deprecated" if getattr(model, "shutdown_date", None) else None,
            created_at=str(model.created),
        ),
        owns_client=http_client is None,
    )


def _client_options(
    key: str, base_url: str, http_client: httpx2.AsyncClient | None
) -> dict[str, Any]:
    return {
        "api_key": key,
        "base_url": base_url,
        "max_retries": 1,
        "timeout": LIST_TIMEOUT_SECONDS,
        "http_client": http_client,
    }


async def _collect(
    sdk: ModuleType,
    client: Any,
    pages: Callable[[], AsyncIterable[Any]],
    to_listed: Callable[[Any], ListedModel],
    *,
    owns_client: bool,
) -> list[ListedModel]:
    """Every model PAGES yields, as listed; an SDK error becomes a DiscoveryError.

    Both official SDKs name their errors alike (`APIStatusError`, `APIError`), so one
    translation serves both.
    """
    try:
        return [to_listed(item) async for item in pages()]
    except sdk.APIStatusError as error:
        raise DiscoveryError(f"{error.status_code}: {_message(error.body) or error}") from error
    except sdk.APIError as error:
        raise DiscoveryError(str(error) or type(error).__name__) from error
    finally:
        if owns_client:
            await client.close()


def _message(body: Any) -> str | None:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return None


async def list_provider_models(
    config: AppConfig, provider_name: str, *, http_client: httpx2.AsyncClient | None = None
) -> list[ListedModel]:
    """The models `provider_name` lists; raises `DiscoveryError` when it cannot say."""
    provider = provider_config(config, provider_name)
    base_url, _ = effective_base_url(config, provider_name)
    found = find_provider_key(config, provider_name)
    if provider.kind == "anthropic":
        if found is None:
            raise DiscoveryError("no API key")
        return await _anthropic_models(found[0], base_url, http_client)
    if provider.kind == "openai":
        if found is None:
            raise DiscoveryError("no API key")
        listed = await _openai_models(found[0], base_url, http_client)
        return [model for model in listed if is_openai_chat_model(model.id)]
    if not base_url:
        raise DiscoveryError("no base_url")
    # Local servers ignore the key, but the SDK insists on one.
    return await _openai_models(found[0] if found else "not-needed", base_url, http_client)


async def refresh_provider(
    directory: ModelDirectory,
    config: AppConfig,
    provider_name: str,
    *,
    clock: Clock = time.time,
    http_client: httpx2.AsyncClient | None = None,
) -> ProviderListing:
    """Ask one provider again and record the answer or the failure."""
    kind = provider_config(config, provider_name).kind
    try:
        models = await list_provider_models(config, provider_name, http_client=http_client)
    except DiscoveryError as error:
        log.info("model list of %s unavailable: %s", provider_name, error)
        return directory.record_failure(provider_name, kind, str(error), clock())
    except (httpx2.HTTPError, OSError, ValueError) as error:
        log.info("model list of %s unavailable: %r", provider_name, error)
        return directory.record_failure(provider_name, kind, str(error) or repr(error), clock())
    listing = directory.record_success(provider_name, kind, models, clock())
    if kind == "openai-compatible":
        # A local server's list says nothing of windows: each model is asked in turn.
        for model in models[:MAX_MODELS_ASKED]:
            await learn_model(
                directory, config, provider_name, model.id, clock=clock, http_client=http_client
            )
        listing = directory.listing(provider_name) or listing
    return listing


def learned_fields(facts: ServerFacts) -> dict[str, Any]:
    """A server's facts as the `ListedModel` fields they are kept in."""
    return {
        "context_window": facts.context_window,
        "server": facts.server,
        "window_source": facts.window_source,
        "max_context": facts.max_context,
        "slots": facts.slots,
        "interrupts": facts.interrupts,
        "tools": facts.tools,
        "vision": facts.vision,
        "tokenizer": facts.tokenizer,
        "streams_usage": facts.streams_usage,
    }


def needs_learning(directory: ModelDirectory, provider: str, model: str, now: float) -> bool:
    """Whether the server of `model` should be asked (never asked, or a day ago)."""
    listed = directory.find(provider, model)
    return (
        listed is None
        or listed.learned_at is None
        or now - listed.learned_at >= RELEARN_AFTER_SECONDS
    )


def _discover_server() -> Callable[..., Awaitable[ServerFacts | None]]:
    from foldline.providers.compat import discover_server

    return discover_server


async def learn_model(
    directory: ModelDirectory,
    config: AppConfig,
    provider_name: str,
    model: str,
    *,
    clock: Clock = time.time,
    http_client: httpx2.AsyncClient | None = None,
) -> ListedModel | None:
    """Ask an OpenAI-compatible server what it says about `model` (its window, slots,
    tools, vision, tokenizer) and keep the answer, with its source and time, in the
    model list's cache. None when the provider is hosted or the server says nothing."""
    provider = provider_config(config, provider_name)
    if provider.kind != "openai-compatible":
        return None
    base_url, _ = effective_base_url(config, provider_name)
    if not base_url:
        return None
    # Imported in a worker thread: the module brings in the OpenAI SDK, whose first import
    # held the event loop (every stream and request) for 0.8 s, and 4 s on a busy machine.
    discover_server = await asyncio.to_thread(_discover_server)
    try:
        facts = await discover_server(base_url, model, http_client)
    except (httpx2.HTTPError, OSError, ValueError) as error:
        log.info("%s could not tell about %s: %r", provider_name, model, error)
        return None
    if facts is None:
        return None
    listed = directory.record_learned(
        provider_name, provider.kind, model, learned_fields(facts), clock()
    )
    log.info(
        "%s (%s) serves %s with a window of %s (%s), %s slot(s)",
        provider_name,
        facts.server,
        model,
        facts.context_window,
        facts.window_source,
        facts.slots,
    )
    return listed


async def refresh_all(
    directory: ModelDirectory,
    config: AppConfig,
    *,
    only_stale: bool = False,
    clock: Clock = time.time,
    http_client: httpx2.AsyncClient | None = None,
) -> None:
    """Refresh every listable provider (with `only_stale`, those not fetched in a day)."""
    now = clock()
    names = [
        name
        for name in listable_providers(config)
        if not only_stale
        or (listing := directory.listing(name)) is None
        or listing.kind != config.providers[name].kind
        or not listing.is_fresh(now)
    ]
    await asyncio.gather(
        *(
            refresh_provider(directory, config, name, clock=clock, http_client=http_client)
            for name in names
        )
    )
