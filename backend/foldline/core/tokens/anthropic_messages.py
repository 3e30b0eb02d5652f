"""Estimated token counts of an Anthropic Messages request.

Claude's tokenizer is not public: text is counted by an injected `count_text`, framing,
tool use, images and documents by fixed costs. Callers multiply the estimate by a learned
calibration ratio (`ScaledCounter`, `core/calibration.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from foldline.core.messages import Message, ToolSpec
from foldline.core.tokens.attachments import (
    ANTHROPIC_PDF_PAGE_IMAGE_TOKENS,
    NO_FILES,
    AttachmentsByData,
    anthropic_image_tokens,
    parts_by_data,
    pdf_tokens,
    sent_media_tokens,
)
from foldline.core.tokens.counter import CountText, json_compact
from foldline.core.wire.anthropic_messages import to_anthropic_messages, to_anthropic_tools

# Framing costs are not published; these are small and were chosen so that a one-message
# request ("Hello, world") lands on the ~10 input tokens Anthropic reports for it. The
# calibration ratio absorbs what they miss.
ANTHROPIC_REQUEST_TOKENS = 3
"""Framing of every request (start of the conversation, priming of the reply)."""
ANTHROPIC_MESSAGE_TOKENS = 4
"""Framing of one turn (its role marker and separators)."""
ANTHROPIC_TOOLS_SYSTEM_PROMPT_TOKENS = 346
"""The tool-use system prompt Anthropic adds when `tools` are given with tool_choice
auto/none (Anthropic's tool-use pricing table for the Claude 4 family)."""
ANTHROPIC_TOOLS_FORCED_SYSTEM_PROMPT_TOKENS = 313
"""The same prompt with tool_choice any/tool (same table)."""
ANTHROPIC_TOOL_DEFINITION_TOKENS = 8
"""Markup around one tool definition (its name, description and schema are counted)."""
ANTHROPIC_TOOL_USE_TOKENS = 8
"""Markup around one tool_use block (its name and JSON input are counted)."""
ANTHROPIC_TOOL_RESULT_TOKENS = 6
"""Markup around one tool_result block (its content is counted)."""
ANTHROPIC_IMAGE_TOKENS = 1600
"""Anthropic documents an image's cost as width x height / 750 after scaling to at most
about 1.2 megapixels, i.e. at most ~1,600 tokens. An image whose size is unknown (a
payload counted on its own) is charged the maximum; a person's image and a tool's are
counted from their size (`core/tokens/attachments.py`)."""
ANTHROPIC_DOCUMENT_TOKENS = 3000
"""A PDF costs 1,500-3,000 tokens per page (Anthropic's PDF support page); a document
whose pages are unknown is charged one dense page."""


def _anthropic_block_tokens(
    block: Any, count_text: CountText, files: AttachmentsByData = NO_FILES
) -> int:
    if isinstance(block, str):
        return count_text(block)
    if not isinstance(block, Mapping):
        return count_text(json_compact(block))
    kind = block.get("type")
    if kind == "text":
        return count_text(str(block.get("text", "")))
    if kind in ("thinking", "redacted_thinking"):
        # Not counted: the API strips earlier turns' thinking and does not bill it, and
        # a message's count must not depend on where it stands. Only the tool loop in
        # progress sends its thinking back (billed as input); that short-lived part is
        # what the calibration against reported usage absorbs.
        return 0
    if kind == "tool_use":
        return (
            count_text(str(block.get("name", "")))
            + count_text(json_compact(block.get("input", {})))
            + ANTHROPIC_TOOL_USE_TOKENS
        )
    if kind == "tool_result":
        # A tool's images ride inside its result: counted from their size like a
        # person's (`files` matches them by their data).
        return _anthropic_content_tokens(block.get("content", ""), count_text, files) + (
            ANTHROPIC_TOOL_RESULT_TOKENS
        )
    source = block.get("source")
    part = files.get(source.get("data", "")) if isinstance(source, Mapping) else None
    if kind == "image":
        if part is not None and part.width and part.height:
            return anthropic_image_tokens(part.width, part.height)
        return ANTHROPIC_IMAGE_TOKENS
    if kind == "document":
        if isinstance(source, Mapping) and source.get("type") == "text":
            return count_text(str(source.get("data", "")))
        if part is not None:
            return pdf_tokens(part, count_text, ANTHROPIC_PDF_PAGE_IMAGE_TOKENS)
        return ANTHROPIC_DOCUMENT_TOKENS
    # Other blocks (server tool results, search results ...): their JSON as a stand-in.
    return count_text(json_compact(block))


def _anthropic_content_tokens(
    content: Any, count_text: CountText, files: AttachmentsByData = NO_FILES
) -> int:
    if isinstance(content, str):
        return count_text(content)
    if isinstance(content, list):
        return sum(_anthropic_block_tokens(block, count_text, files) for block in content)
    if content is None:
        return 0
    return _anthropic_block_tokens(content, count_text, files)


def _anthropic_message_tokens(
    message: Mapping[str, Any], count_text: CountText, files: AttachmentsByData = NO_FILES
) -> int:
    content = message.get("content")
    return ANTHROPIC_MESSAGE_TOKENS + _anthropic_content_tokens(content, count_text, files)


def _anthropic_tools_tokens(
    tools: Sequence[Mapping[str, Any]], count_text: CountText, tool_choice: Any = None
) -> int:
    if not tools:
        return 0
    forced = isinstance(tool_choice, Mapping) and tool_choice.get("type") in ("any", "tool")
    total = (
        ANTHROPIC_TOOLS_FORCED_SYSTEM_PROMPT_TOKENS
        if forced
        else ANTHROPIC_TOOLS_SYSTEM_PROMPT_TOKENS
    )
    for tool in tools:
        total += ANTHROPIC_TOOL_DEFINITION_TOKENS
        total += count_text(str(tool.get("name", "")))
        total += count_text(str(tool.get("description", "")))
        total += count_text(json_compact(tool.get("input_schema", {})))
    return total


def estimate_anthropic_payload(payload: Mapping[str, Any], count_text: CountText) -> int:
    """Estimated input tokens of a Messages request `{system?, messages, tools?, tool_choice?}`.

    `system` may be a string or a list of blocks; message content a string or blocks
    (text, thinking, tool_use, tool_result, image, document). Images and binary
    documents cost a fixed amount; see the constants above for every fixed cost.
    """
    total = ANTHROPIC_REQUEST_TOKENS
    total += _anthropic_content_tokens(payload.get("system"), count_text)
    total += _anthropic_tools_tokens(
        payload.get("tools") or (), count_text, payload.get("tool_choice")
    )
    for message in payload.get("messages") or ():
        if isinstance(message, Mapping):
            total += _anthropic_message_tokens(message, count_text)
    return total


class AnthropicEstimateCounter:
    """Estimates for the Anthropic Messages wire, unscaled.

    Each engine message is estimated as its own wire turn. The real payload merges
    consecutive messages that map to the same role (a summary and the next user message,
    tool results and the next user message) into one turn, so the sum of per-message
    counts is higher than `estimate_anthropic_payload` of the merged payload by
    `ANTHROPIC_MESSAGE_TOKENS` per merge — a few tokens, on the safe side, and the price
    of counts that can be cached per message and added up.
    """

    exact: bool = False

    def __init__(self, count_text: CountText) -> None:
        self._count_text = count_text

    def count_text(self, text: str) -> int:
        return self._count_text(text)

    def count_message(self, message: Message) -> int:
        # A person's images and PDFs are counted from their size and pages (the wire
        # block holds only their data, matched back to the part here).
        files = parts_by_data(message)
        return sum(
            _anthropic_message_tokens(wire, self._count_text, files)
            for wire in to_anthropic_messages([message], reasoning=False)
        )

    def media_tokens(self, message: Message) -> int:
        """The part of `count_message` billed by Anthropic's image formula."""
        return sent_media_tokens(
            message,
            images=True,
            documents=True,
            image_tokens=anthropic_image_tokens,
            page_image_tokens=ANTHROPIC_PDF_PAGE_IMAGE_TOKENS,
        )

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return _anthropic_tools_tokens(to_anthropic_tools(tools), self._count_text)

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        base_payload = {"system": system, "messages": [], "tools": to_anthropic_tools(tools)}
        base = estimate_anthropic_payload(base_payload, self._count_text)
        return base + sum(self.count_message(m) for m in messages)
