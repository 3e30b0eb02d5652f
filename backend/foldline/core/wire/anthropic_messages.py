"""Engine messages as an Anthropic Messages payload (`system`, `messages`, `tools`), as plain
dicts."""

from __future__ import annotations

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
from foldline.core.wire.attachments import PDF_TYPE, anthropic_attachment_blocks
from foldline.core.wire.common import IMAGE_TYPES, attachment_text, current_loop_start


def _anthropic_file_into_result(blocks: list[dict[str, Any]], part: AttachmentPart) -> bool:
    """Put a tool's image or PDF into the tool_result before it, where the Messages API
    takes images and documents; False when there is no such result or the part is not
    one. A PDF goes only with its page count, known when its bytes were checked."""
    if not blocks or blocks[-1].get("type") != "tool_result" or not part.data_base64:
        return False
    source = {"type": "base64", "media_type": part.media_type, "data": part.data_base64}
    if part.media_type in IMAGE_TYPES:
        block: dict[str, Any] = {"type": "image", "source": source}
    elif part.media_type == PDF_TYPE and part.pages:
        block = {"type": "document", "source": source, "title": part.name}
    else:
        return False
    result = blocks[-1]
    content = result["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content.strip() else []
    result["content"] = [*content, block]
    return True


def anthropic_thinking_block(part: ReasoningPart) -> dict[str, Any] | None:
    """A reasoning part as the thinking block it came as, byte-identical; None for
    reasoning Anthropic cannot verify (unsigned, or another provider's)."""
    if part.redacted:
        return {"type": "redacted_thinking", "data": part.redacted}
    if part.signature:
        return {"type": "thinking", "thinking": part.text, "signature": part.signature}
    return None


def _anthropic_blocks(message: Message, *, thinking: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if thinking:
        # Inside a tool loop the API requires the assistant turn to start with its
        # thinking blocks, exactly as received.
        for part in message.parts:
            if isinstance(part, ReasoningPart):
                thinking_block = anthropic_thinking_block(part)
                if thinking_block is not None:
                    blocks.append(thinking_block)
    for part in message.parts:
        if isinstance(part, TextPart):
            # Anthropic refuses whitespace-only text blocks ("text content blocks must
            # contain non-whitespace text"), so they are left out of the wire.
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ReasoningPart):
            # Placed first above, or left out: earlier turns' thinking is stripped by
            # the API (and not billed), so it is not sent at all.
            continue
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
        elif isinstance(part, AttachmentPart) and message.role != "tool":
            blocks.extend(anthropic_attachment_blocks(part))
        elif isinstance(part, AttachmentPart) and not _anthropic_file_into_result(blocks, part):
            # A tool's image or PDF (in a tool message, after its result) is shown to the
            # model; its other attachments are described in text.
            blocks.append({"type": "text", "text": attachment_text(part)})
    return blocks


_THINKING = ("thinking", "redacted_thinking")

CACHE_BREAKPOINT: dict[str, str] = {"type": "ephemeral"}
"""Anthropic's `cache_control` marker: the prefix up to the marked block is cached (5 min)."""


def _mark_cache_breakpoint(blocks: list[dict[str, Any]]) -> None:
    """Put a breakpoint on the last block that may carry one (thinking blocks may not)."""
    for block in reversed(blocks):
        if block["type"] not in _THINKING:
            block["cache_control"] = dict(CACHE_BREAKPOINT)
            return


def to_anthropic_messages(
    messages: Sequence[Message], *, cache_after: int | None = None, reasoning: bool = True
) -> list[dict[str, Any]]:
    """Messages API `messages`: tool results become user turns; same roles are merged.

    Anthropic requires alternating roles, so consecutive messages that map to the same
    role (a summary followed by a user message, tool results followed by a user message)
    are merged into one turn, tool results first as the API demands.

    `cache_after` is the index of a message whose last block gets a prompt-cache
    breakpoint (the fold's summary): block-level, so it holds even when the message is
    merged with the next one into a single turn.

    Reasoning goes only with the assistant turns after the last user message (the tool
    loop in progress), first in each turn; the API strips earlier turns' thinking.
    `reasoning=False` leaves it out everywhere (how a message is counted: see
    `foldline.core.tokens.anthropic_messages`).
    """
    out: list[dict[str, Any]] = []
    loop_start = current_loop_start(messages)
    for index, message in enumerate(messages):
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _anthropic_blocks(message, thinking=reasoning and index >= loop_start)
        if all(block["type"] in _THINKING for block in blocks):
            # Nothing but thinking (an answer cut off while the model thought) still
            # needs content of its own, and gets the same placeholder as counted.
            blocks.append({"type": "text", "text": "(empty)"})
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
