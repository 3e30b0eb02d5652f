"""Exact token counts of an OpenAI Chat Completions request (o200k_base / cl100k_base).

By the formulas OpenAI documents in its cookbook ("How to count tokens with tiktoken": 3
tokens per message, the tokens of every value, 1 more for a `name`, 3 to prime the reply)
and the community-verified rendering of function schemas into the TypeScript-like
`namespace functions { ... }` block the model actually reads.
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
from foldline.core.wire.openai_chat import to_openai_messages, to_openai_tools

TOKENS_PER_MESSAGE = 3
"""Every message is framed as <|start|>{role}<|message|>...<|end|> (OpenAI cookbook)."""
TOKENS_PER_NAME = 1
"""A `name` field costs its own tokens plus one (OpenAI cookbook)."""
REPLY_PRIMING = 3
"""Every reply is primed with <|start|>assistant<|message|> (OpenAI cookbook)."""
FUNCTIONS_BLOCK_TOKENS = 9
"""The tool definitions live in a system section ("# Tools", "## functions") that costs
9 tokens beyond the rendered namespace. Found by hmarr/openai-chat-tokens against the
API's reported usage; the cookbook's tool example (105 / 101 tokens) agrees."""
FUNCTIONS_SYSTEM_REUSE = 4
"""When the request has a system message, the tool section joins it instead of opening a
new one, saving 4 tokens (hmarr/openai-chat-tokens, checked against reported usage)."""
FUNCTION_CALL_TOKENS = 3
"""A function call in an assistant message costs its name, its arguments and 3 tokens of
recipient framing (hmarr/openai-chat-tokens for `function_call`; applied per call to
`tool_calls`, for which no published numbers exist)."""
FUNCTION_ROLE_DISCOUNT = 2
"""The legacy `function` role frames its message 2 tokens cheaper (hmarr/openai-chat-tokens)."""
TOOL_CHOICE_NONE_TOKENS = 1
TOOL_CHOICE_NAMED_TOKENS = 4
"""Forcing a named function costs its name plus 4 tokens (hmarr/openai-chat-tokens)."""
OPENAI_IMAGE_PART_TOKENS = 765
"""An image part is estimated as a 1024x1024 image at high detail (85 + 4 x 170 tokens),
the most `detail: auto` charges on GPT-4o-class models for an image of that size; the
real cost depends on the image size, which the payload does not state (and on the model:
the GPT-4.1-mini / o4-mini patch formula differs). A fixed constant keeps the count
stable and errs high for the small images tools usually return."""

_SYSTEM_ROLES = frozenset({"system", "developer"})


def _encode_count(encoder: Encoder, text: str) -> int:
    return len(encoder.encode(text))


def _openai_file_part_tokens(
    encoder: Encoder, part: Mapping[str, Any], files: AttachmentsByData
) -> int | None:
    """An image or PDF part of a person's file, from the part's size and pages; None when
    the part is not one (or its file is unknown)."""
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url")
        url = str(image.get("url", "")) if isinstance(image, Mapping) else ""
        attachment = files.get(data_url_payload(url))
        if attachment is not None and attachment.width and attachment.height:
            return openai_image_tokens(attachment.width, attachment.height)
    if kind == "file":
        file = part.get("file")
        url = str(file.get("file_data", "")) if isinstance(file, Mapping) else ""
        attachment = files.get(data_url_payload(url))
        if attachment is not None:
            return pdf_tokens(
                attachment, lambda text: _encode_count(encoder, text), OPENAI_PDF_PAGE_IMAGE_TOKENS
            )
    return None


def _openai_content_tokens(
    encoder: Encoder, content: Any, files: AttachmentsByData = NO_FILES
) -> int:
    """`content` as a string, None, or a list of content parts."""
    if content is None:
        return 0
    if isinstance(content, str):
        return _encode_count(encoder, content)
    if isinstance(content, list):
        total = 0
        for part in content:
            known = _openai_file_part_tokens(encoder, part, files) if files else None
            if known is not None:
                total += known
            elif isinstance(part, Mapping) and part.get("type") == "text":
                total += _encode_count(encoder, str(part.get("text", "")))
            elif isinstance(part, Mapping) and part.get("type") in ("image_url", "input_image"):
                total += OPENAI_IMAGE_PART_TOKENS
            else:
                # An unknown part (audio, file, ...): its JSON is a rough stand-in.
                total += _encode_count(encoder, json_compact(part))
        return total
    return _encode_count(encoder, str(content))


def _openai_call_tokens(encoder: Encoder, function: Mapping[str, Any]) -> int:
    name = str(function.get("name", ""))
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json_compact(arguments)
    return _encode_count(encoder, name) + _encode_count(encoder, arguments) + FUNCTION_CALL_TOKENS


def _openai_message_tokens(
    encoder: Encoder, message: Mapping[str, Any], files: AttachmentsByData = NO_FILES
) -> int:
    """One Chat Completions message: 3 + the tokens of every value + 1 for a name.

    Assistant `tool_calls` count each call's function name and arguments (the call id
    and type are bookkeeping the model does not read). A `tool` message counts its
    values like any other message, `tool_call_id` included: the model is shown the
    function's name there instead, and a call id is of similar length, so this errs by a
    few tokens on the high side rather than the low one.
    """
    tokens = TOKENS_PER_MESSAGE
    for key, value in message.items():
        if key == "content":
            tokens += _openai_content_tokens(encoder, value, files)
        elif key == "tool_calls":
            for call in value if isinstance(value, list) else ():
                if isinstance(call, Mapping):
                    tokens += _openai_call_tokens(encoder, call.get("function") or {})
        elif key == "function_call":
            if isinstance(value, Mapping):
                tokens += _openai_call_tokens(encoder, value)
        elif key == "name":
            tokens += _encode_count(encoder, str(value)) + TOKENS_PER_NAME
        elif isinstance(value, str):
            tokens += _encode_count(encoder, value)
    if message.get("role") == "function":
        tokens -= FUNCTION_ROLE_DISCOUNT
    return tokens


def _js_literal(value: Any) -> str:
    """A JSON value as JavaScript's template literal `${value}` prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _ts_type(schema: Mapping[str, Any], indent: int) -> str:
    any_of = schema.get("anyOf")
    if isinstance(any_of, list):
        return " | ".join(
            _ts_type(option, indent) for option in any_of if isinstance(option, Mapping)
        )
    kind = schema.get("type")
    if isinstance(kind, list):
        # A union type ("type": ["string", "null"]) renders like an anyOf of its members.
        return " | ".join(_ts_type({**schema, "type": member}, indent) for member in kind)
    enum = schema.get("enum")
    if kind == "string":
        if isinstance(enum, list):
            return " | ".join(f'"{_js_literal(v)}"' for v in enum)
        return "string"
    if kind in ("number", "integer"):
        if isinstance(enum, list):
            return " | ".join(_js_literal(v) for v in enum)
        return "number"
    if kind in ("boolean", "null"):
        return str(kind)
    if kind == "object":
        return "\n".join(["{", _ts_object_properties(schema, indent + 2), "}"])
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, Mapping):
            return f"{_ts_type(items, indent)}[]"
        return "any[]"
    return ""


