"""Which provider serves a model, its limits, the providers built from the config, keys."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from config_setup import local_config
from memory_keyring import MemoryKeyring

from foldline.config import (
    DEFAULT_CONTEXT_WINDOW,
    AppConfig,
    ConfigError,
    ModelConfig,
    ProviderConfig,
)
from foldline.config_settings import public_settings
from foldline.core.messages import user
from foldline.providers.anthropic import AnthropicProvider
from foldline.providers.base import ModelRequest, TextDelta
from foldline.providers.compat import OpenAICompatibleProvider
from foldline.providers.openai import OpenAIProvider
from foldline.providers.registry import (
    build_provider,
    discover_model,
    provider_for_model,
    provider_name_for_model,
    resolve_model,
)
from foldline.secrets import SERVICE, set_api_key

# --- models and providers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-4-5", "anthropic"),
        ("claude-opus-9", "anthropic"),
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("chatgpt-4o-latest", "openai"),
        ("llama3.1:8b", "local"),
        ("gpt-oss:20b", "local"),
        ("anthropic/claude-sonnet-4.5", "local"),
    ],
)
def test_which_provider_serves_a_model(model: str, provider: str) -> None:
    assert provider_name_for_model(local_config(), model) == provider


def test_no_provider_for_a_local_model_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="no provider for model `qwen3`"):
        provider_name_for_model(AppConfig(), "qwen3")


def test_no_model_at_all_says_to_connect_one() -> None:
    # A conversation made before any provider was connected has the empty model.
    with pytest.raises(ConfigError, match="no model is connected yet") as raised:
        provider_name_for_model(AppConfig(), "")
    assert "``" not in str(raised.value)


def test_catalog_limits_and_output_reserve() -> None:
    resolved = resolve_model(AppConfig(), "claude-sonnet-4-5")
    assert (resolved.provider_name, resolved.provider_kind) == ("anthropic", "anthropic")
    assert (resolved.context_window, resolved.max_output_tokens) == (200_000, 64_000)
    assert (resolved.known, resolved.source) == (True, "catalog")
    # An eighth of the window, not the model's whole output cap.
    assert resolved.output_reserve == 25_000
    assert resolved.note is not None and "1M" in resolved.note
    # A 200k window folds at its own budget: no working budget.
    assert resolved.working_budget is None


def test_config_entry_wins_over_the_catalog() -> None:
    config = local_config(
        **{"claude-sonnet-4-5": ModelConfig(context_window=1_000_000, input_limit=900_000)}
    )
    resolved = resolve_model(config, "claude-sonnet-4-5", discovered_context_window=1234)
    assert (resolved.context_window, resolved.source, resolved.known) == (1_000_000, "config", True)
    assert resolved.max_output_tokens == 64_000
    assert resolved.input_limit == 900_000


def test_server_window_wins_for_compatible_providers_only() -> None:
    config = local_config(**{"gpt-4o": ModelConfig(provider="local")})
    local = resolve_model(config, "gpt-4o", discovered_context_window=8192)
    assert (local.context_window, local.source) == (8192, "server")
    # The catalog's 16k output cap cannot exceed half of a smaller loaded window.
    assert local.max_output_tokens == 4096

    hosted = resolve_model(config, "claude-haiku-4-5", discovered_context_window=8192)
    assert (hosted.context_window, hosted.source) == (200_000, "catalog")


def test_unknown_models_get_a_flagged_conservative_default() -> None:
    resolved = resolve_model(local_config(), "mystery-model")
    assert resolved.context_window == DEFAULT_CONTEXT_WINDOW == 2048
    # Half the window at most, and a quarter of it kept free for the answer.
    assert resolved.max_output_tokens == 1024
    assert (resolved.known, resolved.source) == (False, "default")
    assert resolved.note is not None and "unknown" in resolved.note
    assert resolved.output_reserve == 512

    guessed = resolve_model(local_config(), "claude-opus-9")
    assert (guessed.context_window, guessed.known, guessed.source) == (200_000, False, "guess")


def test_unlimited_window() -> None:
    config = local_config(**{"big": ModelConfig(provider="local", context_window=0)})
    resolved = resolve_model(config, "big")
    assert resolved.context_window == 0
    assert resolved.output_reserve == 2048


async def test_discover_model_asks_the_server() -> None:
    asked: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        asked.append(request.url.path)
        if request.url.path == "/props":
            return httpx2.Response(200, json={"default_generation_settings": {"n_ctx": 12288}})
        return httpx2.Response(404)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        found = await discover_model(local_config(), "qwen3", http_client=client)
        assert (found.context_window, found.source, found.known) == (12288, "server", True)

        asked.clear()
        configured = local_config(**{"qwen3": ModelConfig(provider="local", context_window=4096)})
        kept = await discover_model(configured, "qwen3", http_client=client)
        assert (kept.context_window, kept.source) == (4096, "config")
        hosted = await discover_model(local_config(), "gpt-4o", http_client=client)
        assert hosted.source == "catalog"
        assert asked == []  # neither an explicit entry nor a hosted model asks a server


def test_build_provider_kinds_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = local_config().model_copy(update={"data_dir": tmp_path})
    anthropic = build_provider(config, "anthropic")
    openai = build_provider(config, "openai")
    local = build_provider(config, "local")
    assert isinstance(anthropic, AnthropicProvider)
    assert type(openai) is OpenAIProvider
    assert isinstance(local, OpenAICompatibleProvider)
    assert local.base_url == "http://127.0.0.1:9/v1"

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://env.example")
    assert build_provider(config, "anthropic").base_url == "http://env.example"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="no provider named `nope`"):
        build_provider(config, "nope")


async def test_a_stored_key_reaches_the_sdk(tmp_path: Path, _isolated: MemoryKeyring) -> None:
    set_api_key(tmp_path, "anthropic", "sk-ant-from-keyring-1")
    seen: list[httpx2.Request] = []
    stream = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
        '"role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,'
        '"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"hi"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
        '"stop_sequence":null},"usage":{"output_tokens":2}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(
            200, content=stream.encode(), headers={"content-type": "text/event-stream"}
        )

    config = AppConfig(data_dir=tmp_path)
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        provider = build_provider(
            config, provider_name_for_model(config, "claude-test-1"), http_client=client
        )
        events = [e async for e in provider.stream(ModelRequest("claude-test-1", "", [user("x")]))]

    assert TextDelta("hi") in events
    (request,) = seen
    headers = request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    assert "sk-ant-from-keyring-1" in headers
    assert isinstance(provider_for_model(config, "gpt-4o"), OpenAIProvider)


def test_key_precedence_environment_then_store_then_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _isolated: MemoryKeyring
) -> None:
    config = AppConfig(
        providers={
            "anthropic": ProviderConfig(kind="anthropic"),
            "openai": ProviderConfig(kind="openai", api_key="sk-config-file-1"),
        },
        data_dir=tmp_path,
    )
    assert public_settings(config).model_dump()["providers"]["openai"]["keySource"] == "config"
    _isolated.set_password(SERVICE, "openai", "sk-keyring-12345")
    assert public_settings(config).model_dump()["providers"]["openai"]["keySource"] == "keyring"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-environment-1")
    shown = public_settings(config).model_dump()["providers"]["openai"]
    assert (shown["keySource"], shown["maskedKey"], shown["keyEnv"]) == (
        "env",
        "sk-…nt-1",
        "OPENAI_API_KEY",
    )


@pytest.mark.parametrize(
    ("model", "vision"),
    [
        ("gpt-4o", True),
        ("gpt-4o-mini", True),
        ("gpt-4.1-nano", True),
        ("gpt-5.2", True),
        ("gpt-6", True),
        ("o1", True),
        ("o3-pro", True),
        ("o4-mini", True),
        ("o1-mini", False),
        ("o3-mini", False),
        ("gpt-4o-audio-preview", False),
        ("gpt-3.5-turbo", False),
        ("gpt-4", False),
        ("claude-haiku-4-5", True),
    ],
)
def test_which_hosted_models_accept_images(model: str, vision: bool) -> None:
    assert resolve_model(AppConfig(), model).vision is vision


def test_other_models_accept_images_only_when_the_config_says_so() -> None:
    config = local_config(
        **{
            "llava": ModelConfig(vision=True),
            "gpt-4o": ModelConfig(provider="local"),
            "gpt-5": ModelConfig(vision=False),
        }
    )
    assert resolve_model(config, "llava").vision is True
    assert resolve_model(config, "qwen3").vision is False
    # A compatible server serving an OpenAI-looking name is not assumed to take images.
    assert resolve_model(config, "gpt-4o").vision is False
    assert resolve_model(config, "gpt-5").vision is False


def test_the_api_and_the_effort_are_chosen_per_model(tmp_path: Path) -> None:
    from foldline.providers.openai_responses import OpenAIResponsesProvider

    config = local_config(
        **{
            "gpt-5.4": ModelConfig(api="chat", reasoning_effort="high"),
            "qwen3": ModelConfig(provider="local", api="responses"),
            "claude-sonnet-4-6": ModelConfig(reasoning_effort="low"),
        }
    ).model_copy(update={"data_dir": tmp_path})
    # OpenAI's own reasoning models default to the Responses API, older ones to chat.
    assert type(provider_for_model(config, "gpt-6.1-sol")) is OpenAIResponsesProvider
    assert type(provider_for_model(config, "gpt-4o")) is OpenAIProvider
    assert type(provider_for_model(config, "gpt-5.4")) is OpenAIProvider
    responses = provider_for_model(config, "qwen3")
    assert type(responses) is OpenAIResponsesProvider and responses.compatible
    # A compatible server stays on Chat Completions unless configured.
    assert isinstance(provider_for_model(config, "llama3"), OpenAICompatibleProvider)
    assert resolve_model(config, "gpt-6.1-sol").reasoning_effort == "medium"
    assert resolve_model(config, "gpt-5.4").reasoning_effort == "high"
    assert resolve_model(config, "claude-sonnet-4-6").reasoning_effort == "low"
    assert resolve_model(config, "claude-sonnet-4-6").api == "chat"
    assert resolve_model(config, "gpt-4o").reasoning_effort == "off"
    with pytest.raises(ValueError, match="reasoning_effort"):
        ModelConfig(reasoning_effort="extreme")  # type: ignore[arg-type]
