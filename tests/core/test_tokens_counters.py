"""The TokenCounter implementations: additivity, and counting exactly what is sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.tokens import (
    ANTHROPIC_MESSAGE_TOKENS,
    AnthropicEstimateCounter,
    OpenAIChatCounter,
    ScaledCounter,
    TokenCounter,
    count_openai_chat_payload,
    estimate_anthropic_payload,
)
from foldline.core.wire import (
    to_anthropic_messages,
    to_anthropic_tools,
    to_openai_messages,
    to_openai_tools,
)
from foldline.tokenizers import get_encoder

CL100K = get_encoder("cl100k_base")
O200K = get_encoder("o200k_base")


def _cl100k_count(text: str) -> int:
    return len(CL100K.encode(text))


COUNTERS: dict[str, Callable[[], TokenCounter]] = {
    "openai-cl100k": lambda: OpenAIChatCounter(CL100K),
    "openai-o200k": lambda: OpenAIChatCounter(O200K),
    "anthropic": lambda: AnthropicEstimateCounter(_cl100k_count),
    "anthropic-scaled": lambda: ScaledCounter(AnthropicEstimateCounter(_cl100k_count), 1.37),
    "openai-scaled": lambda: ScaledCounter(OpenAIChatCounter(CL100K), 0.83),
}

# --- strategies ----------------------------------------------------------------------

texts = st.text(max_size=80)
names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,15}", fullmatch=True)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), texts)
json_inputs = st.dictionaries(names, json_scalars, max_size=4)

text_parts = st.builds(TextPart, text=texts)
reasoning_parts = st.builds(ReasoningPart, text=texts, signature=st.one_of(st.none(), names))
call_parts = st.builds(ToolCallPart, id=names, name=names, input=json_inputs)
result_parts = st.builds(
    ToolResultPart, call_id=names, name=names, output=texts, is_error=st.booleans()
)
attachment_parts = st.builds(
    AttachmentPart,
    name=names,
    media_type=st.sampled_from(["text/plain", "image/png"]),
    text=st.one_of(st.none(), texts),
)

messages = st.one_of(
    st.builds(
        Message,
        role=st.just("user"),
        parts=st.lists(st.one_of(text_parts, attachment_parts), max_size=3).map(tuple),
    ),
    st.builds(
        Message,
        role=st.just("assistant"),
        parts=st.lists(st.one_of(text_parts, reasoning_parts, call_parts), max_size=3).map(tuple),
    ),
    st.builds(Message, role=st.just("tool"), parts=st.lists(result_parts, max_size=3).map(tuple)),
)
tool_specs = st.builds(
    ToolSpec,
    name=names,
    description=texts,
    input_schema=st.fixed_dictionaries(
        {
            "type": st.just("object"),
            "properties": st.dictionaries(
                names,
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["string", "number", "boolean"])},
                    optional={"description": texts},
                ),
                max_size=3,
            ),
        }
    ),
)
conversations = st.lists(messages, max_size=8)
toolsets = st.lists(tool_specs, max_size=3)


@pytest.mark.parametrize("make_counter", COUNTERS.values(), ids=COUNTERS.keys())
@settings(max_examples=60, deadline=None)
@given(system=texts, history=conversations, tools=toolsets)
def test_request_is_base_plus_cached_message_counts(
    make_counter: Callable[[], TokenCounter],
    system: str,
    history: list[Message],
    tools: list[ToolSpec],
) -> None:
    counter = make_counter()
    whole = counter.count_request(system, history, tools)
    parts = counter.count_request(system, [], tools) + sum(
        counter.count_message(m) for m in history
    )
    assert whole == parts


@pytest.mark.parametrize("encoder", [CL100K, O200K], ids=["cl100k", "o200k"])
@settings(max_examples=60, deadline=None)
@given(system=texts, history=conversations, tools=toolsets)
def test_openai_counter_counts_the_wire_payload(
    encoder: Any, system: str, history: list[Message], tools: list[ToolSpec]
) -> None:
    counter = OpenAIChatCounter(encoder)
    sent = count_openai_chat_payload(
        encoder, to_openai_messages(system, history), to_openai_tools(tools)
    )
    assert counter.count_request(system, history, tools) == sent


@settings(max_examples=60, deadline=None)
@given(system=texts, history=conversations, tools=toolsets)
def test_anthropic_per_message_sum_differs_from_merged_payload_only_by_merges(
    system: str, history: list[Message], tools: list[ToolSpec]
) -> None:
    counter = AnthropicEstimateCounter(_cl100k_count)
    wire = to_anthropic_messages(history)
    merged = estimate_anthropic_payload(
        {"system": system, "messages": wire, "tools": to_anthropic_tools(tools)}, _cl100k_count
    )
    merges = len(history) - len(wire)
    assert (
        counter.count_request(system, history, tools) == merged + merges * ANTHROPIC_MESSAGE_TOKENS
    )


@pytest.mark.parametrize("make_counter", COUNTERS.values(), ids=COUNTERS.keys())
def test_counters_satisfy_the_protocol(make_counter: Callable[[], TokenCounter]) -> None:
    assert isinstance(make_counter(), TokenCounter)


def test_openai_counter_is_exact_and_estimates_are_not() -> None:
    assert OpenAIChatCounter(CL100K).exact
    assert not AnthropicEstimateCounter(_cl100k_count).exact
    assert not ScaledCounter(OpenAIChatCounter(CL100K), 1.1).exact


def test_openai_message_counts_include_framing() -> None:
    counter = OpenAIChatCounter(CL100K)
    # {"role": "user", "content": "hello"} is 3 + 1 + 1 tokens.
    assert counter.count_message(user("hello")) == 5
    assert counter.count_text("hello") == 1


def test_openai_tool_message_counts_one_wire_message_per_result() -> None:
    counter = OpenAIChatCounter(CL100K)
    one = tool_results(ToolResultPart(call_id="c1", name="f", output="ok"))
    two = tool_results(
        ToolResultPart(call_id="c1", name="f", output="ok"),
        ToolResultPart(call_id="c1", name="f", output="ok"),
    )
    assert counter.count_message(two) == 2 * counter.count_message(one)


def test_openai_tools_cost_nothing_when_absent_and_match_payload_without_system() -> None:
    counter = OpenAIChatCounter(O200K)
    spec = ToolSpec(
        name="get_weather",
        description="Get the weather",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    assert counter.count_tools([]) == 0
    without = counter.count_request("", [], [])
    with_tools = counter.count_request("", [], [spec])
    assert with_tools - without == counter.count_tools([spec])


def test_system_prompt_shares_framing_with_tools() -> None:
    counter = OpenAIChatCounter(CL100K)
    spec = ToolSpec(name="ping", description="", input_schema={"type": "object"})
    separately = counter.count_request("Hello", [], []) + counter.count_tools([spec])
    # The tool section reuses the system message (-4) and pads it with a newline.
    padding = len(CL100K.encode("Hello\n")) - len(CL100K.encode("Hello"))
    assert counter.count_request("Hello", [], [spec]) == separately - 4 + padding


def test_scaled_counter_rounds_each_component() -> None:
    base = OpenAIChatCounter(CL100K)
    scaled = ScaledCounter(base, 1.5)
    message = assistant("The quick brown fox jumps over the lazy dog.")
    assert scaled.count_message(message) == int(base.count_message(message) * 1.5 + 0.5)
    assert scaled.count_text("") == 0


@pytest.mark.parametrize("ratio", [0.0, -1.0, float("inf"), float("nan")])
def test_scaled_counter_rejects_bad_ratios(ratio: float) -> None:
    with pytest.raises(ValueError):
        ScaledCounter(OpenAIChatCounter(CL100K), ratio)


def test_unicode_surrogates_and_special_tokens_do_not_break_counting() -> None:
    counter = OpenAIChatCounter(O200K)
    assert counter.count_message(user("bad \ud800 surrogate <|endoftext|>")) > 5
