"""ScriptedModel: the in-process fake Provider."""

from __future__ import annotations

import pytest

from foldline.core.messages import ToolSpec, assistant, user
from foldline.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    Stop,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from foldline.testing import (
    SUMMARY_HEADINGS,
    FakeTokenizer,
    Reply,
    ScriptedModel,
    ScriptExhausted,
    call,
    error_step,
    structured_summary,
    text_step,
    tool_step,
    usage_step,
)


def _request(text: str = "hello", *, system: str = "You help.", tools: bool = True) -> ModelRequest:
    specs = [ToolSpec(name="read_file", description="Read a file")] if tools else []
    return ModelRequest(model="m", system=system, messages=[user(text)], tools=specs)


async def _run(model: ScriptedModel, request: ModelRequest) -> list[ProviderEvent]:
    return [event async for event in model.stream(request)]


def test_is_a_provider() -> None:
    model = ScriptedModel(wire="anthropic")
    assert isinstance(model, Provider)
    assert (model.name, model.wire) == ("scripted", "anthropic")
    assert ScriptedModel().wire == "openai"


async def test_streams_text_in_chunks_then_usage_then_stop() -> None:
    model = ScriptedModel(text_step("abcdefghij", chunk_chars=4))
    request = _request()
    events = await _run(model, request)

    assert events[:3] == [TextDelta("abcd"), TextDelta("efgh"), TextDelta("ij")]
    usage, stop = events[3:]
    assert isinstance(usage, Usage)
    assert usage.input_tokens == FakeTokenizer().count_model_request(request, "openai")
    assert usage.output_tokens == FakeTokenizer().count_text("abcdefghij")
    assert stop == Stop(reason="end_turn", raw="end_turn")
    assert model.calls == [request]


async def test_the_wire_decides_how_input_is_counted() -> None:
    request = _request()
    counts = {}
    for wire in ("openai", "anthropic"):
        events = await _run(ScriptedModel("hi", wire=wire), request)
        usage = next(e for e in events if isinstance(e, Usage))
        counts[wire] = usage.input_tokens
        assert usage.input_tokens == FakeTokenizer().count_model_request(request, wire)
    # Anthropic bills a hidden tool preamble, so the same request counts differently.
    assert counts["anthropic"] != counts["openai"]


async def test_tool_calls_get_ids_and_the_tool_use_stop_reason() -> None:
    model = ScriptedModel(
        tool_step(call("read_file", {"path": "a"}), call("read_file", {"path": "b"}), text="Both."),
        tool_step(call("grep", {"q": "x"}, id="fixed-id")),
    )
    first = await _run(model, _request())
    calls = [e for e in first if isinstance(e, ToolCallEvent)]
    assert [c.input for c in calls] == [{"path": "a"}, {"path": "b"}]
    assert calls[0].id and calls[0].id != calls[1].id
    assert first[0] == TextDelta("Both.")
    assert first[-1] == Stop(reason="tool_use", raw="tool_use")

    second = await _run(model, _request())
    (scripted_id,) = [e.id for e in second if isinstance(e, ToolCallEvent)]
    assert scripted_id == "fixed-id"


async def test_reasoning_comes_first_with_its_signature() -> None:
    model = ScriptedModel(Reply(reasoning="think", text="answer", reasoning_signature="sig"))
    events = await _run(model, _request())
    assert events[:3] == [
        ReasoningDelta("think"),
        ReasoningDelta("", signature="sig"),
        TextDelta("answer"),
    ]


async def test_explicit_usage_and_stop_are_reported_as_scripted() -> None:
    scripted = Usage(input_tokens=10, output_tokens=2, cache_read_tokens=90)
    model = ScriptedModel(usage_step("hi", scripted), Reply(text="cut", stop="max_tokens"))
    first = await _run(model, _request())
    assert scripted in first
    second = await _run(model, _request())
    assert second[-1] == Stop(reason="max_tokens", raw="max_tokens")


