"""Token accounting of the wire payload a provider receives, one module a wire.

- `counter`: the `TokenCounter` protocol, the injected `Encoder`, `ScaledCounter`.
- `openai_chat`: exact counts for OpenAI Chat Completions (o200k_base / cl100k_base).
- `anthropic_messages`: estimates for the Anthropic Messages API (calibrated by callers).
- `openai_responses`: estimates for the OpenAI Responses API (calibrated by callers).

The names callers need are re-exported here, so `from foldline.core.tokens import ...`
does not depend on which wire module holds a name.
"""

from foldline.core.tokens.anthropic_messages import (
    ANTHROPIC_DOCUMENT_TOKENS,
    ANTHROPIC_IMAGE_TOKENS,
    ANTHROPIC_MESSAGE_TOKENS,
    ANTHROPIC_REQUEST_TOKENS,
    ANTHROPIC_TOOL_DEFINITION_TOKENS,
    ANTHROPIC_TOOL_RESULT_TOKENS,
    ANTHROPIC_TOOL_USE_TOKENS,
    ANTHROPIC_TOOLS_FORCED_SYSTEM_PROMPT_TOKENS,
    ANTHROPIC_TOOLS_SYSTEM_PROMPT_TOKENS,
    AnthropicEstimateCounter,
    estimate_anthropic_payload,
)
from foldline.core.tokens.counter import (
    CountText,
    Encoder,
    ScaledCounter,
    TokenCounter,
    json_compact,
)
from foldline.core.tokens.openai_chat import (
    FUNCTION_CALL_TOKENS,
    FUNCTION_ROLE_DISCOUNT,
    FUNCTIONS_BLOCK_TOKENS,
    FUNCTIONS_SYSTEM_REUSE,
    OPENAI_IMAGE_PART_TOKENS,
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TOOL_CHOICE_NAMED_TOKENS,
    TOOL_CHOICE_NONE_TOKENS,
    OpenAIChatCounter,
    count_openai_chat_payload,
    count_openai_tools,
    openai_payload_is_exact,
    render_openai_functions,
)
from foldline.core.tokens.openai_responses import OpenAIResponsesCounter

__all__ = [
    "ANTHROPIC_DOCUMENT_TOKENS",
    "ANTHROPIC_IMAGE_TOKENS",
    "ANTHROPIC_MESSAGE_TOKENS",
    "ANTHROPIC_REQUEST_TOKENS",
    "ANTHROPIC_TOOLS_FORCED_SYSTEM_PROMPT_TOKENS",
    "ANTHROPIC_TOOLS_SYSTEM_PROMPT_TOKENS",
    "ANTHROPIC_TOOL_DEFINITION_TOKENS",
    "ANTHROPIC_TOOL_RESULT_TOKENS",
    "ANTHROPIC_TOOL_USE_TOKENS",
    "FUNCTIONS_BLOCK_TOKENS",
    "FUNCTIONS_SYSTEM_REUSE",
    "FUNCTION_CALL_TOKENS",
    "FUNCTION_ROLE_DISCOUNT",
    "OPENAI_IMAGE_PART_TOKENS",
    "REPLY_PRIMING",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TOOL_CHOICE_NAMED_TOKENS",
    "TOOL_CHOICE_NONE_TOKENS",
    "AnthropicEstimateCounter",
    "CountText",
    "Encoder",
    "OpenAIChatCounter",
    "OpenAIResponsesCounter",
    "ScaledCounter",
    "TokenCounter",
    "count_openai_chat_payload",
    "count_openai_tools",
    "estimate_anthropic_payload",
    "json_compact",
    "openai_payload_is_exact",
    "render_openai_functions",
]
