"""Model discovery through the real `anthropic` and `openai` SDKs, against the fake
provider's models endpoints: windows, lifecycle, fallbacks, the day-long cache."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from foldline.config import AppConfig, ModelConfig, parse_config
from foldline.providers import catalog
from foldline.providers.discovery import is_openai_chat_model, refresh_all, refresh_provider
from foldline.providers.listing import CACHE_FILE, MAX_AGE_SECONDS, ModelDirectory
from foldline.providers.registry import DEFAULT_WORKING_BUDGET, resolve_model
from foldline.server.routes.models import available_models
from foldline.testing import SAMPLE_CLAUDE_MODELS, FakeModel, FakeProviderServer

KEY = "sk-test-discovery"
NOW = 1_800_000_000.0

ANTHROPIC_MODELS = [
    *SAMPLE_CLAUDE_MODELS,
    FakeModel(
        "claude-opus-4-6",
        1_000_000,
        128_000,
        line="opus",
        display_name="Claude Opus 4.6",
        created_at="2026-02-05T00:00:00Z",
    ),
    FakeModel(
        "claude-haiku-4-5-20251001",
        200_000,
        64_000,
        line="haiku",
        created_at="2025-10-01T00:00:00Z",
    ),
    # A model newer than the catalog: only the provider knows its limits.
    FakeModel(
        "claude-fable-9",
        2_000_000,
        256_000,
        line="fable",
        created_at="2026-11-01T00:00:00Z",
    ),
]

OPENAI_MODELS = [
    FakeModel("gpt-5.4", created_at="2026-03-05T00:00:00Z"),
    FakeModel("gpt-4o", created_at="2024-05-13T00:00:00Z", shutdown_date="2027-03-01"),
    FakeModel("text-embedding-3-large", created_at="2024-01-25T00:00:00Z"),
    FakeModel("gpt-image-1", created_at="2025-04-23T00:00:00Z"),
    FakeModel("gpt-4o-realtime-preview", created_at="2024-10-01T00:00:00Z"),
]


@pytest.fixture
def anthropic_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(listed=ANTHROPIC_MODELS, api_key=KEY) as server:
        yield server


@pytest.fixture
def openai_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(listed=OPENAI_MODELS, api_key=KEY) as server:
        yield server


def config_for(
    anthropic_url: str, openai_url: str | None = None, key: str = KEY, **models: ModelConfig
) -> AppConfig:
    """Both hosted providers pointed at fakes, keys written in config.toml (as a person
    may), so no key store and no environment is involved."""
    openai_part = (
        f'[providers.openai]\nbase_url = "{openai_url}"\napi_key = "{key}"\n' if openai_url else ""
    )
    config = parse_config(
        f'[providers.anthropic]\nbase_url = "{anthropic_url}"\napi_key = "{key}"\n{openai_part}'
    )
    return config.model_copy(update={"models": models})


def clock(value: float = NOW):
    return lambda: value


def free_port_url() -> str:
    """A loopback URL nothing listens on: an offline provider."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def test_anthropic_models_carry_window_output_lifecycle_and_line(
    anthropic_server: FakeProviderServer,
) -> None:
    directory = ModelDirectory()
    config = config_for(anthropic_server.anthropic_url)
    listing = await refresh_provider(directory, config, "anthropic", clock=clock())
    assert listing.error is None and listing.fetched_at == NOW
    by_id = {m.id: m for m in listing.models}
    # Newest first, as the API lists them, and retired models asked for explicitly.
    assert [m.id for m in listing.models][:2] == ["claude-fable-9", "claude-sonnet-5"]
    assert by_id["claude-sonnet-5"].context_window == 1_000_000
    assert by_id["claude-sonnet-5"].max_output_tokens == 128_000
    assert by_id["claude-sonnet-5"].line == "sonnet"
    assert by_id["claude-sonnet-5"].display_name == "Claude Sonnet 5"
    assert by_id["claude-sonnet-4-5-20250929"].lifecycle == "deprecated"
    assert by_id["claude-3-7-sonnet-20250219"].lifecycle == "retired"
    (wire, path, query) = anthropic_server.listing_requests[-1]
    assert (wire, path) == ("anthropic", "/v1/models")
    assert "lifecycle%5B%5D=retired" in query


async def test_pages_are_followed(anthropic_server: FakeProviderServer) -> None:
    many = [
        FakeModel(f"claude-test-{n:04d}", 200_000, 8_192, created_at="2026-01-01T00:00:00Z")
        for n in range(1_203)
    ]
    anthropic_server.listed = many
    listing = await refresh_provider(
        ModelDirectory(), config_for(anthropic_server.anthropic_url), "anthropic", clock=clock()
    )
    assert len(listing.models) == 1_203
    assert len({m.id for m in listing.models}) == 1_203
    queries = [q for _, _, q in anthropic_server.listing_requests]
    assert len(queries) == 2 and "after_id=" in queries[1]


