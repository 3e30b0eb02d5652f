"""The fake tokenizer's formula, the prompt-cache model, and the wire codec."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from foldline.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec
from foldline.providers.base import ModelRequest
from foldline.testing import (
    Element,
    FakeTokenizer,
    PromptCache,
    Reply,
    call,
    decode_request,
    encode_request,
)
from foldline.tokenizers import load_encoding

PROSE = (
    "Foldline keeps the whole conversation for the person and shows the model a folded "
    "context: the latest summary plus the messages after the fold line. "
) * 20


def test_count_text_is_the_documented_ceiling() -> None:
    tokenizer = FakeTokenizer()
    # ceil(n / 3.3): 33 characters are exactly 10 tokens, one more starts the 11th.
    assert [tokenizer.count_text("x" * n) for n in (0, 1, 3, 4, 33, 34)] == [0, 1, 1, 2, 10, 11]
    assert tokenizer.count_text("é" * 33) == 10  # code points, not bytes
    assert FakeTokenizer(chars_per_token=2).count_text("abcde") == 3


def test_counts_differ_from_every_local_tokenizer() -> None:
    fake = FakeTokenizer().count_text(PROSE)
    for name in ("o200k_base", "cl100k_base"):
        local = len(load_encoding(name).encode_ordinary(PROSE))
        # Far enough apart that a calibration which never learns shows up in tests.
        assert fake > local * 1.1, (name, fake, local)


def test_request_count_is_fixed_overhead_plus_elements() -> None:
    tokenizer = FakeTokenizer()
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 10,
        "system": "Be brief.",
        "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {"x": 1}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}],
            },
        ],
    }
    elements = tokenizer.elements(body, "anthropic")
    assert len(elements) == 1 + 1 + 3  # tool, system, three messages
    assert tokenizer.fixed_tokens(body, "anthropic") == 3 + 120
    text = tokenizer.count_text
    assert [e.tokens for e in elements] == [
        12 + text("t") + text("d") + text('{"type":"object"}'),
        4 + text("Be brief."),
        5 + text("hi"),
        5 + 6 + text("t") + text('{"x":1}'),
        5 + 6 + text("ok"),
    ]
    assert tokenizer.count_request(body, "anthropic") == 123 + sum(e.tokens for e in elements)


def test_cache_markers_do_not_change_the_count_or_the_identity() -> None:
    tokenizer = FakeTokenizer()
    plain = {"system": [{"type": "text", "text": PROSE}], "messages": []}
    marked = {
        "system": [{"type": "text", "text": PROSE, "cache_control": {"type": "ephemeral"}}],
        "messages": [],
    }
    (a,) = tokenizer.elements(plain, "anthropic")
    (b,) = tokenizer.elements(marked, "anthropic")
    assert (a.key, a.tokens, a.breakpoint) == (b.key, b.tokens, False)
    assert b.breakpoint is True


def test_output_count_covers_text_reasoning_and_calls() -> None:
    tokenizer = FakeTokenizer()
    assert tokenizer.count_output(Reply()) == 1
    reply = Reply(text="x" * 33, reasoning="y" * 33, tool_calls=(call("f", {"a": 1}),))
    assert tokenizer.count_output(reply) == 10 + 10 + 6 + 1 + tokenizer.count_text('{"a":1}')


def test_anthropic_cache_needs_a_marker_and_a_minimum_length() -> None:
    cache = PromptCache(minimum_tokens=100)
    unmarked = [Element("a", 500)]
    assert cache.anthropic("m", 0, unmarked).cache_creation == 0
    short = [Element("b", 50, breakpoint=True)]
    assert cache.anthropic("m", 0, short).cache_creation == 0
    marked = [Element("c", 500, breakpoint=True), Element("d", 20)]
    first = cache.anthropic("m", 3, marked)
    assert (first.cache_creation, first.cache_read, first.uncached) == (503, 0, 20)
    second = cache.anthropic("m", 3, marked)
    assert (second.cache_creation, second.cache_read, second.uncached) == (0, 503, 20)
    # Another model has its own cache.
    assert cache.anthropic("other", 3, marked).cache_read == 0


def _blocks(n: int, marked: int | None) -> list[Element]:
    return [Element(f"b{i}", 2000 if i == 0 else 10, breakpoint=i == marked) for i in range(n)]


def test_anthropic_lookup_walks_back_at_most_20_blocks() -> None:
    cache = PromptCache()
    cache.anthropic("m", 0, _blocks(30, marked=5))  # writes the prefix ending at block 5
    # A breakpoint 20 blocks later no longer finds it; 19 blocks later still does.
    assert cache.anthropic("m", 0, _blocks(30, marked=25)).cache_read == 0
    cache.clear()
    cache.anthropic("m", 0, _blocks(30, marked=5))
    assert cache.anthropic("m", 0, _blocks(30, marked=24)).cache_read == 2050


def test_cache_entries_expire_five_minutes_after_their_last_use() -> None:
    now = [0.0]
    cache = PromptCache(clock=lambda: now[0])
    marked = [Element("s", 2000, breakpoint=True)]
    cache.anthropic("m", 0, marked)
    now[0] = 299.0
    assert cache.anthropic("m", 0, marked).cache_read == 2000  # a hit refreshes it
    now[0] = 598.0
    assert cache.anthropic("m", 0, marked).cache_read == 2000
    now[0] = 899.0
    outcome = cache.anthropic("m", 0, marked)
    assert (outcome.cache_read, outcome.cache_creation) == (0, 2000)
    plain = [Element("o", 2000)]
    cache.openai("m", 0, plain)
    now[0] += 301.0
    assert cache.openai("m", 0, plain).cache_read == 0


def test_top_level_cache_control_marks_the_last_block() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            }
        ],
        "cache_control": {"type": "ephemeral"},
    }
    elements = FakeTokenizer().elements(body, "anthropic")
    assert [e.breakpoint for e in elements] == [False, True]


def test_openai_cache_reports_the_longest_seen_prefix_in_128_token_steps() -> None:
    cache = PromptCache()
    first = [Element("sys", 1500), Element("u1", 10)]
    assert cache.openai("m", 3, first).cache_read == 0
    longer = [*first, Element("a1", 10), Element("u2", 10)]
    outcome = cache.openai("m", 3, longer)
    assert outcome.cache_read == 1513 - 1513 % 128
    assert outcome.total == 1533
    cache.clear()
    assert cache.openai("m", 3, longer).cache_read == 0


# --- codec: engine request -> wire body -> engine request ------------------------------

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30
).filter(lambda s: s.strip() != "")
_input = st.dictionaries(st.sampled_from(["path", "q", "n"]), st.integers() | _text, max_size=2)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Alternating user/assistant turns, where calls are answered by a tool message."""
    messages: list[Message] = []
    counter = 0
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        messages.append(Message(role="user", parts=(TextPart(text=draw(_text)),)))
        n_calls = draw(st.integers(min_value=0, max_value=3))
        text = draw(_text) if n_calls == 0 or draw(st.booleans()) else ""
        calls = []
        for _ in range(n_calls):
            counter += 1
            calls.append(
                ToolCallPart(id=f"id{counter}", name=f"tool{counter % 2}", input=draw(_input))
            )
        parts = ((TextPart(text=text),) if text else ()) + tuple(calls)
        messages.append(Message(role="assistant", parts=parts))
        if calls:
            results = tuple(
                ToolResultPart(
                    call_id=c.id, name=c.name, output=draw(_text), is_error=draw(st.booleans())
                )
                for c in calls
            )
            messages.append(Message(role="tool", parts=results))
    return messages


