"""The model's view is loaded once per model call and each stored message counted once."""

from __future__ import annotations

import pytest

from foldline.chat.context import ContextLoader
from foldline.chat.counting import PROBE
from foldline.chat.service import ChatService
from foldline.config import AppConfig
from foldline.core.messages import Message, assistant, user
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step


class CountingLoads:
    """Wraps `ContextLoader.load` to count its calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = ContextLoader.load

        def load(loader: ContextLoader, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            self.calls += 1
            return original(loader, *args, **kwargs)

        monkeypatch.setattr(ContextLoader, "load", load)


async def _run(service: ChatService, conversation_id: str, content: str) -> None:
    async for _event in (await service.start_turn(conversation_id, content)).events():
        pass


async def test_one_load_per_model_call(store: Store, make_service, monkeypatch) -> None:
    loads = CountingLoads(monkeypatch)
    service = make_service(ScriptedModel(text_step("One answer.")))
    conversation = store.create_conversation()
    await _run(service, conversation.id, "Hi")
    # One call: its load (shared with the gate and the user's message event), then one
    # at the end of the turn (what to prepare in the background, and the final numbers).
    assert loads.calls == 2

    loads.calls = 0
    model = ScriptedModel(tool_step(call("getContextStats", {})), text_step("Done."))
    service = make_service(model)
    await _run(service, conversation.id, "Check the room")
    # Two calls and one tool batch (whose stats need the view with the call in it).
    assert loads.calls == 4
    model.assert_complete()


class CountingCounter:
    """A token counter that records which messages it was asked to count."""

    exact = False

    def __init__(self) -> None:
        self.counted: list[str] = []

    def count_text(self, text: str) -> int:
        return len(text) // 4 + 1

    def count_message(self, message: Message) -> int:
        if message not in PROBE:  # the fingerprint's messages aside
            self.counted.append(message.text)
        return 4 + self.count_text(message.text)

    def count_tools(self, tools: object) -> int:
        return 10

    def count_request(self, system: str, messages: object, tools: object) -> int:
        return 3 + self.count_text(system) + (self.count_tools(tools) if tools else 0)


def test_a_stored_message_is_counted_once_until_it_changes(
    store: Store, config: AppConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = CountingCounter()
    monkeypatch.setattr("foldline.chat.context.counter_for", lambda *_args, **_kwargs: counter)
    loader = ContextLoader(store, lambda: [])
    conversation = store.create_conversation()
    _first, second = store.append_messages(conversation.id, [user("one"), assistant("two")])
    ctx = loader.load(config, conversation.id, wire="openai")
    assert sorted(counter.counted) == ["one", "two"]
    counter.counted.clear()
    again = loader.load(config, conversation.id, wire="openai")
    assert counter.counted == [] and again.tokens == ctx.tokens
    # A changed row loses its stored count: only it is counted again.
    store.update_message(second.id, message=assistant("two, longer now"))
    changed = loader.load(config, conversation.id, wire="openai")
    assert counter.counted == ["two, longer now"]
    assert changed.tokens > ctx.tokens