async def test_an_exception_step_raises_before_any_event() -> None:
    model = ScriptedModel(ProviderError("rate_limited", "slow down", retry_after=2.0))
    received: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as caught:
        async for event in model.stream(_request()):
            received.append(event)
    assert received == []
    assert (caught.value.code, caught.value.retry_after) == ("rate_limited", 2.0)
    assert len(model.calls) == 1


async def test_error_step_streams_its_text_then_raises() -> None:
    model = ScriptedModel(error_step(ProviderError("unavailable", "gone"), after_text="Partial"))
    received: list[ProviderEvent] = []
    with pytest.raises(ProviderError):
        async for event in model.stream(_request()):
            received.append(event)
    assert received == [TextDelta("Partial")]


async def test_dynamic_steps_see_the_request() -> None:
    def answer(request: ModelRequest) -> str:
        return f"you said {request.messages[-1].text!r} with {len(request.tools)} tool(s)"

    model = ScriptedModel(answer)
    events = await _run(model, _request("ping"))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "you said 'ping' with 1 tool(s)"


async def test_empty_script_raises_script_exhausted_by_default() -> None:
    model = ScriptedModel("only answer")
    await _run(model, _request())
    with pytest.raises(ScriptExhausted, match="call 2"):
        await _run(model, _request())


async def test_empty_script_can_echo_or_call_a_function() -> None:
    echo = ScriptedModel(when_empty="echo")
    events = await _run(echo, _request("are you there?"))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "echo: are you there?"

    counted = ScriptedModel(when_empty=lambda request: f"call {len(request.messages)}")
    events = await _run(counted, _request())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "call 1"


async def test_assert_complete_fails_while_steps_remain() -> None:
    model = ScriptedModel("first", tool_step(call("read_file")), ProviderError("auth", "no"))
    with pytest.raises(AssertionError, match=r"3 scripted step\(s\) never used after 0 call"):
        model.assert_complete()
    await _run(model, _request())
    with pytest.raises(AssertionError, match="tool calls read_file, error"):
        model.assert_complete()
    await _run(model, _request())
    with pytest.raises(ProviderError):
        await _run(model, _request())
    model.assert_complete()
    assert model.remaining == 0


async def test_summaries_are_answered_without_consuming_the_script() -> None:
    model = ScriptedModel("chat answer", summaries=structured_summary)
    summary_request = ModelRequest(
        model="m",
        system="Summarize the conversation below.",
        messages=[user("My name is Ada."), assistant("Hello Ada.")],
    )
    events = await _run(model, summary_request)
    summary = "".join(e.text for e in events if isinstance(e, TextDelta))
    for heading in SUMMARY_HEADINGS:
        assert f"## {heading}" in summary
    assert "My name is Ada." in summary
    assert model.remaining == 1
    assert model.summary_calls == [summary_request]

    # A request with tools is not a summary, even if the system prompt says "summary".
    events = await _run(model, _request(system="Offer summaries when asked."))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "chat answer"
    model.assert_complete()


async def test_custom_summary_predicate_and_canned_summary() -> None:
    model = ScriptedModel(
        summaries="CANNED", is_summary=lambda r: r.system == "FOLD", when_empty="echo"
    )
    fold = ModelRequest(model="m", system="FOLD", messages=[user("x")])
    events = await _run(model, fold)
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("CANNED")]
    other = ModelRequest(model="m", system="Summarize", messages=[user("x")])
    events = await _run(model, other)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "echo: x"


async def test_structured_summary_stays_bounded_and_keeps_the_head() -> None:
    long_history = [user(f"fact {i}: " + "detail " * 50) for i in range(40)]
    request = ModelRequest(model="m", system="Summarize.", messages=long_history)
    summary = structured_summary(request)
    assert "fact 0:" in summary
    assert "fact 39:" in summary
    assert len(summary) < 1200 + 600 + 400


def test_reset_clears_calls_and_replaces_the_queue() -> None:
    model = ScriptedModel("a", "b")
    model.calls.append(_request())
    model.reset("c")
    assert model.calls == []
    assert model.remaining == 1
    assert model.add("d", "e") is model
    assert model.remaining == 3


def test_reply_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        Reply(text="x", chunk_chars=0)
    with pytest.raises(ValueError):
        tool_step()
