"""Fixtures for the test doubles: one fake provider server per test module.

Starting uvicorn takes a fraction of a second, so each module shares one server; the
`fake` fixture gives every test a clean one (records, failures, cache and script reset,
the default responder restored).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anthropic
import openai
import pytest

from foldline.testing import (
    FakeProviderServer,
    FakeTokenizer,
    ModelLimits,
    ScriptedModel,
    structured_summary,
)

SMALL = "small-model"
"""A model with a 1,000-token window and 200 output tokens: easy to overflow."""
BIG = "big-model"

MODELS = {
    SMALL: ModelLimits(context_window=1000, max_output_tokens=200),
    BIG: ModelLimits(context_window=100_000, max_output_tokens=8192),
}


def default_script() -> ScriptedModel:
    return ScriptedModel(when_empty="echo", summaries=structured_summary)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    # default_limits=None: an unknown model name is a 404, as on the real APIs.
    with FakeProviderServer(default_script(), models=MODELS, default_limits=None) as running:
        yield running


@pytest.fixture
def fake(server: FakeProviderServer) -> Iterator[FakeProviderServer]:
    server.reset()
    server.responder = default_script()
    yield server
    server.reset()
    server.responder = default_script()


@pytest.fixture
def tokenizer() -> FakeTokenizer:
    return FakeTokenizer()


@pytest.fixture
async def claude(fake: FakeProviderServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    # max_retries=0: the SDK would otherwise retry 429/5xx and hide the first answer.
    client = anthropic.AsyncAnthropic(
        base_url=fake.anthropic_url, api_key="test-key", max_retries=0
    )
    yield client
    await client.close()


@pytest.fixture
async def gpt(fake: FakeProviderServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=fake.openai_url, api_key="test-key", max_retries=0)
    yield client
    await client.close()
