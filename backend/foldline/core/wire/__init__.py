"""Engine messages in the providers' own wire formats, as plain dicts, one module a wire.

- `anthropic_messages`: the Anthropic Messages API.
- `openai_chat`: OpenAI Chat Completions (also every OpenAI-compatible server).
- `openai_responses`: the OpenAI Responses API (OpenAI's reasoning models).
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
from foldline.core.wire.common import (
    IMAGE_TYPES,
    attachment_text,
    current_loop_start,
    tool_arguments_json,
)
from foldline.core.wire.openai_chat import to_openai_messages, to_openai_tools
from foldline.core.wire.openai_responses import to_responses_input, to_responses_tools

__all__ = [
    "CACHE_BREAKPOINT",
    "IMAGE_TYPES",
    "attachment_text",
    "current_loop_start",
    "to_anthropic_messages",
    "to_anthropic_system",
    "to_anthropic_tools",
    "to_openai_messages",
    "to_openai_tools",
    "to_responses_input",
    "to_responses_tools",
    "tool_arguments_json",
]
