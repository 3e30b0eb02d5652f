"""FakeProviderServer behaviour common to both wires: responders, records, failures."""

from __future__ import annotations

import json
import socket
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from foldline.core.messages import assistant, user
from foldline.providers.base import ModelRequest, ProviderError
from foldline.testing import (
    MALFORMED_SUMMARY,
    SUMMARY_HEADINGS,
    FakeProviderServer,
    ModelLimits,
    Reply,
    ScriptedModel,
    Wire,
    encode_request,
    text_step,
)

BIG = "big-model"  # conftest: 100,000-token window, 8,192 output tokens
WIRES: tuple[Wire, ...] = ("anthropic", "openai")
PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}


async def _post(server: FakeProviderServer, wire: Wire, body: dict[str, Any]) -> httpx2.Response:
    async with httpx2.AsyncClient() as client:
        return await client.post(server.url + PATHS[wire], json=body)


def _chat(text: str = "hello", *, system: str = "You help.") -> ModelRequest:
    return ModelRequest(model=BIG, system=system, messages=[user(text)], max_output_tokens=100)


def _summary_request() -> ModelRequest:
    return ModelRequest(
        model=BIG,
        system="Summarize the conversation for a fresh context.",
        messages=[user("My name is Ada."), assistant("Noted."), user("Summarize now.")],
        max_output_tokens=2000,
    )


def _text_of(wire: Wire, response: httpx2.Response) -> str:
    data = response.json()
    if wire == "anthropic":
        return "".join(b["text"] for b in data["content"] if b["type"] == "text")
    return data["choices"][0]["message"]["content"] or ""


@pytest.mark.parametrize("wire", WIRES)
async def test_scripted_responder_receives_the_engine_request_back(
    fake: FakeProviderServer, wire: Wire
) -> None:
    request = ModelRequest(
        model=BIG,
        system="You help.",
        messages=[user("first"), assistant("second"), user("third")],
        max_output_tokens=100,
    )
    fake.script.add("answer")
    response = await _post(fake, wire, encode_request(request, wire, stream=False))
    assert response.status_code == 200
    assert _text_of(wire, response) == "answer"
    assert fake.script.calls == [request]
    record = fake.requests[-1]
    assert (record.wire, record.path, record.status, record.completed) == (
        wire,
        PATHS[wire],
        200,
        True,
    )
    assert record.model_request == request


@pytest.mark.parametrize("wire", WIRES)
async def test_callable_responder_gets_the_raw_body_and_wire(
    fake: FakeProviderServer, wire: Wire
) -> None:
    seen: list[tuple[str, Wire]] = []

    def responder(body: dict[str, Any], seen_wire: Wire) -> str:
        seen.append((body["model"], seen_wire))
        return f"{seen_wire} says hi"

    fake.responder = responder
    response = await _post(fake, wire, encode_request(_chat(), wire, stream=False))
    assert _text_of(wire, response) == f"{wire} says hi"
    assert seen == [(BIG, wire)]


async def test_a_responder_bug_is_a_500_that_names_it(fake: FakeProviderServer) -> None:
    def broken(body: dict[str, Any], wire: Wire) -> str:
        raise KeyError("missing")

    fake.responder = broken
    response = await _post(fake, "anthropic", encode_request(_chat(), "anthropic", stream=False))
    assert response.status_code == 500
    assert response.json()["error"] == {
        "type": "api_error",
        "message": "responder raised KeyError('missing')",
    }
    assert [type(e) for e in fake.errors] == [KeyError]
    with pytest.raises(AssertionError, match="KeyError"):
        fake.assert_no_errors()


@pytest.mark.parametrize("wire", WIRES)
async def test_scripted_provider_errors_become_the_wires_errors(
    fake: FakeProviderServer, wire: Wire
) -> None:
    fake.script.add(
        ProviderError("rate_limited", "later", retry_after=3),
        ProviderError("context_overflow", "too long"),
    )
    body = encode_request(_chat(), wire, stream=False)
    limited = await _post(fake, wire, body)
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "3")
    overflow = await _post(fake, wire, body)
    assert overflow.status_code == 400
    message = overflow.json()["error"]["message"]
    # The request fits the window, so the count reported is just over it.
    if wire == "anthropic":
        assert message == "prompt is too long: 100001 tokens > 100000 maximum"
    else:
        assert "maximum context length is 100000 tokens" in message
        assert overflow.json()["error"]["code"] == "context_length_exceeded"


@pytest.mark.parametrize("wire", WIRES)
async def test_summary_failures_wait_for_a_summary_request(
    fake: FakeProviderServer, wire: Wire
) -> None:
    fake.fail_next("empty_summary")
    fake.fail_next("malformed_summary")
    chat = await _post(fake, wire, encode_request(_chat("hi"), wire, stream=False))
    assert _text_of(wire, chat) == "echo: hi"
    assert len(fake.pending_failures) == 2

    summary_body = encode_request(_summary_request(), wire, stream=False)
    empty = await _post(fake, wire, summary_body)
    assert _text_of(wire, empty) == ""
    malformed = await _post(fake, wire, summary_body)
    assert _text_of(wire, malformed) == MALFORMED_SUMMARY
    good = await _post(fake, wire, summary_body)
    summary = _text_of(wire, good)
    assert all(f"## {h}" in summary for h in SUMMARY_HEADINGS)
    assert "My name is Ada." in summary
    assert [r.is_summary for r in fake.requests] == [False, True, True, True]
    assert [r.failure for r in fake.requests] == [
        None,
        "empty_summary",
        "malformed_summary",
        None,
    ]