def _ts_object_properties(schema: Mapping[str, Any], indent: int) -> str:
    required = schema.get("required") or ()
    properties = schema.get("properties") or {}
    lines: list[str] = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        description = prop.get("description")
        # Descriptions of deeply nested properties are not shown to the model.
        if description and indent < 2:
            lines.append(f"// {description}")
        optional = "" if name in required else "?"
        lines.append(f"{name}{optional}: {_ts_type(prop, indent)},")
    # As in the reference implementation, only the first physical line of a
    # multi-line entry (a nested object) is indented.
    return "\n".join(" " * indent + line for line in lines)


def _function_definition(tool: Any) -> Mapping[str, Any] | None:
    """The function definition of a `tools` entry ({"type": "function", "function": {...}})
    or of a legacy `functions` entry (the definition itself); None for other tools."""
    definition = tool.get("function", tool) if isinstance(tool, Mapping) else None
    if isinstance(definition, Mapping) and definition.get("name"):
        return definition
    return None


def _function_definitions(tools: Sequence[Any]) -> list[Mapping[str, Any]]:
    return [d for d in map(_function_definition, tools) if d is not None]


def render_openai_functions(tools: Sequence[Mapping[str, Any]]) -> str:
    """The `namespace functions { ... }` block OpenAI shows the model for its tools.

    OpenAI renders JSON-Schema function definitions as TypeScript type declarations;
    this reproduces the rendering reverse-engineered by hmarr/openai-chat-tokens, whose
    counts were checked against the API's reported usage.
    """
    lines = ["namespace functions {", ""]
    for function in _function_definitions(tools):
        description = function.get("description")
        if description:
            lines.append(f"// {description}")
        parameters = function.get("parameters")
        parameters = parameters if isinstance(parameters, Mapping) else {}
        name = function["name"]
        if parameters.get("properties"):
            lines.append(f"type {name} = (_: {{")
            lines.append(_ts_object_properties(parameters, 0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {name} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def count_openai_tools(encoder: Encoder, tools: Sequence[Mapping[str, Any]]) -> int:
    """The tool definitions' tokens (0 without tools), before the system-message saving.

    Function tools are exact. Other tool kinds (custom or built-in tools) have no
    published rendering; their JSON stands in for them, and `openai_payload_is_exact`
    reports such a payload as an estimate.
    """
    definitions = _function_definitions(tools)
    total = 0
    if definitions:
        total += _encode_count(encoder, render_openai_functions(definitions))
        total += FUNCTIONS_BLOCK_TOKENS
    for tool in tools:
        if _function_definition(tool) is None:
            total += _encode_count(encoder, json_compact(tool))
    return total


def _tool_choice_tokens(encoder: Encoder, tool_choice: Any) -> int:
    if tool_choice == "none":
        return TOOL_CHOICE_NONE_TOKENS
    if isinstance(tool_choice, Mapping):
        named = tool_choice.get("function", tool_choice)
        if isinstance(named, Mapping) and named.get("name"):
            return _encode_count(encoder, str(named["name"])) + TOOL_CHOICE_NAMED_TOKENS
    return 0


def count_openai_chat_payload(
    encoder: Encoder,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    tool_choice: Any = None,
) -> int:
    """Exact input tokens of a Chat Completions request `{messages, tools?, tool_choice?}`.

    `tools` may be the current `tools` list or the legacy `functions` list. With tools,
    the first system message is padded with a newline (the tool section follows it) and
    the section's own framing is shared with it (−4). `tool_choice` (or the legacy
    `function_call`) adds 1 token for "none" and name + 4 for a forced function.
    """
    has_tools = bool(_function_definitions(tools or ()))
    total = 0
    padded = False
    for message in messages:
        if has_tools and not padded and message.get("role") in _SYSTEM_ROLES:
            padded = True
            content = message.get("content")
            if isinstance(content, str):
                message = {**message, "content": content + "\n"}
            else:
                total += 1
        total += _openai_message_tokens(encoder, message)
    total += REPLY_PRIMING + count_openai_tools(encoder, tools or ())
    if has_tools and any(m.get("role") in _SYSTEM_ROLES for m in messages):
        total -= FUNCTIONS_SYSTEM_REUSE
    return total + _tool_choice_tokens(encoder, tool_choice)


def openai_payload_is_exact(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
) -> bool:
    """False when the payload holds parts whose cost is estimated (images, audio, files)
    or tools that are not functions; text, tool calls and function schemas are exact."""
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(
            not (isinstance(part, Mapping) and part.get("type") == "text") for part in content
        ):
            return False
    for tool in tools or ():
        if not (isinstance(tool, Mapping) and tool.get("type", "function") == "function"):
            return False
    return True


class OpenAIChatCounter:
    """Exact counts for OpenAI-tokenized models on the Chat Completions wire."""

    exact: bool = True

    def __init__(self, encoder: Encoder, *, images: bool = False, documents: bool = False) -> None:
        self.encoder = encoder
        self.images = images
        """Whether images go on the wire (a model that accepts image input), as
        `to_openai_messages(images=...)` sends them. An image counts its tiles
        (from its size; `OPENAI_IMAGE_PART_TOKENS` when the size is unknown)."""
        self.documents = documents
        """Whether PDFs go on the wire as `file` parts (OpenAI's own API)."""

    def count_text(self, text: str) -> int:
        return _encode_count(self.encoder, text)

    def count_message(self, message: Message) -> int:
        # A `tool` message becomes one wire message per result; each has its own framing.
        files = parts_by_data(message)
        wires = to_openai_messages("", [message], images=self.images, documents=self.documents)
        return sum(_openai_message_tokens(self.encoder, wire, files) for wire in wires)

    def media_tokens(self, message: Message) -> int:
        """The part of `count_message` billed by OpenAI's image formula."""
        return sent_media_tokens(
            message,
            images=self.images,
            documents=self.documents,
            image_tokens=openai_image_tokens,
            page_image_tokens=OPENAI_PDF_PAGE_IMAGE_TOKENS,
        )

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return count_openai_tools(self.encoder, to_openai_tools(tools))

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        # Engine messages never carry the system role, so the system/tools interplay is
        # entirely in the base and the messages simply add up.
        base = count_openai_chat_payload(
            self.encoder, to_openai_messages(system, []), to_openai_tools(tools)
        )
        return base + sum(self.count_message(m) for m in messages)
