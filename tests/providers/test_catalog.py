from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foldline.providers.catalog import (
    CATALOG,
    CATALOG_DATE,
    SUGGESTED_MODELS,
    all_models,
    family_provider,
    guess,
    lookup,
)


@pytest.mark.parametrize(
    ("model", "catalog_id", "window", "output"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5", 200_000, 64_000),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200_000, 64_000),
        ("claude-opus-4-1-20250805", "claude-opus-4-1", 200_000, 32_000),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet", 200_000, 64_000),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku", 200_000, 8_192),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5", 200_000, 64_000),
        ("gpt-5", "gpt-5", 400_000, 128_000),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini", 400_000, 128_000),
        ("gpt-4.1-2025-04-14", "gpt-4.1", 1_047_576, 32_768),
        ("gpt-4o-2024-08-06", "gpt-4o", 128_000, 16_384),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13", 128_000, 4_096),
        ("openai/gpt-4o-mini", "gpt-4o-mini", 128_000, 16_384),
        ("o4-mini-2025-04-16", "o4-mini", 200_000, 100_000),
        ("gpt-4-0613", "gpt-4", 8_192, 8_192),
        ("gpt-4-turbo-2024-04-09", "gpt-4-turbo", 128_000, 4_096),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo", 16_385, 4_096),
        ("GPT-4o", "gpt-4o", 128_000, 16_384),
    ],
)
def test_lookup(model: str, catalog_id: str, window: int, output: int) -> None:
    info = lookup(model)
    assert info is not None
    assert (info.id, info.context_window, info.max_output_tokens, info.known) == (
        catalog_id,
        window,
        output,
        True,
    )


@pytest.mark.parametrize("model", ["llama3.1:8b", "mistral-large", "gpt-oss:20b", "", "claude"])
def test_unknown_models_are_not_in_the_catalog(model: str) -> None:
    assert lookup(model) is None


def test_one_million_beta_is_noted_but_not_the_default() -> None:
    info = lookup("claude-sonnet-4-5")
    assert info is not None and info.note is not None
    assert "1M" in info.note
    assert info.context_window == 200_000


def test_entries_are_coherent() -> None:
    assert {m.id for m in all_models()} == set(CATALOG)
    for info in all_models():
        assert 0 < info.max_output_tokens <= info.context_window, info.id
        assert lookup(info.id) == info
        assert info.provider == ("anthropic" if info.id.startswith("claude") else "openai")


@given(
    st.sampled_from(sorted(CATALOG)),
    st.from_regex(r"-20[0-9]{2}(0[1-9]|1[0-2])[0-3][0-9]", fullmatch=True),
)
def test_any_dated_snapshot_resolves_to_its_base(model: str, suffix: str) -> None:
    info = lookup(model + suffix)
    assert info is not None
    assert info.id == model


def test_family_guesses_are_flagged_and_conservative() -> None:
    newer = guess("claude-opus-9")
    assert newer is not None
    assert (newer.provider, newer.context_window, newer.known) == ("anthropic", 200_000, False)
    assert guess("gpt-5.9-pro") is not None
    assert guess("llama3.1:8b") is None
    assert family_provider("o7-mini") == "openai"
    assert family_provider("claude-sonnet-4-5") == "anthropic"
    assert family_provider("qwen3") is None


def test_every_entry_is_complete() -> None:
    """Window, output cap, lifecycle and all four prices, coherent with each provider's
    cache pricing rules."""
    assert date.fromisoformat(CATALOG_DATE) >= date(2026, 6, 30)
    for info in all_models():
        assert info.context_window > 0 and 0 < info.max_output_tokens <= info.context_window
        assert info.lifecycle in ("active", "deprecated", "retired"), info.id
        prices = info.prices
        assert prices is not None, info.id
        assert prices.input > 0 and prices.output > prices.input, info.id
        assert 0 < prices.cache_read <= prices.input, info.id
        if info.provider == "anthropic":
            assert prices.cache_read == pytest.approx(prices.input * 0.1), info.id
            assert prices.cache_write == pytest.approx(prices.input * 1.25), info.id
        elif info.id.startswith(("gpt-6", "gpt-5.6")):
            # OpenAI's newest families bill cache writes (30-minute retention) at 1.25 x.
            assert prices.cache_write == pytest.approx(prices.input * 1.25), info.id
        else:
            # Earlier OpenAI models cache by themselves and bill no write premium.
            assert prices.cache_write == prices.input, info.id


@pytest.mark.parametrize(
    ("model", "window", "output", "input_price", "output_price"),
    [
        ("claude-sonnet-5", 1_000_000, 128_000, 2, 10),
        ("claude-opus-4-6", 1_000_000, 128_000, 5, 25),
        ("claude-opus-4-8", 1_000_000, 128_000, 5, 25),
        ("claude-sonnet-4-6", 1_000_000, 64_000, 3, 15),
        ("claude-haiku-4-5-20251001", 200_000, 64_000, 1, 5),
        ("gpt-5.4", 1_050_000, 128_000, 2.5, 15),
        ("claude-sonnet-5-5", 1_000_000, 128_000, 2, 10),
        ("gpt-6.1-sol", 1_050_000, 128_000, 2, 10),
        ("gpt-6-astra", 1_050_000, 128_000, 10, 50),
    ],
)
def test_current_models(
    model: str, window: int, output: int, input_price: float, output_price: float
) -> None:
    info = lookup(model)
    assert info is not None and info.lifecycle == "active"
    assert (info.context_window, info.max_output_tokens) == (window, output)
    assert info.prices is not None
    assert (info.prices.input, info.prices.output) == (input_price, output_price)


def test_opus_4_6_cache_prices() -> None:
    info = lookup("claude-opus-4-6")
    assert info is not None and info.prices is not None
    assert (info.prices.cache_read, info.prices.cache_write) == (0.5, 6.25)


def test_retired_models_are_kept_and_marked() -> None:
    for model in ("claude-3-5-sonnet-20241022", "claude-3-7-sonnet-latest", "claude-sonnet-4-0"):
        info = lookup(model)
        assert info is not None and info.lifecycle == "retired", model


def test_suggested_models_are_current_catalog_models() -> None:
    for provider, model in SUGGESTED_MODELS.items():
        info = lookup(model)
        assert info is not None and info.provider == provider and info.lifecycle == "active"
