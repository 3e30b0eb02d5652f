"""The Anthropic Messages estimate: every block kind and fixed cost, on a simple count_text."""

from __future__ import annotations

from typing import Any

from foldline.core.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    tool_results,
    user,
)
from foldline.core.tokens import (
    ANTHROPIC_DOCUMENT_TOKENS,
    ANTHROPIC_IMAGE_TOKENS,
    ANTHROPIC_MESSAGE_TOKENS,
    ANTHROPIC_REQUEST_TOKENS,
    ANTHROPIC_TOOL_DEFINITION_TOKENS,
    ANTHROPIC_TOOL_RESULT_TOKENS,
    ANTHROPIC_TOOL_USE_TOKENS,
    ANTHROPIC_TOOLS_FORCED_SYSTEM_PROMPT_TOKENS,
    ANTHROPIC_TOOLS_SYSTEM_PROMPT_TOKENS,
    AnthropicEstimateCounter,
    estimate_anthropic_payload,
)


def words(text: str) -> int:
    """A transparent stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


def estimate(payload: dict[str, Any]) -> int:
    return estimate_anthropic_payload(payload, words)


FRAME = ANTHROPIC_REQUEST_TOKENS + ANTHROPIC_MESSAGE_TOKENS


def test_string_and_block_content_are_the_same() -> None:
    as_string = {"messages": [{"role": "user", "content": "one two three"}]}
    as_blocks = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "one two three"}]}]
    }
    assert estimate(as_string) == estimate(as_blocks) == FRAME + 3


def test_system_as_string_or_blocks() -> None:
    messages = [{"role": "user", "content": "hi"}]
    as_string = estimate({"system": "be brief please", "messages": messages})
    as_blocks = estimate(
        {
            "system": [
                {"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "please"},
            ],
            "messages": messages,
        }
    )
    assert as_string == as_blocks == FRAME + 1 + 3


def test_tool_use_and_tool_result_blocks() -> None:
    payload = {
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "a b"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "found three things"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": [{"type": "text", "text": "nested text"}],
                        "is_error": True,
                    },
                ],
            },
        ]
    }
    tool_use = words("search") + words('{"q":"a b"}') + ANTHROPIC_TOOL_USE_TOKENS
    results = (3 + ANTHROPIC_TOOL_RESULT_TOKENS) + (2 + ANTHROPIC_TOOL_RESULT_TOKENS)
    expected = ANTHROPIC_REQUEST_TOKENS + 2 * ANTHROPIC_MESSAGE_TOKENS + tool_use + results
    assert estimate(payload) == expected


def test_images_and_documents_have_fixed_costs() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}}
    text_doc = {"type": "document", "source": {"type": "text", "data": "plain text doc"}}
    payload = {"messages": [{"role": "user", "content": [image, pdf, text_doc]}]}
    expected = FRAME + ANTHROPIC_IMAGE_TOKENS + ANTHROPIC_DOCUMENT_TOKENS + 3
    assert estimate(payload) == expected


def test_image_inside_a_tool_result() -> None:
    block = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "image", "source": {}}],
    }
    payload = {"messages": [{"role": "user", "content": [block]}]}
    assert estimate(payload) == FRAME + ANTHROPIC_IMAGE_TOKENS + ANTHROPIC_TOOL_RESULT_TOKENS


def test_tools_add_the_tool_use_system_prompt_once() -> None:
    tool = {
        "name": "get_weather",
        "description": "Get the weather",
        "input_schema": {"type": "object"},
    }
    per_tool = (
        ANTHROPIC_TOOL_DEFINITION_TOKENS + 1 + words("Get the weather") + words('{"type":"object"}')
    )
    base = estimate({"messages": []})
    assert estimate({"messages": [], "tools": [tool]}) == (
        base + ANTHROPIC_TOOLS_SYSTEM_PROMPT_TOKENS + per_tool
    )
    assert estimate({"messages": [], "tools": [tool, tool]}) == (
        base + ANTHROPIC_TOOLS_SYSTEM_PROMPT_TOKENS + 2 * per_tool
    )
    forced = estimate({"messages": [], "tools": [tool], "tool_choice": {"type": "any"}})
    assert forced == base + ANTHROPIC_TOOLS_FORCED_SYSTEM_PROMPT_TOKENS + per_tool


def test_thinking_is_not_counted_and_unknown_blocks_fall_back_to_json() -> None:
    thinking = {"type": "thinking", "thinking": "let me think", "signature": "sig"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    unknown = {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []}
    payload = {"messages": [{"role": "assistant", "content": [thinking, redacted, unknown]}]}
    # Thinking is not billed as input outside the tool loop: 0. The compact JSON of
    # `unknown` is one "word".
    assert estimate(payload) == FRAME + 1


def test_counter_counts_what_the_wire_sends() -> None:
    counter = AnthropicEstimateCounter(words)
    unsigned = Message(
        role="assistant", parts=(ReasoningPart(text="private musing"), TextPart(text="answer"))
    )
    signed = Message(
        role="assistant",
        parts=(ReasoningPart(text="private musing", signature="s"), TextPart(text="answer")),
    )
    # Reasoning, signed or not, counts 0: the API does not bill earlier turns' thinking.
    assert counter.count_message(unsigned) == ANTHROPIC_MESSAGE_TOKENS + 1
    assert counter.count_message(signed) == ANTHROPIC_MESSAGE_TOKENS + 1


def test_empty_message_is_sent_and_counted_as_placeholder() -> None:
    counter = AnthropicEstimateCounter(words)
    assert counter.count_message(Message(role="user")) == ANTHROPIC_MESSAGE_TOKENS + 1


def test_counter_request_with_tools_and_history() -> None:
    counter = AnthropicEstimateCounter(words)
    spec = ToolSpec(name="f", description="does f", input_schema={"type": "object"})
    history = [
        user("hello there"),
        Message(role="assistant", parts=(ToolCallPart(id="c1", name="f", input={"x": 1}),)),
        tool_results(ToolResultPart(call_id="c1", name="f", output="done")),
    ]
    expected = (
        ANTHROPIC_REQUEST_TOKENS
        + 2  # system "be nice"
        + counter.count_tools([spec])
        + (ANTHROPIC_MESSAGE_TOKENS + 2)
        + (ANTHROPIC_MESSAGE_TOKENS + 1 + 1 + ANTHROPIC_TOOL_USE_TOKENS)
        + (ANTHROPIC_MESSAGE_TOKENS + 1 + ANTHROPIC_TOOL_RESULT_TOKENS)
    )
    assert counter.count_request("be nice", history, [spec]) == expected
