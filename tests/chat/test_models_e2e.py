"""Today's models end to end: a window learned from the provider's models endpoint, a
1M-token conversation folding at its working budget, and a switch to a smaller window.

The real `anthropic` SDK lists the models and streams the turns against the fake server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fake_sessions import filler, run

from foldline.chat.service import ChatService
from foldline.config import AppConfig, parse_config
from foldline.providers.discovery import refresh_all
from foldline.providers.listing import ModelDirectory
from foldline.store import Store
from foldline.testing import FakeModel, FakeProviderServer, Reply, ScriptedModel, structured_summary

BIG = "claude-big-1m"
SMALL = "claude-fake-8k"


@pytest.fixture
async def server() -> AsyncIterator[FakeProviderServer]:
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(0, 60)),
        summaries=structured_summary,
    )
    listed = [
        FakeModel(BIG, 1_000_000, 128_000, line="sonnet", created_at="2026-10-01T00:00:00Z"),
        FakeModel(SMALL, 8_192, 1_024, line="haiku", created_at="2025-01-01T00:00:00Z"),
    ]
    with FakeProviderServer(model, listed=listed, api_key="k") as fake:
        yield fake


def config_for(server: FakeProviderServer, big_working_budget: int | None) -> AppConfig:
    budget = (
        f'[models."{BIG}"]\nworking_budget = {big_working_budget}\n' if big_working_budget else ""
    )
    return parse_config(
        f"""
[providers.anthropic]
base_url = "{server.anthropic_url}"
api_key = "k"

{budget}
[compaction]
keep_recent_tokens = 1500
tool_result_token_cap = 1500
"""
    )


async def service_for(store: Store, config: AppConfig) -> ChatService:
    directory = ModelDirectory()
    await refresh_all(directory, config)
    assert directory.find("anthropic", BIG) is not None

    async def no_sleep(_seconds: float) -> None:
        return None

    return ChatService(store, lambda: config, sleep=no_sleep, listing=directory)


async def test_a_1m_window_folds_at_its_working_budget(
    server: FakeProviderServer, store: Store
) -> None:
    config = config_for(server, big_working_budget=6_000)
    service = await service_for(store, config)
    conversation = store.create_conversation(model=BIG)
    try:
        stats = service.context(conversation.id, include_messages=False).model_dump()
        # The window comes from the provider (the catalog does not know this model).
        assert stats["contextWindow"] == 1_000_000 and stats["modelKnown"] is True
        assert (stats["inputBudget"], stats["workingBudget"]) == (6_000, 6_000)
        assert stats["windowBudget"] > 800_000

        folds = []
        for turn in range(1, 30):
            events = await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 200))
            assert not [e for e in events if e.name == "error"], events
            folds += [e for e in events if e.name == "compaction.completed"]
            if folds:
                break
        assert folds, "never folded"
        # Folded near the working budget, hundreds of thousands of tokens below the window.
        assert 0.8 * 6_000 <= folds[0].data["tokensBefore"] < 6_000
        largest = max(r.input_tokens or 0 for r in server.requests)
        assert largest < 8_000
        # The whole history is still there to see.
        assert len(store.list_messages(conversation.id)) == 2 * turn
    finally:
        await service.shutdown()


async def test_a_large_window_gets_the_default_working_budget(
    server: FakeProviderServer, store: Store
) -> None:
    service = await service_for(store, config_for(server, big_working_budget=None))
    conversation = store.create_conversation(model=BIG)
    try:
        stats = service.context(conversation.id, include_messages=False).model_dump()
        assert (stats["inputBudget"], stats["workingBudget"]) == (200_000, 200_000)
        small = store.create_conversation(model=SMALL)
        stats = service.context(small.id, include_messages=False).model_dump()
        assert stats["workingBudget"] is None
        assert stats["inputBudget"] == stats["windowBudget"]
    finally:
        await service.shutdown()


async def test_switching_to_a_smaller_window_keeps_history_and_folds(
    server: FakeProviderServer, store: Store
) -> None:
    # The whole window as working budget: nothing folds on the big model.
    service = await service_for(store, config_for(server, big_working_budget=1_000_000))
    conversation = store.create_conversation(model=BIG)
    try:
        for turn in range(1, 11):
            events = await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 500))
            assert not [e for e in events if e.name == "compaction.completed"]
        before = service.context(conversation.id, include_messages=False).model_dump()
        assert before["tokens"] > 8_192
        history = len(store.list_messages(conversation.id))

        store.update_conversation(conversation.id, model=SMALL)
        events = await run(service, conversation.id, "Now on the small model: go on.")
        names = [e.name for e in events]
        assert "error" not in names, events
        assert "compaction.completed" in names
        assert names.index("compaction.completed") < names.index("assistant.delta")
        after = service.context(conversation.id, include_messages=False).model_dump()
        assert after["contextWindow"] == 8_192 and after["tokens"] < after["inputBudget"]
        # Nothing was lost: the display history holds every message, plus the new turn.
        assert len(store.list_messages(conversation.id)) == history + 2
        last_request = [r for r in server.requests if not r.is_summary][-1]
        assert last_request.status == 200 and (last_request.input_tokens or 0) < 8_192
    finally:
        await service.shutdown()
