"""Engine messages as an OpenAI Responses API payload (`instructions`, `input`, `tools`).

The Responses API takes a list of input items instead of chat messages:

- a user or assistant message: `{"role": ..., "content": ...}`: a string, or for a
  person's files a list of `input_text`, `input_image` and `input_file` items;
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
from foldline.core.wire.attachments import openai_responses_attachment_content
from foldline.core.wire.common import (
    IMAGE_TYPES,
    attachment_text,
    current_loop_start,
    tool_arguments_json,
)


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


def _tool_files_item(message: Message, images: bool) -> dict[str, Any] | None:
    """A tool batch's files as ONE user message after its outputs, or None: images as
    `input_image` items when the model takes images (as on the Chat Completions wire, a
    message of their own, so a message's wire form does not depend on its neighbours),
    everything else described in text."""
    files = [p for p in message.parts if isinstance(p, AttachmentPart)]
    if not files:
        return None
    sent = [p for p in files if images and p.media_type in IMAGE_TYPES and p.data_base64]
    texts = [attachment_text(p) for p in files if p not in sent]
    if not sent:
        return {"role": "user", "content": "\n\n".join(texts)}
    names = ", ".join(image.name for image in sent)
    content: list[dict[str, Any]] = [
        {"type": "input_text", "text": f"Images returned by the tools above: {names}"}
    ]
    for image in sent:
        url = f"data:{image.media_type};base64,{image.data_base64}"
        content.append({"type": "input_image", "image_url": url, "detail": "auto"})
    content.extend({"type": "input_text", "text": text} for text in texts)
    return {"role": "user", "content": content}


def responses_message_items(
    message: Message, *, reasoning: bool, images: bool = False, documents: bool = False
) -> list[dict[str, Any]]:
    """The input items of one engine message (`reasoning`: send its reasoning items).

    `images`: the model takes image input (`[models."x"] vision`); `documents`: the
    server reads PDF `input_file` items (OpenAI's own API, for models that take images).
    A person's files make a user message's content a list of items: its text first, then
    each file (its label and its image or PDF, or its text), as on Chat Completions.
    """
    if message.role == "tool":
        items: list[dict[str, Any]] = [
            {"type": "function_call_output", "call_id": result.call_id, "output": result.output}
            for result in message.tool_results
        ]
        files_item = _tool_files_item(message, images)
        if files_item is not None:
            items.append(files_item)
        return items
    items = []
    if message.role == "assistant" and reasoning:
        for part in message.parts:
            if isinstance(part, ReasoningPart):
                item = responses_reasoning_item(part)
                if item is not None:
                    items.append(item)
    texts: list[str] = []
    files: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, AttachmentPart) and message.role == "user":
            files.extend(
                openai_responses_attachment_content(part, images=images, documents=documents)
            )
        elif isinstance(part, AttachmentPart):
            texts.append(attachment_text(part))
    if files:
        text_item = [{"type": "input_text", "text": "\n\n".join(texts)}] if texts else []
        items.append({"role": message.role, "content": text_item + files})
    elif texts or message.role == "user" or not message.tool_calls:
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


def to_responses_input(
    messages: Sequence[Message], *, images: bool = False, documents: bool = False
) -> list[dict[str, Any]]:
    """The `input` items of `messages`; reasoning only in the tool loop in progress, files
    as `responses_message_items` sends them."""
    loop_start = current_loop_start(messages)
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        items.extend(
            responses_message_items(
                message, reasoning=index >= loop_start, images=images, documents=documents
            )
        )
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