async def test_openai_lists_chat_models_and_marks_announced_shutdowns(
    anthropic_server: FakeProviderServer, openai_server: FakeProviderServer
) -> None:
    directory = ModelDirectory()
    config = config_for(anthropic_server.anthropic_url, openai_server.openai_url)
    listing = await refresh_provider(directory, config, "openai", clock=clock())
    assert [m.id for m in listing.models] == ["gpt-5.4", "gpt-4o"]
    assert directory.find("openai", "gpt-4o").lifecycle == "deprecated"  # type: ignore[union-attr]
    assert directory.find("openai", "gpt-5.4").lifecycle is None  # type: ignore[union-attr]
    assert openai_server.listing_requests == [("openai", "/v1/models", "")]


@pytest.mark.parametrize(
    ("model", "chat"),
    [
        ("gpt-5.4", True),
        ("o3-mini", True),
        ("chatgpt-4o-latest", True),
        ("text-embedding-3-small", False),
        ("gpt-4o-mini-transcribe", False),
        ("gpt-image-1", False),
        ("dall-e-3", False),
        ("claude-sonnet-5", False),
    ],
)
def test_only_chat_models_of_openai_are_offered(model: str, chat: bool) -> None:
    assert is_openai_chat_model(model) is chat


async def test_the_provider_window_wins_over_the_catalog_and_config_over_both(
    anthropic_server: FakeProviderServer,
) -> None:
    directory = ModelDirectory()
    config = config_for(anthropic_server.anthropic_url)
    await refresh_provider(directory, config, "anthropic", clock=clock())

    # The catalog says 200k for claude-haiku-4-5; the listed dated id answers for the alias.
    anthropic_server.listed = [
        FakeModel("claude-haiku-4-5-20251001", 400_000, 32_000, line="haiku"),
    ]
    await refresh_provider(directory, config, "anthropic", clock=clock())
    haiku = resolve_model(config, "claude-haiku-4-5", listing=directory)
    assert (haiku.context_window, haiku.max_output_tokens, haiku.source) == (
        400_000,
        32_000,
        "provider",
    )
    assert catalog.lookup("claude-haiku-4-5").context_window == 200_000  # type: ignore[union-attr]

    configured = config_for(
        anthropic_server.anthropic_url,
        **{"claude-haiku-4-5": ModelConfig(context_window=100_000, max_output_tokens=8_000)},
    )
    mine = resolve_model(configured, "claude-haiku-4-5", listing=directory)
    assert (mine.context_window, mine.max_output_tokens, mine.source) == (
        100_000,
        8_000,
        "config",
    )


async def test_a_model_newer_than_the_catalog_gets_its_real_window(
    anthropic_server: FakeProviderServer,
) -> None:
    directory = ModelDirectory()
    config = config_for(anthropic_server.anthropic_url)
    before = resolve_model(config, "claude-fable-9", listing=directory)
    assert (before.known, before.context_window) == (False, 200_000)
    await refresh_provider(directory, config, "anthropic", clock=clock())
    after = resolve_model(config, "claude-fable-9", listing=directory)
    assert (after.known, after.context_window, after.max_output_tokens) == (
        True,
        2_000_000,
        256_000,
    )
    assert after.working_budget == DEFAULT_WORKING_BUDGET
    assert after.prices is None  # no price is invented for a model the catalog lacks


async def test_offered_models_leave_out_retired_and_mark_deprecated(
    anthropic_server: FakeProviderServer,
) -> None:
    directory = ModelDirectory()
    config = config_for(anthropic_server.anthropic_url)
    await refresh_provider(directory, config, "anthropic", clock=clock())
    body = available_models(config, directory, NOW).model_dump()
    offered = {m["id"]: m for m in body["models"] if m["provider"] == "anthropic"}
    assert "claude-3-7-sonnet-20250219" not in offered
    assert offered["claude-sonnet-4-5-20250929"]["lifecycle"] == "deprecated"
    sonnet = offered["claude-sonnet-5"]
    assert (sonnet["contextWindow"], sonnet["maxOutputTokens"], sonnet["limitSource"]) == (
        1_000_000,
        128_000,
        "provider",
    )
    assert sonnet["workingBudget"] == DEFAULT_WORKING_BUDGET
    assert sonnet["prices"] == {"input": 2, "output": 10, "cacheRead": 0.2, "cacheWrite": 2.5}
    status = {p["name"]: p for p in body["providers"]}
    assert status["anthropic"]["status"] == "ok" and status["anthropic"]["message"] is None
    # The catalog's suggestion is not in this account's list, so the newest offered
    # model is suggested instead.
    assert catalog.SUGGESTED_MODELS["anthropic"] not in offered
    assert status["anthropic"]["suggested"] == next(iter(offered))
    # No key for OpenAI: nothing offered from it, and it says why.
    assert status["openai"]["status"] == "no_key"
    # A retired model is still known, so a conversation on it can say so.
    retired = resolve_model(config, "claude-3-7-sonnet", listing=directory)
    assert retired.lifecycle == "retired"


