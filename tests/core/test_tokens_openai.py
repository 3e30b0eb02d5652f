"""Exact OpenAI counting against published, API-reported prompt token counts.

Sources of the expected numbers (all are the `prompt_tokens` the API reported):
- OpenAI Cookbook, "How to count tokens with tiktoken"
  (openai/openai-cookbook, examples/How_to_count_tokens_with_tiktoken.ipynb):
  the 6-message example is 129 tokens on gpt-3.5-turbo / gpt-4-0613 / gpt-4 (cl100k_base)
  and 124 on gpt-4o / gpt-4o-mini (o200k_base); the tools example is 105 on
  gpt-3.5-turbo / gpt-4 and 101 on gpt-4o / gpt-4o-mini.
- hmarr/openai-chat-tokens, tests: cases checked against gpt-3.5-turbo (cl100k_base).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldline.core.tokens import (
    count_openai_chat_payload,
    count_openai_tools,
    openai_payload_is_exact,
    render_openai_functions,
)
from foldline.tokenizers import get_encoder

CL100K = get_encoder("cl100k_base")
O200K = get_encoder("o200k_base")

COOKBOOK_MESSAGES: list[dict[str, Any]] = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on "
        "opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the "
        "client deliverable.",
    },
]

# The cookbook's function-calling example is shared with the CLI tests as a data file.
COOKBOOK_TOOLS_REQUEST: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "data" / "openai_cookbook_tools.json").read_text()
)
COOKBOOK_TOOLS: list[dict[str, Any]] = COOKBOOK_TOOLS_REQUEST["tools"]
COOKBOOK_TOOL_MESSAGES: list[dict[str, Any]] = COOKBOOK_TOOLS_REQUEST["messages"]


@pytest.mark.parametrize(("encoder", "expected"), [(CL100K, 129), (O200K, 124)])
def test_cookbook_messages_example(encoder: Any, expected: int) -> None:
    assert count_openai_chat_payload(encoder, COOKBOOK_MESSAGES, None) == expected


@pytest.mark.parametrize(("encoder", "expected"), [(CL100K, 105), (O200K, 101)])
def test_cookbook_tools_example(encoder: Any, expected: int) -> None:
    assert count_openai_chat_payload(encoder, COOKBOOK_TOOL_MESSAGES, COOKBOOK_TOOLS) == expected


def _fn(name: str, properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object", "properties": properties or {}}
    parameters.update(extra.pop("parameters_extra", {}))
    return {"name": name, "parameters": parameters, **extra}


# (messages, legacy `functions`, function_call, prompt_tokens reported for gpt-3.5-turbo)
HMARR_CASES: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None, Any, int]] = [
    ([{"role": "user", "content": "hello"}], None, None, 8),
    ([{"role": "user", "content": "hello world"}], None, None, 9),
    ([{"role": "system", "content": "hello"}], None, None, 8),
    ([{"role": "system", "content": "hello:"}], None, None, 9),
    (
        [
            {"role": "system", "content": "# Important: you're the best robot"},
            {"role": "user", "content": "hello robot"},
            {"role": "assistant", "content": "hello world"},
        ],
        None,
        None,
        27,
    ),
    ([{"role": "user", "content": "hello"}], [_fn("foo")], None, 31),
    ([{"role": "user", "content": "hello"}], [_fn("foo")], "none", 32),
    ([{"role": "user", "content": "hello"}], [_fn("foo")], "auto", 31),
    ([{"role": "user", "content": "hello"}], [_fn("foo")], {"name": "foo"}, 36),
    ([{"role": "user", "content": "hello"}], [_fn("foo", description="Do a foo")], None, 36),
    (
        [{"role": "user", "content": "hello"}],
        [_fn("bing_bong", {"foo": {"type": "string"}}, description="Do a bing bong")],
        None,
        49,
    ),
    (
        [{"role": "user", "content": "hello"}],
        [
            _fn(
                "bing_bong",
                {"foo": {"type": "string"}, "bar": {"type": "number", "description": "A number"}},
                description="Do a bing bong",
            )
        ],
        None,
        57,
    ),
    (
        [{"role": "user", "content": "hello"}],
        [
            _fn(
                "bing_bong",
                {
                    "foo": {
                        "type": "object",
                        "properties": {
                            "bar": {"type": "string", "enum": ["a", "b", "c"]},
                            "baz": {"type": "boolean"},
                        },
                    }
                },
                description="Do a bing bong",
            )
        ],
        None,
        68,
    ),
    (
        [
            {"role": "user", "content": "hello world"},
            {"role": "function", "name": "do_stuff", "content": "{}"},
        ],
        None,
        None,
        15,
    ),
    (
        [
            {"role": "user", "content": "hello world"},
            {"role": "function", "name": "do_stuff", "content": '{"foo": "bar", "baz": 1.5}'},
        ],
        None,
        None,
        28,
    ),
    (
        [
            {
                "role": "function",
                "name": "dance_the_tango",
                "content": '{"a": { "b" : { "c": false}}}',
            }
        ],
        None,
        None,
        24,
    ),
    (
        [
            {
                "role": "assistant",
                "content": "",
                "function_call": {"name": "do_stuff", "arguments": '{"foo": "bar", "baz": 1.5}'},
            }
        ],
        None,
        None,
        26,
    ),
    (
        [
            {
                "role": "assistant",
                "content": "",
                "function_call": {"name": "do_stuff", "arguments": '{"foo":"bar", "baz":\n\n 1.5}'},
            }
        ],
        None,
        None,
        25,
    ),
    (
        [{"role": "system", "content": "Hello"}, {"role": "user", "content": "Hi there"}],
        [_fn("do_stuff")],
        None,
        35,
    ),
    (
        [{"role": "system", "content": "Hello:"}, {"role": "user", "content": "Hi there"}],
        [_fn("do_stuff")],
        None,
        35,
    ),
    (
        [
            {"role": "system", "content": "Hello:"},
            {"role": "system", "content": "Hello"},
            {"role": "user", "content": "Hi there"},
        ],
        [_fn("do_stuff")],
        None,
        40,
    ),
    (
        [
            {"role": "system", "content": "Hello:"},
            {"role": "system", "content": "Hello"},
            {"role": "user", "content": "Hi there"},
        ],
        [_fn("do_stuff"), _fn("do_other_stuff")],
        None,
        49,
    ),
    (
        [
            {"role": "system", "content": "Hello:"},
            {"role": "system", "content": "Hello"},
            {"role": "user", "content": "Hi there"},
        ],
        [_fn("do_stuff"), _fn("do_other_stuff")],
        {"name": "do_stuff"},
        55,
    ),
    (
        [{"role": "user", "content": "hello"}],
        [
            _fn(
                "get_recipe",
                {
                    "ingredients": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name", "unit", "amount"],
                            "properties": {
                                "name": {"type": "string"},
                                "unit": {
                                    "enum": ["grams", "ml", "cups", "pieces", "teaspoons"],
                                    "type": "string",
                                },
                                "amount": {"type": "number"},
                            },
                        },
                    },
                    "instructions": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Steps to prepare the recipe (no numbering)",
                    },
                    "time_to_cook": {
                        "type": "number",
                        "description": "Total time to prepare the recipe in minutes",
                    },
                },
                parameters_extra={"required": ["ingredients", "instructions", "time_to_cook"]},
            )
        ],
        None,
        106,
    ),
    (
        [{"role": "system", "content": "Hello"}, {"role": "user", "content": "Hi there"}],
        [
            _fn(
                "do_stuff",
                {"foo": {"anyOf": [{"type": "string", "const": "a"}, {"type": "number"}]}},
            )
        ],
        None,
        44,
    ),
    (
        [{"role": "user", "content": "hello"}],
        [
            _fn(
                "function",
                {
                    "quality": {
                        "type": "object",
                        "properties": {
                            "pros": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": "Write 3 points why this text is well written",
                            }
                        },
                    }
                },
                description="description",
            )
        ],
        None,
        46,
    ),
]


_SYSTEM_AND_USER: list[dict[str, Any]] = [
    {"role": "system", "content": "Hello"},
    {"role": "user", "content": "Hi there"},
]


def _kind(value: str, **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"kind": {"type": "string", "const": value}, **properties},
    }


HMARR_CASES += [
    (
        _SYSTEM_AND_USER,
        [_fn("do_stuff", {"foo": {"anyOf": [_kind("a", baz={"type": "boolean"})]}})],
        None,
        52,
    ),
    (
        _SYSTEM_AND_USER,
        [
            _fn(
                "do_stuff",
                {
                    "foo": {
                        "anyOf": [
                            _kind("a", baz={"type": "boolean"}),
                            _kind("b", qux={"type": "number"}),
                            _kind("c", idk={"type": "string"}),
                        ]
                    }
                },
            )
        ],
        None,
        80,
    ),
    (
        [
            {"role": "system", "content": "You are an AI assistant trained to foo or bar"},
            {"role": "user", "content": "My name is suzie"},
            {
                "role": "function",
                "name": "foo",
                "content": '{"res":{"kind":"user","name":"suzie"}}',
            },
            {"role": "user", "content": 'I want to post a message with the text "hello world"'},
            {
                "role": "function",
                "name": "foo",
                "content": '{"res":{"kind":"post","text":"hello world"}}',
            },
        ],
        [
            _fn(
                "foo",
                {
                    "res": {
                        "anyOf": [
                            {
                                **_kind("post", text={"type": "string"}),
                                "required": ["kind", "text"],
                                "additionalProperties": False,
                            },
                            {
                                **_kind(
                                    "user",
                                    name={"type": "string", "enum": ["jane", "suzie", "adam"]},
                                ),
                                "required": ["kind", "name"],
                                "additionalProperties": False,
                            },
                        ],
                        "description": "The foo or the bar",
                    }
                },
                description="Return the foo or the bar",
                parameters_extra={"required": ["res"], "additionalProperties": False},
            )
        ],
        {"name": "foo"},
        158,
    ),
    (
        [{"role": "user", "content": "hello"}],
        [
            _fn(
                "function",
                {
                    "mainField": {"type": "string", "description": "description3"},
                    "field number one": {
                        "type": "object",
                        "description": "description4",
                        "properties": {
                            "yesNoField": {
                                "type": "string",
                                "description": "description5",
                                "enum": ["Yes", "No"],
                            },
                            "howIsInteresting": {"type": "string", "description": "description6"},
                            "scoreInteresting": {"type": "number", "description": "description7"},
                            "isInteresting": {
                                "type": "string",
                                "description": "description8",
                                "enum": ["Yes", "No"],
                            },
                        },
                    },
                },
                description="desctiption1",
                parameters_extra={"description": "desctiption2"},
            )
        ],
        None,
        96,
    ),
]


@pytest.mark.parametrize(("messages", "functions", "function_call", "expected"), HMARR_CASES)
def test_api_verified_gpt35_cases(
    messages: list[dict[str, Any]],
    functions: list[dict[str, Any]] | None,
    function_call: Any,
    expected: int,
) -> None:
    assert (
        count_openai_chat_payload(CL100K, messages, functions, tool_choice=function_call)
        == expected
    )


def test_tools_and_legacy_functions_count_the_same() -> None:
    functions = [tool["function"] for tool in COOKBOOK_TOOLS]
    assert count_openai_tools(CL100K, functions) == count_openai_tools(CL100K, COOKBOOK_TOOLS)


def test_named_tool_choice_in_tools_shape_matches_legacy_function_call() -> None:
    messages = [{"role": "user", "content": "hello"}]
    legacy = count_openai_chat_payload(CL100K, messages, [_fn("foo")], tool_choice={"name": "foo"})
    current = count_openai_chat_payload(
        CL100K,
        messages,
        [{"type": "function", "function": _fn("foo")}],
        tool_choice={"type": "function", "function": {"name": "foo"}},
    )
    assert current == legacy == 36


def test_special_token_text_is_counted_as_text() -> None:
    messages = [{"role": "user", "content": "<|endoftext|> and <|im_start|>"}]
    count = count_openai_chat_payload(O200K, messages, None)
    plain = len(O200K.encode("<|endoftext|> and <|im_start|>"))
    assert plain > 3  # several ordinary tokens, not one special token
    assert count == 3 + len(O200K.encode("user")) + plain + 3


def test_assistant_tool_calls_and_tool_messages() -> None:
    arguments = '{"location":"Paris"}'
    messages = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    n = lambda text: len(CL100K.encode(text))  # noqa: E731
    expected = (
        (3 + n("user") + n("weather?"))
        + (3 + n("assistant") + n("get_weather") + n(arguments) + 3)
        + (3 + n("tool") + n("call_1") + n("sunny"))
        + 3
    )
    assert count_openai_chat_payload(CL100K, messages, None) == expected


def test_content_parts_text_is_exact_and_images_are_flagged() -> None:
    text_parts = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert count_openai_chat_payload(CL100K, text_parts, None) == 8
    assert openai_payload_is_exact(text_parts, None)
    with_image = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        }
    ]
    assert count_openai_chat_payload(CL100K, with_image, None) > 8 + 500
    assert not openai_payload_is_exact(with_image, None)


def test_rendered_namespace_shape() -> None:
    rendered = render_openai_functions(COOKBOOK_TOOLS)
    assert rendered.splitlines() == [
        "namespace functions {",
        "",
        "// Get the current weather in a given location",
        "type get_current_weather = (_: {",
        "// The city and state, e.g. San Francisco, CA",
        "location: string,",
        "// The unit of temperature to return",
        'unit?: "celsius" | "fahrenheit",',
        "}) => any;",
        "",
        "} // namespace functions",
    ]


def test_function_without_parameters_renders_as_nullary() -> None:
    rendered = render_openai_functions([{"name": "ping"}])
    assert "type ping = () => any;" in rendered


def test_union_types_and_numeric_enums() -> None:
    rendered = render_openai_functions(
        [
            _fn(
                "f",
                {
                    "a": {"type": ["string", "null"]},
                    "b": {"type": "integer", "enum": [1, 2.0]},
                    "c": {"type": "boolean"},
                    "d": {"type": "array"},
                },
            )
        ]
    )
    assert "a?: string | null," in rendered
    assert "b?: 1 | 2," in rendered
    assert "c?: boolean," in rendered
    assert "d?: any[]," in rendered


def test_non_function_tools_are_estimated_from_their_json() -> None:
    custom = {"type": "custom", "custom": {"description": "free-form grammar tool"}}
    messages = [{"role": "user", "content": "hello"}]
    assert count_openai_tools(CL100K, []) == 0
    assert count_openai_tools(CL100K, [custom]) > 0
    with_custom = count_openai_chat_payload(CL100K, messages, [*COOKBOOK_TOOLS, custom])
    without = count_openai_chat_payload(CL100K, messages, COOKBOOK_TOOLS)
    assert with_custom - without == count_openai_tools(CL100K, [custom])
    assert not openai_payload_is_exact(messages, [custom])
    assert openai_payload_is_exact(messages, COOKBOOK_TOOLS)
