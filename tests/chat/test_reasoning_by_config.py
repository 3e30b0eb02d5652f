"""Reasoning by configuration: a Claude model whose name Foldline does not know gets an
explicit `reasoning_effort` in the form its `[models."x"] thinking` names, through the
real Anthropic SDK to the fake server; without that setting the config refuses to load."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import SERVICES, chat_requests, run

from foldline.chat.service import ChatService
from foldline.config import ConfigError, parse_config
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel

MODEL = "claude-nova-1"
"""A Claude name no catalog knows (yet)."""


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(when_empty=lambda _request: Reply(text="Noted."))
    limits = ModelLimits(context_window=64_000, max_output_tokens=8192)
    with FakeProviderServer(model, models={MODEL: limits}, api_key="k") as fake:
        yield fake


def config_text(server: FakeProviderServer, settings: str) -> str:
    return f"""
[providers.fake-anthropic]
kind = "anthropic"
base_url = "{server.anthropic_url}"
api_key = "k"

[models."{MODEL}"]
provider = "fake-anthropic"
context_window = 64000
max_output_tokens = 8192
{settings}
[compaction]
auto_title = false
"""


@pytest.mark.parametrize(
    ("settings", "sent"),
    [
        (
            'reasoning_effort = "high"\nthinking = "adaptive"\n',
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}},
        ),
        # `max` is the Opus-class models' own level: an unknown name gets `high`.
        (
            'reasoning_effort = "max"\nthinking = "adaptive"\n',
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}},
        ),
        # A budget of 2,048 for `low`, under half of the 8,192 output tokens.
        (
            'reasoning_effort = "low"\nthinking = "budget"\n',
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
        # The form alone: the default effort of a model that reasons (medium, 8,192),
        # capped at half of the request's `max_tokens` (0 here: filled in below).
        ('thinking = "budget"\n', {"thinking": {"type": "enabled", "budget_tokens": 0}}),
        # Off is off, whatever the form.
        ('reasoning_effort = "off"\nthinking = "adaptive"\n', {}),
    ],
)
async def test_an_unknown_claude_name_reasons_in_the_configured_form(
    server: FakeProviderServer, store: Store, tmp_path: Path, settings: str, sent: dict
) -> None:
    config = parse_config(config_text(server, settings))
    service = ChatService(store, lambda: config)
    SERVICES.append(service)
    conversation = store.create_conversation(model=MODEL)
    events = await run(service, conversation.id, "Hello there.")

    server.assert_no_errors()
    assert not [e for e in events if e.name == "error"]
    body = chat_requests(server)[0].body
    assert body is not None
    if sent.get("thinking", {}).get("budget_tokens") == 0:
        assert body["max_tokens"] // 2 < 8192
        sent = {"thinking": {"type": "enabled", "budget_tokens": body["max_tokens"] // 2}}
    assert {key: body[key] for key in ("thinking", "output_config") if key in body} == sent
    # The fake answers with reasoning only when it was asked for.
    reasoned = any(e.name == "assistant.delta" and e.data["kind"] == "reasoning" for e in events)
    assert reasoned == bool(sent)


@pytest.mark.parametrize("effort", ["low", "medium", "high", "max"])
def test_an_effort_for_an_unknown_claude_name_without_its_form_is_refused(
    server: FakeProviderServer, effort: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(config_text(server, f'reasoning_effort = "{effort}"\n'))
    message = str(refused.value)
    assert f'models."{MODEL}".reasoning_effort' in message
    assert f'models."{MODEL}".thinking = "adaptive"' in message
    assert refused.value.line == 11  # the reasoning_effort line


def test_what_loads_as_before() -> None:
    # Known names need no form; off needs none; a name without a provider that does
    # not start with claude is not Anthropic's, so its effort is sent as it is.
    parse_config('[models."claude-sonnet-4-6"]\nreasoning_effort = "high"\n')
    parse_config('[models."claude-nova-1"]\nreasoning_effort = "off"\n')
    parse_config('[models."claude-nova-1"]\nthinking = "adaptive"\nreasoning_effort = "low"\n')


def test_a_form_of_thinking_is_refused_off_anthropic() -> None:
    with pytest.raises(ConfigError, match=r'models\."qwen3"\.thinking: only Anthropic'):
        parse_config(
            '[providers.local]\nkind = "openai-compatible"\nbase_url = "http://h/v1"\n'
            '[models."qwen3"]\nprovider = "local"\nthinking = "budget"\n'
        )
