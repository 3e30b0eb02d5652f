"""The launch warm-up: the default model's provider client and tokenizer are ready
before the first turn, which then reuses them instead of building its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

from foldline.chat.service import ChatService
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.tokenizers import get_encoder

from .conftest import CONFIG_TOML


def test_warm_up_builds_the_default_provider_once(tmp_path: Path, model) -> None:
    (tmp_path / "config.toml").write_text(CONFIG_TOML)
    built: list[str] = []

    def factory(config, name):  # type: ignore[no-untyped-def]
        built.append(name)
        return model

    store = Store(tmp_path / "foldline.db")
    service = ChatService(store, ConfigSource(tmp_path), provider_factory=factory)
    get_encoder.cache_clear()
    asyncio.run(service.warm_up())
    assert built == ["fake-model"]
    assert get_encoder.cache_info().currsize == 1  # the tokenizer is loaded
    # The first turn's lookup finds the client the warm-up built.
    assert service._provider(service.config_provider(), "fake-model") is model
    assert built == ["fake-model"]
    store.close()


def test_warm_up_without_a_default_model_does_nothing(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("# nothing configured yet\n")
    store = Store(tmp_path / "foldline.db")
    service = ChatService(
        store,
        ConfigSource(tmp_path),
        provider_factory=lambda *_: (_ for _ in ()).throw(AssertionError),
    )
    asyncio.run(service.warm_up())
    store.close()
