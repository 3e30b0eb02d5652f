"""Engine messages as an OpenAI Responses API payload (`instructions`, `input`, `tools`).

The Responses API takes a list of input items instead of chat messages:

- a user or assistant message: `{"role": ..., "content": ...}` (text parts);
- a tool call: `{"type": "function_call", "call_id", "name", "arguments"}`;
- its result: `{"type": "function_call_output", "call_id", "output"}`;
- a reasoning item: `{"type": "reasoning", "id", "summary", "encrypted_content"}`.

Foldline uses the API statelessly (`store: false`): nothing is kept on OpenAI's side, so
a reasoning model's reasoning comes back encrypted (`include:
["reasoning.encrypted_content"]`) and must be handed back, unchanged and under its own
id, right before the function calls it preceded, or the API refuses the calls. Only the
tool loop in progress (the turns after the last user message) carries its reasoning: the
API drops earlier turns' reasoning items from the context, so they are not sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolSpec,
)
from foldline.core.wire.common import attachment_text, current_loop_start, tool_arguments_json


def responses_reasoning_item(part: ReasoningPart) -> dict[str, Any] | None:
    """A reasoning part as the item it came as; None for reasoning the API cannot verify
    (no item id or no encrypted content: another provider's, or a stored one)."""
    if not part.item_id or not part.encrypted_content:
        return None
    summary = [{"type": "summary_text", "text": part.text}] if part.text else []
    return {
        "type": "reasoning",
        "id": part.item_id,
        "summary": summary,
        "encrypted_content": part.encrypted_content,
    }


def _content_texts(message: Message) -> list[str]:
    texts: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, AttachmentPart):
            # Attachments in text for now; images and PDFs in the Responses item shapes
            # (`input_image`, `input_file`) come with the attachments' wire module.
            texts.append(attachment_text(part))
    return texts


def responses_message_items(message: Message, *, reasoning: bool) -> list[dict[str, Any]]:
    """The input items of one engine message (`reasoning`: send its reasoning items)."""
    if message.role == "tool":
        items: list[dict[str, Any]] = [
            {"type": "function_call_output", "call_id": result.call_id, "output": result.output}
            for result in message.tool_results
        ]
        texts = [attachment_text(p) for p in message.parts if isinstance(p, AttachmentPart)]
        if texts:
            # A tool's files, described in text after the batch's outputs.
            items.append({"role": "user", "content": "\n\n".join(texts)})
        return items
    items = []
    if message.role == "assistant" and reasoning:
        for part in message.parts:
            if isinstance(part, ReasoningPart):
                item = responses_reasoning_item(part)
                if item is not None:
                    items.append(item)
    texts = _content_texts(message)
    if texts or message.role == "user" or not message.tool_calls:
        items.append({"role": message.role, "content": "\n\n".join(texts)})
    if message.role == "assistant":
        for call in message.tool_calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": tool_arguments_json(call),
                }
            )
    return items


def to_responses_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The `input` items of `messages`; reasoning only in the tool loop in progress."""
    loop_start = current_loop_start(messages)
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        items.extend(responses_message_items(message, reasoning=index >= loop_start))
    return items


def to_responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Function tools in the Responses shape (flat, not wrapped in `function`). `strict`
    is off: Foldline's and MCP servers' schemas are not written for strict mode."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
            "strict": False,
        }
        for tool in tools
    ]
