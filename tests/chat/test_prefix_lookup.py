"""What a fold on a local server looks up, and how often: it asks once whether its
server keeps the prompt."""

from __future__ import annotations

import pytest

from foldline.chat import folding, summarizer
from foldline.chat.context import ContextLoader, ConversationContext
from foldline.chat.folding import FoldMaker
from foldline.chat.store_writer import StoreWriter
from foldline.config import AppConfig
from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.testing import ScriptedModel, text_step


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
