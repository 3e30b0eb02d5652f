"""Long conversations on small local windows, with no `[models]` entry: the chat service
with its real openai SDK against the fake server speaking as llama.cpp,
llama-cpp-python, Ollama, LM Studio and vLLM (`foldline.testing.local_servers`).

Each session learns the window from the server, folds many times, and never fails a
turn; the opening fact is in every request the model reads; Foldline's count of each
request is within 3% of the server's own from the second turn; a single-slot server
never serves a summary and a turn at once."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from fake_sessions import FACT, SERVICES, fact_keeping_summary, filler

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.providers.base import ModelRequest
from foldline.providers.listing import ModelDirectory
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel
from foldline.testing.local_servers import (
    LocalPersonality,
    llama_cpp,
    llama_cpp_python,
    lm_studio,
    ollama,
    vllm,
)

MODEL = "smollm2"
WINDOW = 2048


def local_config(server: FakeProviderServer) -> object:
    # No [models] table: everything about the model comes from the server.
    return parse_config(f"""
[defaults]
model = "{MODEL}"

[providers.local]
kind = "openai-compatible"
base_url = "{server.openai_url}"

[compaction]
auto_title = false
# On a 2k window a tenth of the budget holds one folded message of the person's: a fifth
# keeps the opening one too (the summary's middle is cut to fit such a window).
person_words_share = 0.2
""")


def answering_model() -> ScriptedModel:
    return ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(1, 60)),
        summaries=fact_keeping_summary,
    )


def chat_requests(server: FakeProviderServer) -> list:
    """The turns' requests (not summaries, nor the one-token warm-ups of a fold's view)."""
    return [
        r for r in server.requests if not r.is_summary and r.body is not None and not warm_up(r)
    ]


def warm_up(record) -> bool:  # type: ignore[no-untyped-def]
    return record.body is not None and record.body.get("max_tokens") == 1


async def run(service: ChatService, conversation_id: str, text: str) -> list[ChatEvent]:
    handle = await service.start_turn(conversation_id, text)
    return [event async for event in handle.events()]


def last_stats_before_call(events: list[ChatEvent]) -> int:
    """Foldline's count of the request it sent last in the turn."""
    stats = [e.body for e in events if e.name == "context.stats"]
    # The turn's events end with the stats after the answer; the one before is the count
    # of the call's request.
    return stats[-2].tokens


@pytest.mark.parametrize(
    ("personality", "turns"),
    [
        # 60 turns on the server the real session was run against; 25 (three folds and
        # more, the same window) show every other server's behaviour.
        (llama_cpp(WINDOW), 25),
        (llama_cpp_python(WINDOW), 60),
        (ollama(WINDOW), 25),
        (lm_studio(WINDOW), 25),
        (vllm(WINDOW), 25),
    ],
    ids=["llama.cpp", "llama-cpp-python", "ollama", "lm-studio", "vllm"],
)
async def test_a_long_conversation_on_a_small_local_window(
    personality: LocalPersonality, turns: int, store: Store, tmp_path: Path
) -> None:
    model = answering_model()
    limits = {MODEL: ModelLimits(context_window=0, max_output_tokens=100_000)}
    with FakeProviderServer(model, models=limits, personality=personality) as server:
        directory = ModelDirectory()
        service = ChatService(store, lambda: local_config(server), listing=directory)
        service.local_servers.grace = 0.05
        SERVICES.append(service)
        conversation = store.create_conversation(title="local")
        failures: list[str] = []
        counts: list[tuple[int, int]] = []
        summaries: list[int] = []
        """Summary requests the server had served when each turn's request was sent."""
        folded_in_turn: list[int] = []
        for n in range(turns):
            text = FACT if n == 0 else filler(n, 15)
            before = len(chat_requests(server))
            events = await run(service, conversation.id, text)
            failures += [e.body.message for e in events if e.name == "error"]
            if any(e.name == "compaction.completed" for e in events):
                folded_in_turn.append(n)
            sent = chat_requests(server)[before:]
            assert len(sent) == 1, f"turn {n}: {len(sent)} chat requests (a retry?)"
            counts.append((last_stats_before_call(events), sent[0].input_tokens))
            summaries.append(sum(r.is_summary for r in server.requests))
            await service.background.wait(conversation.id)

        assert failures == []
        # The window is the server's word (llama-cpp-python tells none: its default,
        # which is also the fallback).
        listed = directory.find("local", MODEL)
        assert listed is not None and listed.server == personality.kind
        stats = events[-2].body
        assert stats.context_window == WINDOW
        if personality.kind != "llama-cpp-python":
            assert stats.model_known and listed.window_source
        # Folded many times, and every request the model read holds the opening fact.
        assert sum(r.is_summary for r in server.requests) >= 3
        assert personality.overflows == 0
        for record in chat_requests(server):
            assert "PINEAPPLE-42" in record.raw.decode()
        # Foldline's count is the server's, within 3%, from the second turn on. A server
        # with no tokenize endpoint (Ollama, LM Studio) reports its count only after each
        # answer: the first request after a fold is Foldline's estimate alone, within 10%.
        counts_itself = personality.kind in ("llama.cpp", "llama-cpp-python", "vllm")
        for n in range(1, len(counts)):
            ours, theirs = counts[n]
            # A fold came between the two requests (the recall tools it adds may make the
            # first request after it no smaller than the one before).
            folded = summaries[n] > summaries[n - 1] or theirs < counts[n - 1][1]
            margin = 0.03 if counts_itself or not folded else 0.10
            assert abs(ours - theirs) <= margin * theirs, f"turn {n}: {ours} vs {theirs}"
        if personality.counts_template:
            # Each summary is asked after the view the last turn left in the server's
            # prompt cache: the server evaluates the question and the newest messages,
            # not the folded text again (nor, after it, the whole view for the next turn).
            asked = [r for r in server.requests if r.is_summary and r.input_tokens]
            assert asked and all(r.prompt_evaluated is not None for r in asked)
            assert all(r.prompt_evaluated < r.input_tokens / 2 for r in asked), [
                (r.prompt_evaluated, r.input_tokens) for r in asked
            ]
        if personality.counts_template and personality.slots == 1:
            # Folds landed in the pauses, and the server evaluated the view each left
            # there (a one-token warm-up): the next turn read it from the prompt cache.
            served = [r for r in server.requests if r.body is not None and r.input_tokens]
            after_warm_up = [
                later for earlier, later in itertools.pairwise(served) if warm_up(earlier)
            ]
            assert after_warm_up, "no fold's view was evaluated in a pause"
            # Every fold landed in a pause, none in a turn: a prepared fold is landed at
            # the end of the turn that brings the view to where the next turn's gate
            # would commit it (that turn would otherwise wait for the server to evaluate
            # the folded view, about 10 s on a small machine).
            assert folded_in_turn == []
            for record in after_warm_up:
                assert record.prompt_evaluated < record.input_tokens / 2
        # A single slot: a summary and a turn were never served at once, none was cut.
        assert personality.interrupted == 0
        if personality.slots == 1:
            assert personality.most_at_once == 1


