"""Prompt caching through the real SDKs against the fake server's strict cache.

A conversation on the Anthropic wire marks at most 4 breakpoints (system, the fold's
summary, the newest block), its consecutive requests are byte-identical up to the new
message, and most of its input is read from the cache; on the OpenAI wire every
request carries the conversation's `prompt_cache_key`. Every call's usage is stored and
priced (prices set through config), and the meter's numbers add up.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pytest
from fake_sessions import SERVICES, filler, run

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.core.pricing import ModelPrices, call_cost
from foldline.store import Store
from foldline.store.export import export_json
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel

WIRES = ["anthropic", "openai"]
MODEL = {
    "anthropic": "claude-fake-cache",
    "openai": "gpt-fake-cache",
    # A GPT-6 family name: OpenAI's Responses API, reasoning at the default effort.
    "responses": "gpt-6-fake-cache",
}
PRICES = ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
UNPRICED = "gpt-fake-unpriced"
SYSTEM = "You are a careful assistant. " + filler(1, 400)


def make_service(
    server: FakeProviderServer,
    store: Store,
    window: int,
    prices: dict[str, ModelPrices] | None = None,
    **compaction: float,
) -> ChatService:
    """Both wires' priced models (`prices` per wire, default `PRICES`) and an unpriced
    one on a `window`-token window; also used by `benchmarks/prompt_cache_bench.py`."""
    extra = "".join(f"{key} = {value}\n" for key, value in compaction.items())
    models = f"""
[models."{UNPRICED}"]
provider = "fake-openai"
context_window = {window}
max_output_tokens = 1024
"""
    for wire, name in MODEL.items():
        price = (prices or {}).get(wire, PRICES)
        models += f"""
[models."{name}"]
provider = "fake-{"anthropic" if wire == "anthropic" else "openai"}"
context_window = {window}
max_output_tokens = 1024
input_price = {price.input}
output_price = {price.output}
cache_read_price = {price.cache_read}
cache_write_price = {price.cache_write}
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
keep_recent_tokens = 1500
auto_title = false
{extra}"""
    )

    async def no_sleep(_seconds: float) -> None:
        return None

    service = ChatService(store, lambda: config, sleep=no_sleep)
    SERVICES.append(service)
    return service


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(when_empty=lambda request: Reply(text="Noted. " + filler(3, 90)))
    limits = ModelLimits(context_window=200_000, max_output_tokens=4096)
    with FakeProviderServer(model, default_limits=limits, api_key="k") as fake:
        yield fake


def chat_requests(server: FakeProviderServer):  # type: ignore[no-untyped-def]
    return [r for r in server.requests if not r.is_summary and r.status == 200]


def messages_end(raw: bytes) -> int:
    """The byte offset just after the `messages` (Responses API: `input`) array of a raw
    JSON body."""
    text = raw.decode()
    key = '"input"' if '"input"' in text else '"messages"'
    start = text.index("[", text.index(key))
    _, end = json.JSONDecoder().raw_decode(text, start)
    return len(text[:end].encode())


def breakpoints(body: dict) -> int:  # type: ignore[type-arg]
    return json.dumps(body).count('"cache_control"')


@pytest.mark.parametrize("wire", [*WIRES, "responses"])
async def test_a_long_conversation_reads_its_prompt_from_the_cache(
    wire: str, server: FakeProviderServer, store: Store
) -> None:
    service = make_service(server, store, 200_000)
    conversation = store.create_conversation(model=MODEL[wire], system_prompt=SYSTEM)
    for turn in range(30):
        events = await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 60))
        assert not [e for e in events if e.name == "error"]
    server.assert_no_errors()

    requests = chat_requests(server)
    assert len(requests) == 30
    read = sum(r.usage.cache_read_tokens for r in requests)
    total = sum(r.usage.total_input for r in requests)
    assert read / total >= 0.90
    if wire == "anthropic":
        assert all(breakpoints(r.body) <= 4 for r in requests)
        # System, then the automatic marker on the newest block: nothing else moves.
        assert all(r.body["cache_control"] == {"type": "ephemeral"} for r in requests)
        assert all(r.body["system"][0]["cache_control"] for r in requests)
    else:
        assert {r.body["prompt_cache_key"] for r in requests} == {conversation.id}
    # Deterministic serialization: each request's raw body repeats the previous one byte
    # for byte up to where the new message begins, and after its messages.
    for previous, current in itertools.pairwise(requests):
        old_end = messages_end(previous.raw)
        new_end = messages_end(current.raw)
        assert current.raw[: old_end - 1] == previous.raw[: old_end - 1]  # up to the "]"
        assert current.raw[new_end:] == previous.raw[old_end:]
        assert new_end > old_end

    # Every call is stored with its cache split and priced; the meter's total adds up.
    calls = store.list_calls(conversation.id)
    assert [c.purpose for c in calls] == ["chat"] * 30
    assert [c.cache_read_tokens for c in calls] == [r.usage.cache_read_tokens for r in requests]
    expected = [
        call_cost(
            PRICES,
            input_tokens=r.usage.input_tokens,
            output_tokens=r.usage.output_tokens,
            cache_read_tokens=r.usage.cache_read_tokens,
            cache_creation_tokens=r.usage.cache_creation_tokens,
        )
        for r in requests
    ]
    stats = service.context(conversation.id, include_messages=False).model_dump()
    usage = stats["usage"]
    assert usage["priced"] is True
    assert usage["total"]["cost"] == pytest.approx(sum(c.total for c in expected))
    assert usage["total"]["saved"] == pytest.approx(sum(c.saved for c in expected))
    assert usage["total"]["saved"] > 0
    assert usage["lastTurn"]["cost"] == pytest.approx(expected[-1].total)
    assert usage["lastTurn"]["calls"] == 1
    # The JSON export carries every call.
    exported = export_json(store, conversation.id)
    assert len(exported["modelCalls"]) == 30
    assert exported["modelCalls"][0]["cacheReadTokens"] == calls[0].cache_read_tokens


async def test_the_summary_is_a_breakpoint_after_a_fold(
    server: FakeProviderServer, store: Store
) -> None:
    service = make_service(server, store, 8192, prepare_threshold=0.95)
    conversation = store.create_conversation(model=MODEL["anthropic"], system_prompt=SYSTEM)
    # Enough turns that the fold frees room beside the person's words it keeps.
    for turn in range(8):
        await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 60))
    handle = await service.start_compaction(conversation.id, None)
    assert [e async for e in handle.events() if e.name == "compaction.completed"]
    server.reset()
    await run(service, conversation.id, "After the fold. " + filler(9, 60))
    await run(service, conversation.id, "And again. " + filler(10, 60))

    first, second = chat_requests(server)
    for request in (first, second):
        summary = request.body["messages"][0]["content"]
        # The summary's block is marked even though it shares a turn with the next message.
        assert summary[0]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in summary[-1] or len(summary) == 1
        assert breakpoints(request.body) == 3
    # The second request reads at least the summary's prefix back.
    assert second.usage.cache_read_tokens > 0
    assert second.usage.cache_read_tokens >= first.usage.cache_creation_tokens


async def test_unpriced_models_show_tokens_only(server: FakeProviderServer, store: Store) -> None:
    service = make_service(server, store, 200_000)
    conversation = store.create_conversation(model=UNPRICED)
    await run(service, conversation.id, "Hello there.")
    stats = service.context(conversation.id, include_messages=False).model_dump()
    assert stats["usage"]["priced"] is False
    assert stats["usage"]["total"]["cost"] is None
    assert stats["usage"]["total"]["calls"] == 1
    assert stats["usage"]["total"]["inputTokens"] > 0
