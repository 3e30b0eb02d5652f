"""The launch warm-up: the default model's provider client and tokenizer are ready
before the first turn, which then reuses them instead of building its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

from foldline.chat.service import ChatService
from foldline.config import AppConfig
from foldline.providers.base import Provider
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.tokenizers import get_encoder

from .conftest import CONFIG_TOML, HoldableModel


def test_warm_up_builds_the_default_provider_once(tmp_path: Path, model: HoldableModel) -> None:
    (tmp_path / "config.toml").write_text(CONFIG_TOML)
    built: list[str] = []

    def factory(config: AppConfig, name: str) -> Provider:
        built.append(name)
        return model

    store = Store(tmp_path / "foldline.db")
    service = ChatService(store, ConfigSource(tmp_path), provider_factory=factory)
    get_encoder.cache_clear()
    asyncio.run(service.warm_up())
    assert built == ["fake-model"]
    assert model.warmed == 1  # the client's request resources were built
    assert get_encoder.cache_info().currsize == 1  # the tokenizer is loaded
    # The first turn's lookup finds the client the warm-up built.
    assert service.providers.get(service.config_provider(), "fake-model") is model
    assert built == ["fake-model"]
    store.close()


def test_warm_up_without_a_default_model_builds_nothing(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("# nothing configured yet\n")
    built: list[str] = []

    def factory(config: AppConfig, name: str) -> Provider:
        built.append(name)
        return HoldableModel()

    store = Store(tmp_path / "foldline.db")
    service = ChatService(store, ConfigSource(tmp_path), provider_factory=factory)
    get_encoder.cache_clear()
    asyncio.run(service.warm_up())
    # Nothing was built or loaded (a failure would be swallowed: the list tells).
    assert built == []
    assert get_encoder.cache_info().currsize == 0
    assert service.providers.clients == {}
    store.close()


def test_a_failing_warm_up_leaves_the_first_turn_to_report_it(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG_TOML)
    tried: list[str] = []

    def factory(config: AppConfig, name: str) -> Provider:
        tried.append(name)
        raise RuntimeError("no key for this provider")

    store = Store(tmp_path / "foldline.db")
    service = ChatService(store, ConfigSource(tmp_path), provider_factory=factory)
    asyncio.run(service.warm_up())  # does not raise: the first turn says what is wrong
    assert tried == ["fake-model"]
    assert service.providers.clients == {}
    store.close()