async def test_a_stated_window_is_learned_at_first_use(store: Store, tmp_path: Path) -> None:
    """A server first seen when a conversation uses it: the first turn's budget is
    already its window, with its source."""
    with FakeProviderServer(
        answering_model(),
        models={MODEL: ModelLimits(context_window=0, max_output_tokens=100_000)},
        personality=llama_cpp(3072, slots=4),
    ) as server:
        directory = ModelDirectory()
        service = ChatService(store, lambda: local_config(server), listing=directory)
        SERVICES.append(service)
        conversation = store.create_conversation(title="first")
        events = await run(service, conversation.id, "Hello there.")
        stats = next(e.body for e in events if e.name == "context.stats")
    assert stats.context_window == 3072 and stats.model_known
    listed = directory.find("local", MODEL)
    assert listed is not None
    assert (listed.window_source, listed.slots, listed.tokenizer) == (
        "llama.cpp /props n_ctx",
        4,
        "llama.cpp",
    )
    assert listed.learned_at is not None


async def test_an_empty_stream_folds_and_retries_once(store: Store, tmp_path: Path) -> None:
    """llama-cpp-python answers a streamed prompt over its window with an empty stream:
    Foldline folds and sends again, and the turn is answered."""
    personality = llama_cpp_python(4096)
    with FakeProviderServer(
        answering_model(),
        models={MODEL: ModelLimits(context_window=0, max_output_tokens=100_000)},
        personality=personality,
    ) as server:
        config = parse_config(f"""
[defaults]
model = "{MODEL}"

[providers.local]
kind = "openai-compatible"
base_url = "{server.openai_url}"

[models."{MODEL}"]
context_window = 8000

[compaction]
auto_title = false
""")
        service = ChatService(store, lambda: config, listing=ModelDirectory())
        SERVICES.append(service)
        conversation = store.create_conversation(title="too big")
        # The person's window is a little over the server's: the conversation grows past
        # the real one before Foldline's own threshold.
        for n in range(24):
            events = await run(service, conversation.id, FACT if n == 0 else filler(n, 150))
            await service.background.wait(conversation.id)
            errors = [e.body.message for e in events if e.name == "error"]
            if personality.overflows:
                break
        chat = chat_requests(server)
    # One chat request over the window, answered with nothing; the fold, and the same turn
    # sent again, which fits. (The summaries over the window shrank their input too.)
    assert [r.input_tokens >= 4096 for r in chat[-2:]] == [True, False]
    assert sum(r.input_tokens >= 4096 for r in chat) == 1
    assert errors == []
    assert any(e.name == "compaction.completed" for e in events)


