"""Local servers through the real openai SDK, against the fake server's personalities
(llama.cpp, llama-cpp-python, Ollama, LM Studio, vLLM): what each says about itself,
how each answers an overflow, a stream cut by another request, and counts taken with
the server's own tokenizer."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest

from foldline.config import parse_config
from foldline.core.messages import Message, TextPart
from foldline.core.wire import to_openai_messages
from foldline.providers.base import ModelRequest, ProviderError, StreamEndedEarly, TextDelta
from foldline.providers.compat import OpenAICompatibleProvider, discover_server
from foldline.providers.discovery import refresh_provider
from foldline.providers.errors import provider_error
from foldline.providers.listing import ListedModel, ModelDirectory
from foldline.providers.openai import CUT_STREAM_MESSAGE
from foldline.providers.registry import resolve_model
from foldline.providers.server_tokens import count_chat
from foldline.server.routes.models import available_models
from foldline.testing import FakeProviderServer
from foldline.testing.local_servers import (
    LocalPersonality,
    llama_cpp,
    llama_cpp_python,
    lm_studio,
    ollama,
    vllm,
)
from foldline.testing.steps import Reply
from foldline.testing.validation import ModelLimits
from foldline.token_cli import BodyError, count_with_local_server

MODEL = "smollm2"
LIMITS = {MODEL: ModelLimits(context_window=0, max_output_tokens=100_000)}


def serve(personality: LocalPersonality, **options: object) -> FakeProviderServer:
    return FakeProviderServer(models=LIMITS, personality=personality, **options)  # type: ignore[arg-type]


def request(text: str, max_output: int = 64) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        system="You are brief.",
        messages=[Message(role="user", parts=[TextPart(text=text)])],
        max_output_tokens=max_output,
    )


async def collect(provider: OpenAICompatibleProvider, req: ModelRequest) -> list[object]:
    try:
        return [event async for event in provider.stream(req)]
    finally:
        await provider.aclose()


# --- what each server says -----------------------------------------------------------


@pytest.mark.parametrize(
    ("personality", "server", "window", "source", "slots", "tokenizer"),
    [
        (llama_cpp(4096, slots=2), "llama.cpp", 4096, "llama.cpp /props n_ctx", 2, "llama.cpp"),
        (llama_cpp_python(2048), "llama-cpp-python", None, None, 1, "llama-cpp-python"),
        (ollama(8192), "ollama", 8192, "Ollama /api/ps context_length", None, None),
        (
            ollama(8192, loaded=False),
            "ollama",
            8192,
            "Ollama /api/show num_ctx",
            None,
            None,
        ),
        (
            lm_studio(4096, 32768),
            "lm-studio",
            4096,
            "LM Studio /api/v0/models loaded_context_length",
            None,
            None,
        ),
        (vllm(16384), "vllm", 16384, "vLLM /v1/models max_model_len", None, "vllm"),
    ],
)
async def test_each_server_says_what_it_is(
    personality: LocalPersonality,
    server: str,
    window: int | None,
    source: str | None,
    slots: int | None,
    tokenizer: str | None,
) -> None:
    with serve(personality) as fake:
        facts = await discover_server(fake.openai_url, MODEL)
    assert facts is not None
    assert (facts.server, facts.context_window, facts.window_source) == (server, window, source)
    assert (facts.slots, facts.tokenizer) == (slots, tokenizer)
    # llama-cpp-python streams no usage and cuts a running request for a new one.
    assert facts.streams_usage is (server != "llama-cpp-python")
    assert facts.interrupts is (server == "llama-cpp-python")


async def test_ollama_not_loaded_without_num_ctx_gets_its_default_not_the_trained_length() -> None:
    personality = ollama(8192, trained=131_072, loaded=False)
    personality.num_ctx_set = False
    with serve(personality) as fake:
        facts = await discover_server(fake.openai_url, MODEL)
    assert facts is not None
    assert (facts.context_window, facts.max_context) == (4096, 131_072)
    assert facts.tools is True


async def test_nothing_listening_says_nothing() -> None:
    with serve(llama_cpp()) as fake:
        url = fake.openai_url
    assert await discover_server(url, MODEL) is None


# --- overflows, on every server --------------------------------------------------------

LONG = "word " * 3000  # about 4500 fake tokens: over every window below


@pytest.mark.parametrize(
    ("personality", "limit"),
    [
        (llama_cpp(2048), 2048),
        (vllm(2048), 2048),
        (ollama(2048), None),
        (lm_studio(2048), None),
    ],
)
async def test_an_overflow_is_recognised_on_every_server(
    personality: LocalPersonality, limit: int | None
) -> None:
    with serve(personality) as fake, pytest.raises(ProviderError) as caught:
        await collect(OpenAICompatibleProvider("local", None, fake.openai_url), request(LONG))
    assert caught.value.code == "context_overflow"
    assert caught.value.context_limit == limit
    assert personality.overflows == 1


async def test_llama_cpp_python_answers_a_streamed_overflow_with_an_empty_stream() -> None:
    personality = llama_cpp_python(2048)
    with serve(personality) as fake:
        with pytest.raises(StreamEndedEarly) as caught:
            await collect(OpenAICompatibleProvider("local", None, fake.openai_url), request(LONG))
        # The same request not streamed: a 400 that states the window.
        async with httpx2.AsyncClient() as client:
            answer = await client.post(
                f"{fake.openai_url}/chat/completions",
                json={"model": MODEL, "messages": [{"role": "user", "content": LONG}]},
            )
    assert caught.value.code == "context_overflow" and caught.value.empty
    assert answer.status_code == 400
    error = provider_error(400, answer.json(), None, "")
    assert (error.code, error.context_limit) == ("context_overflow", 2048)


def test_llama_cpp_overflow_fields_are_read_from_the_error_object() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5000,
            "n_ctx": 4096,
        }
    }
    error = provider_error(400, body, None, "")
    assert (error.code, error.prompt_tokens, error.context_limit) == (
        "context_overflow",
        5000,
        4096,
    )


async def test_a_stream_cut_by_another_request_is_named_so() -> None:
    """llama-cpp-python, interrupts on: a second request cuts the first one off with
    `[DONE]` and no finish reason; the first one's error says why."""
    personality = llama_cpp_python(2048)
    long_reply = Reply(text="A long answer " * 30, chunk_chars=4, delay=0.01)
    with serve(personality, responder=lambda body, wire: long_reply) as fake:
        first = OpenAICompatibleProvider("local", None, fake.openai_url)
        second = OpenAICompatibleProvider("local", None, fake.openai_url)
        started = asyncio.Event()

        async def reading() -> list[object]:
            events = []
            async for event in first.stream(request("first")):
                events.append(event)
                started.set()
            return events

        task = asyncio.ensure_future(reading())
        await started.wait()
        other = await collect(second, request("second"))
        with pytest.raises(StreamEndedEarly) as caught:
            await task
        await first.aclose()
    assert caught.value.code == "unavailable" and not caught.value.empty
    assert caught.value.message == CUT_STREAM_MESSAGE
    assert personality.interrupted == 1
    assert any(isinstance(event, TextDelta) for event in other)