async def test_a_refused_key_falls_back_on_the_catalog_and_says_it_may_be_stale(
    anthropic_server: FakeProviderServer,
) -> None:
    directory = ModelDirectory()
    config = config_for(anthropic_server.anthropic_url, key="sk-wrong")
    listing = await refresh_provider(directory, config, "anthropic", clock=clock())
    assert listing.fetched_at is None
    assert listing.error is not None and "401" in listing.error
    body = available_models(config, directory, NOW).model_dump()
    status = next(p for p in body["providers"] if p["name"] == "anthropic")
    assert (status["status"], status["source"]) == ("stale", "catalog")
    assert "may be stale" in status["message"] and catalog.CATALOG_DATE in status["message"]
    offered = {m["id"] for m in body["models"] if m["provider"] == "anthropic"}
    assert "claude-sonnet-5" in offered
    assert "claude-3-5-sonnet" not in offered  # retired in the catalog too


async def test_offline_keeps_the_last_good_list(anthropic_server: FakeProviderServer) -> None:
    directory = ModelDirectory()
    await refresh_provider(
        directory, config_for(anthropic_server.anthropic_url), "anthropic", clock=clock()
    )
    offline = config_for(free_port_url())
    later = NOW + 3_600
    listing = await refresh_provider(directory, offline, "anthropic", clock=clock(later))
    assert listing.error is not None
    assert listing.fetched_at == NOW and len(listing.models) == len(ANTHROPIC_MODELS)
    status = next(
        p
        for p in available_models(offline, directory, later).model_dump()["providers"]
        if p["name"] == "anthropic"
    )
    assert (status["status"], status["source"]) == ("stale", "provider")
    assert "may be stale" in status["message"]
    # The window still comes from the provider's (older) list.
    assert resolve_model(offline, "claude-opus-4-6", listing=directory).source == "provider"


async def test_lists_are_cached_for_a_day(
    anthropic_server: FakeProviderServer, tmp_path: Path
) -> None:
    config = config_for(anthropic_server.anthropic_url)
    directory = ModelDirectory.load(tmp_path)
    await refresh_all(directory, config, only_stale=True, clock=clock())
    assert len(anthropic_server.listing_requests) == 1
    assert (tmp_path / CACHE_FILE).exists()

    # A restart within the day reads the cache and asks nobody.
    reloaded = ModelDirectory.load(tmp_path)
    assert reloaded.find("anthropic", "claude-sonnet-5") is not None
    await refresh_all(reloaded, config, only_stale=True, clock=clock(NOW + MAX_AGE_SECONDS - 60))
    assert len(anthropic_server.listing_requests) == 1
    # A day later it asks again; Settings' refresh asks whenever it is told to.
    await refresh_all(reloaded, config, only_stale=True, clock=clock(NOW + MAX_AGE_SECONDS + 1))
    assert len(anthropic_server.listing_requests) == 2
    await refresh_all(reloaded, config, clock=clock(NOW + MAX_AGE_SECONDS + 2))
    assert len(anthropic_server.listing_requests) == 3


def test_an_unreadable_cache_is_ignored(tmp_path: Path) -> None:
    (tmp_path / CACHE_FILE).write_text("{not json")
    directory = ModelDirectory.load(tmp_path)
    assert directory.listings == {}


# --- the fake server is as strict as the real models endpoints ------------------------


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("", 200),
        ("?limit=0", 400),
        ("?limit=1001", 400),
        ("?limit=abc", 400),
        ("?lifecycle[]=gone", 400),
        ("?colour=blue", 400),
        ("?after_id=nope", 400),
        ("?after_id=claude-sonnet-5&before_id=claude-sonnet-5", 400),
    ],
)
def test_the_fake_anthropic_models_endpoint_checks_its_query(
    anthropic_server: FakeProviderServer, query: str, status: int
) -> None:
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    reply = httpx2.get(f"{anthropic_server.url}/v1/models{query}", headers=headers)
    assert reply.status_code == status, reply.text
    if status == 400:
        assert reply.json()["error"]["type"] == "invalid_request_error"
    else:
        ids = [m["id"] for m in reply.json()["data"]]
        assert "claude-3-7-sonnet-20250219" not in ids  # retired only when asked for
        assert set(reply.json()["data"][0]) >= {
            "type",
            "id",
            "display_name",
            "created_at",
            "max_input_tokens",
            "max_tokens",
            "lifecycle",
            "line",
        }


def test_the_fake_models_endpoints_need_the_key(anthropic_server: FakeProviderServer) -> None:
    reply = httpx2.get(
        f"{anthropic_server.url}/v1/models", headers={"anthropic-version": "2023-06-01"}
    )
    assert reply.status_code == 401
    assert reply.json()["error"]["type"] == "authentication_error"
    assert httpx2.get(f"{anthropic_server.url}/v1/models").status_code == 401


async def test_one_model_through_the_sdk(anthropic_server: FakeProviderServer) -> None:
    import anthropic

    async with anthropic.AsyncAnthropic(
        api_key=KEY, base_url=anthropic_server.anthropic_url, max_retries=0
    ) as client:
        info = await client.models.retrieve("claude-sonnet-5")
        assert (info.max_input_tokens, info.max_tokens, info.lifecycle, info.line) == (
            1_000_000,
            128_000,
            "active",
            "sonnet",
        )
        with pytest.raises(anthropic.NotFoundError):
            await client.models.retrieve("claude-nothing-1")