def _without_error_flags(messages: list[Message]) -> list[Message]:
    """OpenAI's tool messages have no error flag, so it cannot survive that wire."""
    return [
        m.model_copy(
            update={
                "parts": tuple(
                    p.model_copy(update={"is_error": False}) if isinstance(p, ToolResultPart) else p
                    for p in m.parts
                )
            }
        )
        for m in messages
    ]


@settings(max_examples=60, deadline=None)
@given(messages=conversations(), system=st.sampled_from(["", "Be brief."]))
def test_codec_round_trips_both_wires(messages: list[Message], system: str) -> None:
    tools = [ToolSpec(name="tool0", description="d", input_schema={"type": "object"})]
    request = ModelRequest(
        model="m", system=system, messages=messages, tools=tools, max_output_tokens=321
    )
    assert decode_request(encode_request(request, "anthropic"), "anthropic") == request
    expected_openai = ModelRequest(
        model="m",
        system=system,
        messages=_without_error_flags(messages),
        tools=tools,
        max_output_tokens=321,
    )
    assert decode_request(encode_request(request, "openai"), "openai") == expected_openai


@settings(max_examples=40, deadline=None)
@given(messages=conversations())
def test_appending_messages_keeps_earlier_elements_as_a_prefix(messages: list[Message]) -> None:
    """What the prompt-cache model relies on: a longer history extends the element list."""
    tokenizer = FakeTokenizer()
    shorter = ModelRequest(model="m", system="s", messages=messages[:1])
    longer = ModelRequest(model="m", system="s", messages=messages)
    for wire in ("openai", "anthropic"):
        a = tokenizer.elements(encode_request(shorter, wire), wire)
        b = tokenizer.elements(encode_request(longer, wire), wire)
        assert b[: len(a)] == a
        assert tokenizer.count_model_request(longer, wire) >= tokenizer.count_model_request(
            shorter, wire
        )