# --- counts by the server's own tokenizer --------------------------------------------


@pytest.mark.parametrize(
    ("personality", "tokenizer"),
    [(llama_cpp(8192), "llama.cpp"), (vllm(8192), "vllm"), (llama_cpp_python(8192), None)],
)
async def test_the_server_counts_a_chat_as_it_bills_it(
    personality: LocalPersonality, tokenizer: str | None
) -> None:
    req = request("How many tokens is this question, exactly? " * 5)
    messages = to_openai_messages(req.system, req.messages)
    name = tokenizer or "llama-cpp-python"
    with serve(personality) as fake:
        async with httpx2.AsyncClient() as client:
            counted = await count_chat(client, fake.openai_url, name, MODEL, messages)
        provider = OpenAICompatibleProvider("local", None, fake.openai_url)
        await collect(provider, req)
        billed = fake.requests[-1].input_tokens
    assert counted == billed


async def test_llama_cpp_python_streams_no_usage() -> None:
    with serve(llama_cpp_python(8192)) as fake:
        events = await collect(
            OpenAICompatibleProvider("local", None, fake.openai_url), request("hi")
        )
        body = fake.requests[-1].body
    assert body is not None and body["stream_options"] == {"include_usage": True}
    assert not any(getattr(event, "kind", "") == "usage" for event in events)


