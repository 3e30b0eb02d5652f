"""Engine messages in the providers' own wire formats, as plain dicts, one module a wire.

- `anthropic_messages`: the Anthropic Messages API.
- `openai_chat`: OpenAI Chat Completions (also every OpenAI-compatible server).
- `common`: what the wires share (a call's arguments as JSON, attachments in text).

Both the providers (which send these payloads) and the token accounting (which counts
them) use these functions, so what is counted is exactly what is sent. The names most
callers need are re-exported here.
"""

from foldline.core.wire.anthropic_messages import (
    CACHE_BREAKPOINT,
    to_anthropic_messages,
    to_anthropic_system,
    to_anthropic_tools,
)
from foldline.core.wire.common import IMAGE_TYPES, attachment_text, tool_arguments_json
from foldline.core.wire.openai_chat import to_openai_messages, to_openai_tools

__all__ = [
    "CACHE_BREAKPOINT",
    "IMAGE_TYPES",
    "attachment_text",
    "to_anthropic_messages",
    "to_anthropic_system",
    "to_anthropic_tools",
    "to_openai_messages",
    "to_openai_tools",
    "tool_arguments_json",
]
