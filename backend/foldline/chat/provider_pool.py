"""ProviderPool: one provider client (and so one HTTP connection pool) per model and
serving provider, kept while the configuration holds, built ahead at launch.

Every turn of a model and the summaries written in the background share its client, so
connections are reused. A saved configuration may change keys or base URLs: a new one
starts the pool afresh, and the old clients are closed in the background.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from foldline.config import AppConfig
from foldline.providers.base import Provider
from foldline.tokenizers import encoding_name_for_model, get_encoder

log = logging.getLogger(__name__)

ProviderFactory = Callable[[AppConfig, str], Provider]
"""Builds the provider that serves a model name (tests inject fakes here)."""


def provider_key(config: AppConfig, model: str) -> str:
    """The pool's key of a model's client: the model, and the provider the configuration
    names for it (a conversation may have another provider serve the same id)."""
    entry = config.models.get(model)
    return f"{entry.provider}\n{model}" if entry is not None and entry.provider else model


class ProviderPool:
    """The chat service's provider clients, by model and serving provider."""

    def __init__(self, factory: ProviderFactory) -> None:
        self.factory = factory
        self.clients: dict[str, Provider] = {}
        """The clients built under `config`, by `provider_key`."""
        self.config: AppConfig | None = None
        """The saved configuration the clients were built under."""

    def get(self, config: AppConfig, model: str, *, base: AppConfig | None = None) -> Provider:
        """The client serving `model` under `config`, built on first use.

        `base` is the saved config when `config` is a conversation's view of it
        (`serving_config`), which must not count as a change of configuration.
        """
        base = config if base is None else base
        if base != self.config:
            stale = list(self.clients.values())
            self.clients = {}
            self.config = base
            for provider in stale:
                _close_later(provider)
        key = provider_key(config, model)
        if key not in self.clients:
            self.clients[key] = self.factory(config, model)
        return self.clients[key]

    async def warm_up(self, config_provider: Callable[[], AppConfig]) -> None:
        """Do at launch, in the background, what the first turn would otherwise wait for:
        import the default model's provider SDK and build its client, and load its
        tokenizer encoding (seconds on a busy machine; later turns reuse both)."""
        try:
            config = config_provider()
        except Exception:  # a broken config.toml is reported where it is used
            return
        model = config.default_model
        if not model:
            return
        try:
            await asyncio.to_thread(get_encoder, encoding_name_for_model(model) or "cl100k_base")
            provider = await asyncio.to_thread(self.factory, config, model)
            await asyncio.to_thread(provider.warm_up)
        except Exception as error:  # the first turn says what is wrong, with context
            log.debug("warm-up of %s skipped: %s", model, error)
            return
        key = provider_key(config, model)
        # A turn may have started meanwhile, under this config or a newer one: its
        # clients stay, and this one is closed.
        if self.config in (None, config) and key not in self.clients:
            self.config = config
            self.clients[key] = provider
        else:
            _close_later(provider)

    async def aclose(self) -> None:
        """Close every client (at shutdown)."""
        clients, self.clients = list(self.clients.values()), {}
        for provider in clients:
            await provider.aclose()


def _close_later(provider: Provider) -> None:
    asyncio.get_running_loop().create_task(provider.aclose())