async def test_failures_can_repeat_and_target_one_wire(fake: FakeProviderServer) -> None:
    fake.fail_next("server_error", times=2, wire="openai")
    anthropic_ok = await _post(
        fake, "anthropic", encode_request(_chat(), "anthropic", stream=False)
    )
    assert anthropic_ok.status_code == 200
    statuses = [
        (await _post(fake, "openai", encode_request(_chat(), "openai", stream=False))).status_code
        for _ in range(3)
    ]
    assert statuses == [500, 500, 200]


@pytest.mark.parametrize("wire", WIRES)
async def test_reply_longer_than_max_tokens_is_cut(fake: FakeProviderServer, wire: Wire) -> None:
    fake.script.add(Reply(text="word " * 200))
    request = ModelRequest(model=BIG, system="", messages=[user("talk")], max_output_tokens=10)
    response = await _post(fake, wire, encode_request(request, wire, stream=False))
    data = response.json()
    if wire == "anthropic":
        assert data["stop_reason"] == "max_tokens"
        assert data["usage"]["output_tokens"] <= 10
    else:
        assert data["choices"][0]["finish_reason"] == "length"
        assert data["usage"]["completion_tokens"] <= 10
    assert 0 < len(_text_of(wire, response)) <= 33


async def test_invalid_json_is_a_400(fake: FakeProviderServer) -> None:
    async with httpx2.AsyncClient() as client:
        response = await client.post(fake.url + "/v1/messages", content=b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert fake.requests[-1].body is None


async def test_usage_sums_to_the_prompt_count_over_a_growing_conversation(
    fake: FakeProviderServer,
) -> None:
    """As a long session would see it: cache fields grow, the sum is always the prompt."""
    client = anthropic.AsyncAnthropic(base_url=fake.anthropic_url, api_key="k", max_retries=0)
    system = [
        {"type": "text", "text": "Rules. " * 800, "cache_control": {"type": "ephemeral"}},
    ]
    messages: list[Any] = []
    for turn in range(4):
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"turn {turn}", "cache_control": {"type": "ephemeral"}}
                ],
            }
        )
        message = await client.messages.create(
            model=BIG, max_tokens=50, system=system, messages=messages
        )
        usage = message.usage
        total = usage.input_tokens + (usage.cache_read_input_tokens or 0)
        total += usage.cache_creation_input_tokens or 0
        assert total == fake.requests[-1].input_tokens
        if turn > 0:
            assert (usage.cache_read_input_tokens or 0) > 0
        # Later turns must not carry the marker on old blocks, like a real client.
        messages[-1]["content"][0].pop("cache_control")
        messages.append({"role": "assistant", "content": message.content[0].text})  # type: ignore[union-attr]
    await client.close()


async def test_an_exhausted_script_is_a_500_that_assert_no_errors_reports(
    fake: FakeProviderServer,
) -> None:
    fake.responder = ScriptedModel("only one")
    body = encode_request(_chat(), "openai", stream=False)
    assert (await _post(fake, "openai", body)).status_code == 200
    fake.assert_no_errors()
    assert (await _post(fake, "openai", body)).status_code == 500
    with pytest.raises(AssertionError, match="ScriptExhausted"):
        fake.assert_no_errors()


def test_reset_forgets_requests_and_failures(fake: FakeProviderServer) -> None:
    fake.fail_next("auth")
    with httpx2.Client() as client:
        client.post(fake.url + "/v1/messages", json=encode_request(_chat(), "anthropic"))
    assert len(fake.requests) == 1
    fake.fail_next("auth")
    fake.reset()
    assert fake.requests == [] and fake.pending_failures == []


def test_fail_next_rejects_zero_times(fake: FakeProviderServer) -> None:
    with pytest.raises(ValueError):
        fake.fail_next("auth", times=0)


async def test_default_server_echoes_and_uses_default_limits() -> None:
    with FakeProviderServer(models={"tiny": ModelLimits(50, 10)}) as server:
        client = openai.AsyncOpenAI(base_url=server.openai_url, api_key="k", max_retries=0)
        completion = await client.chat.completions.create(
            model="anything", messages=[{"role": "user", "content": "ping"}]
        )
        assert completion.choices[0].message.content == "echo: ping"
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(
                model="tiny", messages=[{"role": "user", "content": "x" * 400}]
            )
        await client.close()
        assert isinstance(server.script, ScriptedModel)


def test_stop_ends_the_thread_and_frees_the_port() -> None:
    server = FakeProviderServer(ScriptedModel(text_step("hi"))).start()
    port = server.port
    assert server.running
    server.stop()
    assert not server.running
    server.stop()  # idempotent
    with socket.socket() as probe, pytest.raises(OSError):
        probe.settimeout(1)
        probe.connect(("127.0.0.1", port))


def test_a_slow_stream_does_not_keep_the_server_alive() -> None:
    """stop() returns even while a client is in the middle of a very slow stream."""
    server = FakeProviderServer(ScriptedModel(text_step("x" * 400, chunk_chars=1))).start()
    server.fail_next("slow", delay=0.5)
    with httpx2.Client() as client:
        body = encode_request(_chat(), "openai", stream=True)
        with client.stream("POST", server.openai_url + "/chat/completions", json=body) as response:
            first = next(response.iter_lines())
            assert json.loads(first.removeprefix("data: "))["object"] == "chat.completion.chunk"
            server.stop()
    assert not server.running
    assert server.requests[-1].completed is False
