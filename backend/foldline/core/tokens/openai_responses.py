"""Estimated token counts of an OpenAI Responses API request.

OpenAI publishes no rendering of Responses input items, so this is an estimate on the
Chat Completions model the same models read underneath: a message item is framed like
a chat message (`TOKENS_PER_MESSAGE` + its text), a `function_call` like a chat tool call
(its name and arguments + `FUNCTION_CALL_TOKENS`, framed as a message of its own), a
`function_call_output` like a `tool` message, `instructions` like a system message, and
the function tools by the same TypeScript-like rendering. A person's image costs OpenAI's
tile formula from its size, a PDF its text plus an image of every page (as on Chat
Completions; see `attachments`), and a tool's image the fixed `OPENAI_IMAGE_PART_TOKENS`.
The tokens are those of the model's own encoding; the counter is marked inexact, so the
per-model calibration ratio learned from reported usage corrects the framing this cannot
know (and leaves the formula-billed images alone: `media_tokens`).

Reasoning items count 0. The API drops earlier turns' reasoning from the context (they
are not sent), and the tool loop in progress sends its reasoning back encrypted, which
no tokenizer can count; a message's count must also not depend on where it stands in the
view. The calibration absorbs that short-lived part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from foldline.core.messages import Message, ToolSpec
from foldline.core.tokens.attachments import (
    NO_FILES,
    OPENAI_PDF_PAGE_IMAGE_TOKENS,
    AttachmentsByData,
    data_url_payload,
    openai_image_tokens,
    parts_by_data,
    pdf_tokens,
    sent_media_tokens,
)
from foldline.core.tokens.counter import Encoder, json_compact
from foldline.core.tokens.openai_chat import (
    FUNCTION_CALL_TOKENS,
    FUNCTIONS_SYSTEM_REUSE,
    OPENAI_IMAGE_PART_TOKENS,
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    count_openai_tools,
)
from foldline.core.wire.openai_responses import responses_message_items, to_responses_tools


def _count(encoder: Encoder, text: str) -> int:
    return len(encoder.encode(text))


def _file_item_tokens(
    encoder: Encoder, item: Mapping[str, Any], files: AttachmentsByData
) -> int | None:
    """An `input_image` or `input_file` item: a person's file from its size and pages, a
    tool's image (size unknown) at the fixed cost; None for any other item."""
    kind = item.get("type")
    attachment = files.get(data_url_payload(str(item.get("image_url") or item.get("file_data"))))
    if kind == "input_image":
        if attachment is not None and attachment.width and attachment.height:
            return openai_image_tokens(attachment.width, attachment.height)
        return OPENAI_IMAGE_PART_TOKENS
    if kind == "input_file" and attachment is not None:
        return pdf_tokens(
            attachment, lambda text: _count(encoder, text), OPENAI_PDF_PAGE_IMAGE_TOKENS
        )
    return None


def _content_tokens(encoder: Encoder, content: Any, files: AttachmentsByData = NO_FILES) -> int:
    if isinstance(content, str):
        return _count(encoder, content)
    if isinstance(content, list):
        total = 0
        for part in content:
            known = _file_item_tokens(encoder, part, files) if isinstance(part, Mapping) else None
            if known is not None:
                total += known
            elif isinstance(part, Mapping) and "text" in part:
                total += _count(encoder, str(part.get("text", "")))
            else:
                total += _count(encoder, json_compact(part))
        return total
    return 0 if content is None else _count(encoder, json_compact(content))


def responses_item_tokens(
    encoder: Encoder, item: Mapping[str, Any], files: AttachmentsByData = NO_FILES
) -> int:
    """The estimated tokens of one input item (see the module docstring); `files` are the
    engine message's attachments by their data, for the size of its images and PDFs."""
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
    return TOKENS_PER_MESSAGE + _content_tokens(encoder, item.get("content"), files)


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

    def __init__(self, encoder: Encoder, *, images: bool = False, documents: bool = False) -> None:
        self.encoder = encoder
        self.images = images
        """Whether images go on the wire (a model that accepts image input), as
        `to_responses_input(images=...)` sends them."""
        self.documents = documents
        """Whether PDFs go on the wire as `input_file` items (OpenAI's own API)."""

    def count_text(self, text: str) -> int:
        return _count(self.encoder, text)

    def count_message(self, message: Message) -> int:
        files = parts_by_data(message)
        items = responses_message_items(
            message, reasoning=False, images=self.images, documents=self.documents
        )
        return sum(responses_item_tokens(self.encoder, item, files) for item in items)

    def media_tokens(self, message: Message) -> int:
        """The part of `count_message` billed by OpenAI's image formula, which the
        calibration ratio (learned on text) must not scale."""
        return sent_media_tokens(
            message,
            images=self.images,
            documents=self.documents,
            image_tokens=openai_image_tokens,
            page_image_tokens=OPENAI_PDF_PAGE_IMAGE_TOKENS,
        )

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return count_openai_tools(self.encoder, _chat_shaped_tools(to_responses_tools(tools)))

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        base = count_responses_base(self.encoder, system, to_responses_tools(tools))
        return base + sum(self.count_message(m) for m in messages)
