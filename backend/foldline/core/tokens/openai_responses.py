"""Estimated token counts of an OpenAI Responses API request.

OpenAI publishes no rendering of Responses input items, so this is an estimate on the
Chat Completions model the same models read underneath: a message item is framed like
a chat message (`TOKENS_PER_MESSAGE` + its text), a `function_call` like a chat tool call
(its name and arguments + `FUNCTION_CALL_TOKENS`, framed as a message of its own), a
`function_call_output` like a `tool` message, `instructions` like a system message, and
the function tools by the same TypeScript-like rendering. The tokens are those of the
model's own encoding; the counter is marked inexact, so the per-model calibration ratio
learned from reported usage corrects the framing this cannot know.

Reasoning items count 0. The API drops earlier turns' reasoning from the context (they
are not sent), and the tool loop in progress sends its reasoning back encrypted, which
no tokenizer can count; a message's count must also not depend on where it stands in the
view. The calibration absorbs that short-lived part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from foldline.core.messages import Message, ToolSpec
from foldline.core.tokens.counter import Encoder, json_compact
from foldline.core.tokens.openai_chat import (
    FUNCTION_CALL_TOKENS,
    FUNCTIONS_SYSTEM_REUSE,
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    count_openai_tools,
)
from foldline.core.wire.openai_responses import responses_message_items, to_responses_tools


def _count(encoder: Encoder, text: str) -> int:
    return len(encoder.encode(text))


def _content_tokens(encoder: Encoder, content: Any) -> int:
    if isinstance(content, str):
        return _count(encoder, content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, Mapping) and "text" in part:
                total += _count(encoder, str(part.get("text", "")))
            else:
                total += _count(encoder, json_compact(part))
        return total
    return 0 if content is None else _count(encoder, json_compact(content))


def responses_item_tokens(encoder: Encoder, item: Mapping[str, Any]) -> int:
    """The estimated tokens of one input item (see the module docstring)."""
    kind = item.get("type", "message")
    if kind == "reasoning":
        return 0
    if kind == "function_call":
        return (
            TOKENS_PER_MESSAGE
            + _count(encoder, str(item.get("name", "")))
            + _count(encoder, str(item.get("arguments", "")))
            + FUNCTION_CALL_TOKENS
        )
    if kind == "function_call_output":
        output = item.get("output", "")
        return TOKENS_PER_MESSAGE + _content_tokens(encoder, output)
    return TOKENS_PER_MESSAGE + _content_tokens(encoder, item.get("content"))


def _chat_shaped_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Responses function tools in the Chat shape the tool rendering reads."""
    return [
        {"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
        if t.get("type") == "function"
        else dict(t)
        for t in tools
    ]


def count_responses_base(
    encoder: Encoder, instructions: str, tools: Sequence[Mapping[str, Any]]
) -> int:
    """The tokens of a request with no input items: instructions, tools, reply priming."""
    total = REPLY_PRIMING
    if instructions:
        total += TOKENS_PER_MESSAGE + _count(encoder, instructions + ("\n" if tools else ""))
    if tools:
        total += count_openai_tools(encoder, _chat_shaped_tools(tools))
        if instructions:
            total -= FUNCTIONS_SYSTEM_REUSE
    return total


class OpenAIResponsesCounter:
    """Estimates for the Responses wire, unscaled (callers calibrate them)."""

    exact: bool = False

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder

    def count_text(self, text: str) -> int:
        return _count(self.encoder, text)

    def count_message(self, message: Message) -> int:
        return sum(
            responses_item_tokens(self.encoder, item)
            for item in responses_message_items(message, reasoning=False)
        )

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return count_openai_tools(self.encoder, _chat_shaped_tools(to_responses_tools(tools)))

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        base = count_responses_base(self.encoder, system, to_responses_tools(tools))
        return base + sum(self.count_message(m) for m in messages)
