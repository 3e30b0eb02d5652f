"""The reasoning setting in each provider's form, decided from the model's name."""

from __future__ import annotations

import pytest

from foldline.core.reasoning import (
    anthropic_thinking_fields,
    chat_reasons_by_default,
    chat_refuses_tools_with_reasoning,
    default_effort,
    effort_from_settings,
    openai_effort,
    prefers_responses_api,
    reasoning_support,
)


@pytest.mark.parametrize(
    ("model", "style"),
    [
        ("claude-sonnet-4-6", "anthropic-adaptive"),
        ("claude-opus-4-7", "anthropic-adaptive"),
        ("claude-sonnet-5-5", "anthropic-adaptive"),
        ("claude-fable-5-1", "anthropic-adaptive"),
        ("anthropic/claude-opus-5", "anthropic-adaptive"),
        ("claude-sonnet-4-5", "anthropic-budget"),
        ("claude-sonnet-4-5-20250929", "anthropic-budget"),
        ("claude-haiku-4-5", "anthropic-budget"),
        ("claude-opus-4-1", "anthropic-budget"),
        ("claude-3-7-sonnet", "anthropic-budget"),
        ("claude-3-5-haiku", "none"),
        ("gpt-6.1-sol", "openai"),
        ("gpt-5.4-mini", "openai"),
        ("gpt-5", "openai"),
        ("o4-mini", "openai"),
        ("gpt-5-chat-latest", "none"),
        ("gpt-4o", "none"),
        ("llama3:8b", "none"),
    ],
)
def test_reasoning_families(model: str, style: str) -> None:
    assert reasoning_support(model).style == style
    assert default_effort(model) == ("off" if style == "none" else "medium")


def test_anthropic_adaptive_thinking_with_an_effort() -> None:
    assert anthropic_thinking_fields("claude-sonnet-4-6", "low", 8000) == {
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "low"},
    }
    # `max` only where the model takes it; Sonnet's top is `high`.
    assert anthropic_thinking_fields("claude-sonnet-4-6", "max", 8000)["output_config"] == {
        "effort": "high"
    }
    assert anthropic_thinking_fields("claude-opus-4-6", "max", 8000)["output_config"] == {
        "effort": "max"
    }
    assert anthropic_thinking_fields("claude-sonnet-4-6", "off", 8000) == {}
    assert anthropic_thinking_fields("claude-3-5-haiku", "high", 8000) == {}


@pytest.mark.parametrize(
    ("effort", "max_tokens", "budget"),
    [
        ("low", 64_000, 2048),
        ("high", 64_000, 16_384),
        ("max", 64_000, 32_000),
        ("max", 10_000, 5000),
        ("medium", 4096, 2048),
        ("low", 2000, None),
    ],
)
def test_older_claude_budget_is_at_least_1024_and_below_max_tokens(
    effort: str, max_tokens: int, budget: int | None
) -> None:
    fields = anthropic_thinking_fields("claude-sonnet-4-5", effort, max_tokens)  # type: ignore[arg-type]
    if budget is None:
        assert fields == {}  # no room for the API's 1024-token minimum
        return
    assert fields == {"thinking": {"type": "enabled", "budget_tokens": budget}}
    assert 1024 <= budget < max_tokens


@pytest.mark.parametrize(
    ("model", "off", "top"),
    [
        ("gpt-6.1-sol", "none", "max"),
        ("gpt-6-astra", "low", "max"),
        ("gpt-5.4", "none", "xhigh"),
        ("gpt-5.1", "none", "high"),
        ("gpt-5", "minimal", "high"),
        ("gpt-5-mini", "minimal", "high"),
        ("o3", "low", "high"),
    ],
)
def test_openai_efforts_at_both_ends(model: str, off: str, top: str) -> None:
    assert openai_effort(model, "off") == off
    assert openai_effort(model, "max") == top
    assert openai_effort(model, "medium") == "medium"
    assert prefers_responses_api(model)


def test_models_that_do_not_reason_get_no_effort() -> None:
    assert openai_effort("gpt-4o", "high") is None
    assert openai_effort("claude-sonnet-4-6", "high") is None
    assert not prefers_responses_api("gpt-4.1")


def test_chat_completions_refusals_by_family() -> None:
    assert chat_refuses_tools_with_reasoning("gpt-5.4-mini")
    assert chat_refuses_tools_with_reasoning("gpt-6-astra")
    assert not chat_refuses_tools_with_reasoning("gpt-5.2")
    assert chat_reasons_by_default("gpt-5.6-luna")
    assert not chat_reasons_by_default("gpt-5.4")


def test_effort_from_conversation_settings() -> None:
    assert effort_from_settings({"reasoning": {"effort": "low"}}) == "low"
    assert effort_from_settings({"reasoning": {"effort": "extreme"}}) is None
    assert effort_from_settings({"compaction": {}}) is None
    assert effort_from_settings(None) is None