# --- what was learned, kept and shown ------------------------------------------------


async def test_a_refreshed_local_provider_shows_each_model_with_its_source() -> None:
    """Adding a local server lists its models and asks it about each: Settings shows the
    window with where it was read, and the fallback never beats it."""
    with serve(llama_cpp(3072, slots=1)) as fake:
        config = parse_config(
            f'[providers.local]\nkind = "openai-compatible"\nbase_url = "{fake.openai_url}"\n'
        )
        directory = ModelDirectory()
        await refresh_provider(directory, config, "local", clock=lambda: 1_800_000_000.0)
    models = available_models(config, directory, 1_800_000_000.0).models
    shown = next(m for m in models if m.id == MODEL)
    assert (shown.context_window, shown.limit_source, shown.known) == (3072, "server", True)
    assert (shown.window_source, shown.server, shown.slots) == (
        "llama.cpp /props n_ctx",
        "llama.cpp",
        1,
    )
    assert shown.learned_at is not None
    # A new list (the next refresh) keeps what the server said.
    directory.record_success("local", "openai-compatible", [ListedModel(id=MODEL)], 1.0)
    kept = resolve_model(config, MODEL, listing=directory)
    assert (kept.context_window, kept.window_source) == (3072, "llama.cpp /props n_ctx")


def test_an_unknown_local_window_falls_back_to_the_smallest_common_one() -> None:
    config = parse_config(
        '[providers.local]\nkind = "openai-compatible"\nbase_url = "http://x/v1"\n'
    )
    resolved = resolve_model(config, "mystery", listing=ModelDirectory())
    assert (resolved.context_window, resolved.source, resolved.known) == (2048, "default", False)


@pytest.mark.parametrize(("effort", "sent"), [("high", "high"), ("max", "high"), ("off", None)])
async def test_an_explicit_effort_reaches_a_local_model_the_catalog_does_not_know(
    effort: str, sent: str | None
) -> None:
    """gpt-oss, Qwen3 or DeepSeek-R1 behind vLLM, Ollama or llama.cpp take
    `reasoning_effort` whatever they are called."""
    with serve(vllm(8192)) as fake:
        provider = OpenAICompatibleProvider("local", None, fake.openai_url)
        await collect(provider, replace(request("Think first."), reasoning_effort=effort))
        body = fake.requests[-1].body
    assert body is not None and body.get("reasoning_effort") == sent


@pytest.mark.parametrize(
    ("personality", "exact"),
    [(llama_cpp(8192), True), (vllm(8192), True), (llama_cpp_python(8192), False)],
)
def test_count_tokens_counts_a_local_model_through_its_server(
    personality: LocalPersonality, exact: bool, tmp_path: Path
) -> None:
    body = {"messages": [{"role": "user", "content": "How many tokens is this? " * 7}]}
    with serve(personality) as fake:
        (tmp_path / "config.toml").write_text(
            f'[providers.local]\nkind = "openai-compatible"\nbase_url = "{fake.openai_url}"\n',
            encoding="utf-8",
        )
        counted = count_with_local_server(MODEL, body, str(tmp_path))
    assert counted is not None and counted[1] is exact
    if personality.kind != "vllm":
        assert counted[0] == personality.prompt_tokens(
            {"messages": body["messages"]}, fake.tokenizer, 0
        )


def test_count_tokens_says_when_the_server_cannot_count(tmp_path: Path) -> None:
    with serve(ollama(8192)) as fake:
        (tmp_path / "config.toml").write_text(
            f'[providers.local]\nkind = "openai-compatible"\nbase_url = "{fake.openai_url}"\n',
            encoding="utf-8",
        )
        with pytest.raises(BodyError, match="cannot count tokens"):
            count_with_local_server(MODEL, {"messages": []}, str(tmp_path))
