"""A fold's summary asked after the conversation's own cached view, through the real SDKs.

The summary request repeats the last turn's request (the same system prompt, tools and
messages, the same cache key and breakpoints) and adds one message asking for the
summary, so the fake server's strict prompt cache reads the view back. A summarizer
that is another model keeps the request of its own (it has no cache of this view).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_sessions import SERVICES, filler, run
from test_prompt_cache_e2e import breakpoints

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.core.prompts import SUMMARY_SYSTEM, is_fold_request
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    ModelLimits,
    RecordedRequest,
    Reply,
    ScriptedModel,
    structured_summary,
)

MODEL = {"anthropic": "claude-fake-after-view", "openai": "gpt-fake-after-view"}
OTHER = {"anthropic": "claude-fake-summarizer", "openai": "gpt-fake-summarizer"}
SYSTEM = "You are a careful assistant. " + filler(1, 300)


def make_service(
    server: FakeProviderServer, store: Store, summarizer: str = "", prepare_threshold: float = 0.95
) -> ChatService:
    models = ""
    for wire in MODEL:
        for name in (MODEL[wire], OTHER[wire]):
            models += f"""
[models."{name}"]
provider = "fake-{wire}"
context_window = 8192
max_output_tokens = 1024
"""
    config = parse_config(
        f"""
[providers.fake-anthropic]
kind = "anthropic"
base_url = "{server.anthropic_url}"
api_key = "k"

[providers.fake-openai]
kind = "openai"
base_url = "{server.openai_url}"
api_key = "k"
{models}
[compaction]
auto_title = false
prepare_threshold = {prepare_threshold}
{f'model = "{summarizer}"' if summarizer else ""}
"""
    )

    async def no_sleep(_seconds: float) -> None:
        return None

    service = ChatService(store, lambda: config, sleep=no_sleep)
    SERVICES.append(service)
    return service


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(3, 90)),
        summaries=structured_summary,
    )
    limits = ModelLimits(context_window=8192, max_output_tokens=1024)
    with FakeProviderServer(model, default_limits=limits, api_key="k") as fake:
        yield fake


async def fold_after_turns(service: ChatService, conversation_id: str, turns: int) -> None:
    for turn in range(turns):
        await run(service, conversation_id, f"Turn {turn}. " + filler(turn, 60))
    handle = await service.start_compaction(conversation_id, None)
    events = [e async for e in handle.events()]
    assert [e for e in events if e.name == "compaction.completed"], [e.data for e in events]


def last_summary_and_chat(server: FakeProviderServer) -> tuple[RecordedRequest, RecordedRequest]:
    ok = [r for r in server.requests if r.status == 200 and r.body is not None]
    summary = [r for r in ok if r.is_summary][-1]
    chat = [r for r in ok[: ok.index(summary)] if not r.is_summary][-1]
    return summary, chat


@pytest.mark.parametrize("wire", list(MODEL))
async def test_the_summary_reads_the_turns_cached_view(
    wire: str, server: FakeProviderServer, store: Store
) -> None:
    service = make_service(server, store)
    conversation = store.create_conversation(model=MODEL[wire], system_prompt=SYSTEM)
    await fold_after_turns(service, conversation.id, 8)
    server.assert_no_errors()

    summary, chat = last_summary_and_chat(server)
    assert summary.body is not None and chat.body is not None
    # The same system prompt, tools and leading messages as the last turn sent.
    assert summary.body.get("tools") and summary.body.get("tools") == chat.body.get("tools")
    sent = chat.body["messages"]
    assert summary.body["messages"][: len(sent)] == sent
    if wire == "anthropic":
        assert summary.body["system"] == chat.body["system"]
        assert summary.body["cache_control"] == chat.body["cache_control"]
    else:
        assert summary.body["prompt_cache_key"] == chat.body["prompt_cache_key"]
    # Then the answer, then one message asking for the summary (no tool may be called).
    assert summary.model_request is not None
    assert is_fold_request(summary.model_request.messages[-1].text)
    assert "call no tool" in summary.model_request.messages[-1].text
    # The view the last turn sent is read back from the cache.
    assert summary.usage is not None and chat.usage is not None
    assert summary.usage.cache_read_tokens >= 0.8 * chat.usage.total_input
    # The fold line's cost counts the view at the cache's price.
    (fold,) = store.list_compactions(conversation.id)
    assert 0 < fold.state.summary_input_tokens < summary.usage.total_input // 2


@pytest.mark.parametrize("wire", list(MODEL))
async def test_another_summarizer_model_gets_a_request_of_its_own(
    wire: str, server: FakeProviderServer, store: Store
) -> None:
    service = make_service(server, store, summarizer=OTHER[wire])
    conversation = store.create_conversation(model=MODEL[wire], system_prompt=SYSTEM)
    await fold_after_turns(service, conversation.id, 8)
    server.assert_no_errors()

    summary, _chat = last_summary_and_chat(server)
    request = summary.model_request
    assert request is not None and request.model == OTHER[wire]
    assert not request.tools and request.system == SUMMARY_SYSTEM
    assert len(request.messages) == 1 and "<transcript>" in request.messages[0].text
    assert not is_fold_request(request.messages[0].text)


async def test_the_turn_after_a_prepared_summary_reads_the_last_answer_back(
    server: FakeProviderServer, store: Store
) -> None:
    # Prepared early and committed late: the next turn still sends the view the summary
    # was asked after, plus the person's new message.
    service = make_service(server, store, prepare_threshold=0.4)
    conversation = store.create_conversation(model=MODEL["anthropic"], system_prompt=SYSTEM)
    for turn in range(20):
        await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 60))
        await service.background.wait(conversation.id)
        if any(r.is_summary for r in server.requests):
            break
    await run(service, conversation.id, "One more. " + filler(30, 60))
    server.assert_no_errors()
    assert not store.list_compactions(conversation.id)

    ok = [r for r in server.requests if r.status == 200 and r.body is not None]
    (summary,) = [r for r in ok if r.is_summary]
    at = ok.index(summary)
    before, after = ok[at - 1], ok[at + 1]
    assert summary.body is not None and after.usage is not None and before.usage is not None
    # The summary request marks the view's end, the block before the fold request: four
    # breakpoints with the system prompt, the top-level one and none other here (no fold
    # yet), within the API's limit, which the fake server enforces.
    blocks = [b for m in summary.body["messages"] for b in m["content"]]
    assert is_fold_request(blocks[-1]["text"]) and "cache_control" in blocks[-2]
    assert breakpoints(summary.body) == 3
    # So the next turn reads the view through the last answer back: more than the whole
    # request before the summary, which is all it could read without that breakpoint.
    assert after.usage.cache_read_tokens > before.usage.total_input
