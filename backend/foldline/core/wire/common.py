"""What every wire shares: a call's arguments as JSON, attachments described in text, and
the image formats the providers accept.

The wire modules beside this one turn engine messages into one provider API's own
payload each (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses). Both the
providers, which send these payloads, and the token counters, which count them, call the
same functions, so what is counted is exactly what is sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from foldline.core.messages import AttachmentPart, Message, ToolCallPart

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image formats both providers accept as image input (the same four)."""


def attachment_text(part: AttachmentPart) -> str:
    if part.text is not None:
        return f"[attachment {part.name} ({part.media_type})]\n{part.text}"
    return f"[attachment {part.name} ({part.media_type}), binary]"


def tool_arguments_json(call: ToolCallPart) -> str:
    """The JSON string a provider receives as a call's arguments (compact, key order kept)."""
    return json.dumps(call.input, separators=(",", ":"), ensure_ascii=False)


def current_loop_start(messages: Sequence[Message]) -> int:
    """The index after the last user message: the assistant turns from there on are the
    tool loop in progress, the only ones whose reasoning the providers use."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index + 1
    return 0
