"""Titles made by the summarizer after the first exchange, with a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from foldline.chat.service import ChatService
from foldline.chat.titles import TITLE_SYSTEM, clean_title, first_message_title
from foldline.config import AppConfig
from foldline.providers.base import ModelRequest, ProviderError
from foldline.store import Store
from foldline.testing import ScriptedModel, error_step, text_step

QUESTION = "What is the capital of France, and why did it become the capital?\nThanks!"


class HeldTitles:
    """The scripted model, with tool-less (title) requests held until released."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.release = asyncio.Event()
        self.asked = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        if not request.tools:
            self.asked.set()
            await self.release.wait()
        async for event in self.model.stream(request):
            yield event


def service_for(store: Store, provider: Any, config: AppConfig) -> ChatService:
    return ChatService(store, lambda: config, provider_factory=lambda _c, _m: provider)


async def first_exchange(service: ChatService, store: Store) -> str:
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, QUESTION)
    events = [event async for event in handle.events()]
    assert events[-1].name == "done"
    return conversation.id


async def test_a_title_is_made_after_the_first_exchange(store: Store, config: AppConfig) -> None:
    model = ScriptedModel(
        text_step("Paris. It became the capital under the Capetians."),
        text_step('Title: "Why Paris is the capital of France."'),
    )
    service = service_for(store, model, config)
    conversation_id = await first_exchange(service, store)
    # At `done` the title is the first message's; the made one follows in the background.
    await service.titles.wait(conversation_id)
    assert store.get_conversation(conversation_id).title == "Why Paris is the capital of France"
    # Pages watching are told, so their lists show it (the title is made in the
    # background, so it may be announced before the turn's end is).
    kinds = [c.kind for c in await service.watch.changes_after(0)]
    assert kinds[0] == "turn.started"
    assert sorted(kinds[1:]) == ["turn.finished", "updated"]
    model.assert_complete()
    title_request = model.calls[1]
    assert title_request.tools == [] and title_request.system == TITLE_SYSTEM
    assert "capital of France" in title_request.messages[0].text
    assert "Capetians" in title_request.messages[0].text
    # Its usage is stored like a summarizer call, attributed to no fold.
    calls = store.list_calls(conversation_id)
    assert [(c.purpose, c.fold_version) for c in calls] == [("chat", None), ("summary", None)]
    # A second exchange makes no new title.
    model.add(text_step("Since 987."))
    handle = await service.start_turn(conversation_id, "Since when?")
    [event async for event in handle.events()]
    await service.titles.wait(conversation_id)
    model.assert_complete()
    assert store.get_conversation(conversation_id).title == "Why Paris is the capital of France"
    await service.shutdown()


async def test_a_rename_before_the_title_lands_wins(store: Store, config: AppConfig) -> None:
    model = ScriptedModel(text_step("Paris."), text_step("Capital of France"))
    held = HeldTitles(model)
    service = service_for(store, held, config)
    conversation_id = await first_exchange(service, store)
    assert store.get_conversation(conversation_id).title == first_message_title(QUESTION)
    await asyncio.wait_for(held.asked.wait(), 5)
    store.update_conversation(conversation_id, title="My own name")
    held.release.set()
    await service.titles.wait(conversation_id)
    model.assert_complete()  # the title was asked for, and then not used
    assert store.get_conversation(conversation_id).title == "My own name"
    assert "updated" not in [c.kind for c in await service.watch.changes_after(0)]
    await service.shutdown()


async def test_the_setting_off_makes_no_title_call(store: Store, config: AppConfig) -> None:
    model = ScriptedModel(text_step("Paris."))
    compaction = config.compaction.model_copy(update={"auto_title": False})
    service = service_for(store, model, config.model_copy(update={"compaction": compaction}))
    conversation_id = await first_exchange(service, store)
    await service.titles.wait(conversation_id)
    assert len(model.calls) == 1
    assert store.get_conversation(conversation_id).title == first_message_title(QUESTION)
    await service.shutdown()


async def test_a_failing_or_empty_summarizer_keeps_the_first_message_title(
    store: Store, config: AppConfig
) -> None:
    for answer in (error_step(ProviderError("overloaded", "busy")), text_step(' "." \n')):
        model = ScriptedModel(text_step("Paris."), answer)
        service = service_for(store, model, config)
        conversation_id = await first_exchange(service, store)
        await service.titles.wait(conversation_id)
        model.assert_complete()
        title = store.get_conversation(conversation_id).title
        assert title == "What is the capital of France, and why did it become the…"
        await service.shutdown()


def test_titles_are_cleaned_and_first_messages_cut() -> None:
    assert clean_title("**Trip to Lisbon!**\nmore") == "Trip to Lisbon"
    assert clean_title("# Title: «Budget review».") == "Budget review"
    assert clean_title("   \n ... ") == ""
    assert first_message_title("  hello   world \nsecond line") == "hello world"
    assert len(first_message_title("x" * 200)) == 58
