"""What a fold on a local server looks up, and how often.

Whether a summary started turns ahead would fold enough is asked at every turn's end on
a one-request server, and each answer builds a fold planner that counts the view. The
gate keeps its last answer: asked again on an unchanged conversation, it plans nothing;
a new message, a fold or other settings make it plan again. A fold asks once whether its
server keeps the prompt."""

from __future__ import annotations

import pytest

from foldline.chat import background, folding, summarizer
from foldline.chat.background import PreparationWorth
from foldline.chat.context import ContextLoader, ConversationContext
from foldline.chat.folding import FoldMaker
from foldline.chat.store_writer import StoreWriter
from foldline.config import AppConfig
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.testing import ScriptedModel, text_step


class CountedPlans:
    """Wraps the fold planner `worth_preparing` builds, to count how often it runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plans = 0
        original = background.planned_fold_frees

        def planned_fold_frees(inputs: FoldInputs) -> int:
            self.plans += 1
            return original(inputs)

        monkeypatch.setattr(background, "planned_fold_frees", planned_fold_frees)


async def test_the_fold_planner_is_built_again_only_when_the_conversation_changed(
    store: Store, config: AppConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = CountedPlans(monkeypatch)
    loader = ContextLoader(store, lambda: [])
    conversation = store.create_conversation()
    said = [
        m for i in range(6) for m in (user(f"question {i} " * 40), assistant(f"answer {i} " * 80))
    ]
    store.append_messages(conversation.id, said)
    writes = StoreWriter()

    def load() -> ConversationContext:
        return loader.load(config, conversation.id, wire="openai")

    maker = FoldMaker(store, writes, load, ScriptedModel(), "test-8k")
    worth = PreparationWorth()
    try:
        first = await worth.check(maker, load())
        assert counted.plans == 1
        # The next turn's end with nothing new (a reload of the same conversation).
        assert await worth.check(maker, load()) is first
        assert counted.plans == 1
        # A new message: the view changed, so the fold is planned again.
        store.append_messages(conversation.id, [user("one more question " * 40)])
        await worth.check(maker, load())
        assert counted.plans == 2
        assert await worth.check(maker, load()) is worth.worth
        assert counted.plans == 2
        # Other settings (a smaller kept tail) plan a different fold.
        smaller = config.model_copy(
            update={"compaction": config.compaction.model_copy(update={"keep_recent_tokens": 500})}
        )
        await worth.check(maker, loader.load(smaller, conversation.id, wire="openai"))
        assert counted.plans == 3
    finally:
        writes.close()


async def test_a_fold_asks_once_whether_its_server_keeps_the_prompt(
    store: Store, config: AppConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold on a local server that keeps its last prompt asks its summary after the
    view, in one request; whether the server keeps it is looked up once for both."""
    asked: list[str] = []

    def keeps_prompt(_provider: object, model: str) -> bool:
        asked.append(model)
        return True

    monkeypatch.setattr(folding, "local_prefix_cache", keeps_prompt)
    monkeypatch.setattr(summarizer, "local_prefix_cache", keeps_prompt)
    loader = ContextLoader(store, lambda: [])
    conversation = store.create_conversation()
    said = [
        m for i in range(6) for m in (user(f"question {i} " * 40), assistant(f"answer {i} " * 80))
    ]
    store.append_messages(conversation.id, said)
    model = ScriptedModel(text_step("## Facts\n- question 0 was asked.\n"))
    model.compatible = True  # type: ignore[attr-defined]  # as an OpenAI-compatible server
    writes = StoreWriter()

    def load() -> ConversationContext:
        return loader.load(config, conversation.id, wire="openai")

    maker = FoldMaker(store, writes, load, model, "test-8k")
    ctx = load()
    try:
        await maker.compute(ctx, "manual", "Compact.", False, None, maker.summary_usage())
    finally:
        writes.close()
    assert asked == ["test-8k"]
    # The one request is the conversation's view with the question after it.
    (request,) = model.calls
    assert request.messages[: len(ctx.view)] == ctx.view