async def test_a_server_that_refuses_tools_gets_the_turn_again_without_them(
    store: Store, tmp_path: Path
) -> None:
    personality = ollama(WINDOW)
    personality.refuses_tools = True

    def is_summary(request: ModelRequest) -> bool:
        # A chat turn sent without tools is still a chat turn (its system prompt is the
        # chat's), not a summary request.
        return "a chat app for long conversations" not in request.system

    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted."),
        summaries=fact_keeping_summary,
        is_summary=is_summary,
    )
    with FakeProviderServer(
        model,
        models={MODEL: ModelLimits(context_window=0, max_output_tokens=100_000)},
        personality=personality,
        is_summary=is_summary,
    ) as server:
        directory = ModelDirectory()
        service = ChatService(store, lambda: local_config(server), listing=directory)
        SERVICES.append(service)
        conversation = store.create_conversation(title="no tools")
        first = await run(service, conversation.id, "Hello there.")
        second = await run(service, conversation.id, "And again.")
        sent = chat_requests(server)
    assert [e for e in first + second if e.name == "error"] == []
    # Refused once with tools, sent again without; the next turn goes without at once.
    assert [bool(r.body.get("tools")) for r in sent] == [True, False, False]
    assert [r.status for r in sent] == [400, 200, 200]
    listed = directory.find("local", MODEL)
    assert listed is not None and listed.refuses_tools


async def test_a_fold_the_person_waits_for_is_never_held_back_behind_its_own_turn(
    store: Store, tmp_path: Path
) -> None:
    """A fold made in a turn's own task (here the Fold button) is that turn's request: on
    a one-request server its summary goes at once. Background requests hold back while
    a turn may call again (`grace`, here an hour); were the fold's summary taken for one,
    it would wait behind the very turn that waits for it."""
    with FakeProviderServer(
        answering_model(),
        models={MODEL: ModelLimits(context_window=0, max_output_tokens=100_000)},
        personality=llama_cpp_python(WINDOW),
    ) as server:
        service = ChatService(store, lambda: local_config(server), listing=ModelDirectory())
        service.local_servers.grace = 3600.0
        SERVICES.append(service)
        conversation = store.create_conversation(title="fold now")
        for n in range(4):
            await run(service, conversation.id, FACT if n == 0 else filler(n, 30))
            await service.background.wait(conversation.id)
        handle = await service.start_compaction(conversation.id, None)
        events = await asyncio.wait_for(_all(handle), timeout=60)
    completed = [e for e in events if e.name == "compaction.completed"]
    assert completed and completed[0].body.strategy != "emergency"
    assert [r for r in server.requests if r.is_summary]


async def _all(handle) -> list[ChatEvent]:  # type: ignore[no-untyped-def]
    return [event async for event in handle.events()]


async def test_a_refused_summary_on_a_one_request_server_lands_as_a_prepared_digest(
    store: Store, tmp_path: Path
) -> None:
    """A small local model's summary that invents what it never read is refused; the
    digest stands for it. Prepared in the pause, that digest lands with no model call in
    the person's turn, and it is not re-summarized on its own (a request that would
    evaluate the whole folded text again): the next fold's summary, asked after the
    view, merges it."""
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(1, 60)),
        summaries=lambda request: "The Drugnabels-Fantasie festival opens in Vienna on 3 May.",
    )
    limits = {MODEL: ModelLimits(context_window=0, max_output_tokens=100_000)}
    with FakeProviderServer(model, models=limits, personality=llama_cpp_python(WINDOW)) as server:
        service = ChatService(store, lambda: local_config(server), listing=ModelDirectory())
        service.local_servers.grace = 0.05
        SERVICES.append(service)
        conversation = store.create_conversation(title="refused")
        started: list[bool] = []
        for n in range(25):
            events = await run(service, conversation.id, FACT if n == 0 else filler(n, 15))
            assert not [e for e in events if e.name == "error"]
            started += [e.body.prepared for e in events if e.name == "compaction.started"]
            await service.background.wait(conversation.id)
        folds = store.list_compactions(conversation.id)
    assert len(folds) >= 2 and all(record.state.degraded for record in folds)
    # Every fold landed prepared, in a pause (or in a turn, prepared): no turn asked the
    # model for a summary in line.
    assert all(started)
    assert len(folds) > len(started)  # some landed in the pauses
    # Every summary request was the one after the view: no re-summary of its own.
    asked = [r for r in server.requests if r.is_summary]
    assert asked and all(r.prompt_evaluated < r.input_tokens / 2 for r in asked)
