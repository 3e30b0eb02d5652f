"""Engine messages in the providers' own wire formats, as plain dicts.

Both the providers (which send these payloads) and the token accounting (which counts
them) use these functions, so what is counted is exactly what is sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)


def _attachment_text(part: AttachmentPart) -> str:
    if part.text is not None:
        return f"[attachment {part.name} ({part.media_type})]\n{part.text}"
    return f"[attachment {part.name} ({part.media_type}), binary]"


def tool_arguments_json(call: ToolCallPart) -> str:
    """The JSON string a provider receives as a call's arguments (compact, key order kept)."""
    return json.dumps(call.input, separators=(",", ":"), ensure_ascii=False)


# --- OpenAI Chat Completions -------------------------------------------------------


OPENAI_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image formats Chat Completions accepts in `image_url` parts."""


def _openai_tool_images(message: Message) -> dict[str, Any] | None:
    """The images of one batch of tool results as ONE user message, or None.

    A `tool` message's content must be text on the Chat Completions wire, so the images
    follow the batch in a user message of `image_url` parts (base64 data URLs), the
    shape in which the API accepts images.
    """
    images = [
        part
        for part in message.parts
        if isinstance(part, AttachmentPart)
        and part.media_type in OPENAI_IMAGE_TYPES
        and part.data_base64
    ]
    if not images:
        return None
    names = ", ".join(image.name for image in images)
    content: list[dict[str, Any]] = [
        {"type": "text", "text": f"Images returned by the tools above: {names}"}
    ]
    for image in images:
        url = f"data:{image.media_type};base64,{image.data_base64}"
        content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": content}


def to_openai_messages(
    system: str, messages: Sequence[Message], *, images: bool = False
) -> list[dict[str, Any]]:
    """Chat Completions `messages`: system first, tool results as `tool` messages.

    With `images` (a model that accepts image input), the images tool results returned
    follow their batch's `tool` messages as one user message each. They wait until the
    run of `tool` messages has ended, because nothing may come between an assistant's
    tool calls and their results; each batch still gets a message of its own, so a
    message's wire form (and its token count) does not depend on its neighbours.
    """
    out: list[dict[str, Any]] = []
    waiting_images: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "tool":
            for result in message.tool_results:
                out.append(
                    {"role": "tool", "tool_call_id": result.call_id, "content": result.output}
                )
            image_message = _openai_tool_images(message) if images else None
            if image_message is not None:
                waiting_images.append(image_message)
            continue
        out.extend(waiting_images)
        waiting_images.clear()
        texts: list[str] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, AttachmentPart):
                texts.append(_attachment_text(part))
        entry: dict[str, Any] = {"role": message.role, "content": "\n\n".join(texts)}
        calls = message.tool_calls
        if message.role == "assistant" and calls:
            if not texts:
                entry["content"] = None
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": tool_arguments_json(call)},
                }
                for call in calls
            ]
        out.append(entry)
    out.extend(waiting_images)
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


# --- Anthropic Messages --------------------------------------------------------------


ANTHROPIC_IMAGE_TYPES = OPENAI_IMAGE_TYPES
"""The image formats the Messages API accepts in image blocks (the same four)."""


def _anthropic_image_into_result(blocks: list[dict[str, Any]], part: AttachmentPart) -> bool:
    """Put a tool's image into the tool_result before it, where the Messages API takes
    images; False when there is no such result or the part is not a usable image."""
    if not blocks or blocks[-1].get("type") != "tool_result":
        return False
    if part.media_type not in ANTHROPIC_IMAGE_TYPES or not part.data_base64:
        return False
    result = blocks[-1]
    content = result["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content.strip() else []
    image = {"type": "base64", "media_type": part.media_type, "data": part.data_base64}
    result["content"] = [*content, {"type": "image", "source": image}]
    return True


def _anthropic_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            # Anthropic refuses whitespace-only text blocks ("text content blocks must
            # contain non-whitespace text"), so they are left out of the wire.
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ReasoningPart):
            # Thinking blocks are only valid with their signature; unsigned reasoning (from
            # another provider) is dropped from the wire rather than sent as a forgery.
            if part.signature:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": part.input}
            )
        elif isinstance(part, ToolResultPart):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.call_id,
                "content": part.output,
            }
            if part.is_error:
                block["is_error"] = True
            blocks.append(block)
        elif isinstance(part, AttachmentPart) and not (
            # A tool's image (in a tool message, after its result) is shown to the model;
            # other attachments are described in text.
            message.role == "tool" and _anthropic_image_into_result(blocks, part)
        ):
            blocks.append({"type": "text", "text": _attachment_text(part)})
    return blocks


CACHE_BREAKPOINT: dict[str, str] = {"type": "ephemeral"}
"""Anthropic's `cache_control` marker: the prefix up to the marked block is cached (5 min)."""


def _mark_cache_breakpoint(blocks: list[dict[str, Any]]) -> None:
    """Put a breakpoint on the last block that may carry one (thinking blocks may not)."""
    for block in reversed(blocks):
        if block["type"] != "thinking":
            block["cache_control"] = dict(CACHE_BREAKPOINT)
            return


def to_anthropic_messages(
    messages: Sequence[Message], *, cache_after: int | None = None
) -> list[dict[str, Any]]:
    """Messages API `messages`: tool results become user turns; same roles are merged.

    Anthropic requires alternating roles, so consecutive messages that map to the same
    role (a summary followed by a user message, tool results followed by a user message)
    are merged into one turn, tool results first as the API demands.

    `cache_after` is the index of a message whose last block gets a prompt-cache
    breakpoint (the fold's summary): block-level, so it holds even when the message is
    merged with the next one into a single turn.
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _anthropic_blocks(message)
        if not blocks:
            blocks = [{"type": "text", "text": "(empty)"}]
        if index == cache_after:
            _mark_cache_breakpoint(blocks)
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


def to_anthropic_system(system: str, *, cache: bool = False) -> str | list[dict[str, Any]]:
    """The `system` value; with `cache`, one text block marked as a cache breakpoint.

    Tools come before the system prompt in Anthropic's cache order, so this one marker
    caches the whole stable prefix (tools + system) of a conversation.
    """
    if not cache:
        return system
    return [{"type": "text", "text": system, "cache_control": dict(CACHE_BREAKPOINT)}]
