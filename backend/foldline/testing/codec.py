"""Wire request bodies <-> engine `ModelRequest`s, for the fake models.

`encode_request` builds the body a Foldline provider would send (through the shared
`foldline.core.wire` functions), so `ScriptedModel` can count the tokens of exactly that
payload. `decode_request` goes the other way: the fake HTTP server turns what a real SDK
sent back into engine values, so the same scripted steps, summary predicates and
assertions work whichever transport a test uses.

Decoding follows the engine's conventions: tool results become a `tool` message placed
before any other content of the same Anthropic user turn, and a tool result's `name` is
taken from the call it answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal, TypeAlias

from foldline.core.messages import (
    AttachmentPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from foldline.core.wire import to_openai_messages, to_openai_tools
from foldline.providers.base import ModelRequest
from foldline.providers.caching import anthropic_prompt_fields

Wire: TypeAlias = Literal["anthropic", "openai"]

DEFAULT_MAX_OUTPUT = 4096
"""What a decoded OpenAI request gets as `max_output_tokens` when it sets no limit."""


def encode_request(request: ModelRequest, wire: Wire, *, stream: bool = True) -> dict[str, Any]:
    """The JSON body a provider sends for `request` over `wire`."""
    body: dict[str, Any] = {"model": request.model}
    if wire == "anthropic":
        body["max_tokens"] = request.max_output_tokens
        body.update(anthropic_prompt_fields(request))
    else:
        body["messages"] = to_openai_messages(
            request.system, request.messages, images=request.images, documents=request.images
        )
        body["max_completion_tokens"] = request.max_output_tokens
        if request.tools:
            body["tools"] = to_openai_tools(request.tools)
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.cache_key is not None:
            body["prompt_cache_key"] = request.cache_key
    if request.temperature is not None:
        body["temperature"] = request.temperature
    body["stream"] = stream
    return body


def decode_request(body: dict[str, Any], wire: Wire) -> ModelRequest:
    """The engine request behind a wire body (lenient: unknown blocks are kept as text)."""
    if wire == "anthropic":
        system = _anthropic_text(body.get("system") or "")
        messages = _decode_anthropic_messages(body.get("messages") or [])
        tools = [
            ToolSpec(
                name=str(t.get("name", "")),
                description=str(t.get("description", "")),
                input_schema=t.get("input_schema") or {"type": "object"},
            )
            for t in body.get("tools") or []
        ]
        max_output = int(body.get("max_tokens") or DEFAULT_MAX_OUTPUT)
    else:
        system, messages = _decode_openai_messages(body.get("messages") or [])
        tools = [
            ToolSpec(
                name=str(t.get("function", {}).get("name", "")),
                description=str(t.get("function", {}).get("description", "")),
                input_schema=t.get("function", {}).get("parameters") or {"type": "object"},
            )
            for t in body.get("tools") or []
        ]
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        max_output = int(limit or DEFAULT_MAX_OUTPUT)
    temperature = body.get("temperature")
    return ModelRequest(
        model=str(body.get("model", "")),
        system=system,
        messages=messages,
        tools=tools,
        max_output_tokens=max_output,
        temperature=float(temperature) if temperature is not None else None,
    )


# --- Anthropic -------------------------------------------------------------------------


def _anthropic_text(content: Any) -> str:
    """The text of a `system` value or a tool_result `content`: a string or text blocks."""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def _attachment_from_source(block: dict[str, Any]) -> AttachmentPart:
    source = block.get("source") or {}
    media_type = str(source.get("media_type", "application/octet-stream"))
    if source.get("type") == "text":
        return AttachmentPart(name=block["type"], media_type=media_type, text=source.get("data"))
    return AttachmentPart(
        name=str(block.get("type")), media_type=media_type, data_base64=source.get("data")
    )


def _decode_anthropic_messages(raw: Iterable[dict[str, Any]]) -> list[Message]:
    messages: list[Message] = []
    call_names: dict[str, str] = {}
    for entry in raw:
        content = entry.get("content", "")
        blocks: list[Any] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        if entry.get("role") == "assistant":
            parts: list[Part] = []
            for block in blocks:
                kind = block.get("type")
                if kind == "text":
                    parts.append(TextPart(text=str(block.get("text", ""))))
                elif kind == "thinking":
                    parts.append(
                        ReasoningPart(
                            text=str(block.get("thinking", "")), signature=block.get("signature")
                        )
                    )
                elif kind == "tool_use":
                    call_names[str(block.get("id"))] = str(block.get("name"))
                    parts.append(
                        ToolCallPart(
                            id=str(block.get("id")),
                            name=str(block.get("name")),
                            input=dict(block.get("input") or {}),
                        )
                    )
            messages.append(Message(role="assistant", parts=tuple(parts)))
            continue
        results: list[Part] = []
        others: list[Part] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "tool_result":
                call_id = str(block.get("tool_use_id"))
                results.append(
                    ToolResultPart(
                        call_id=call_id,
                        name=call_names.get(call_id, ""),
                        output=_anthropic_text(block.get("content") or ""),
                        is_error=bool(block.get("is_error", False)),
                    )
                )
            elif kind == "text":
                others.append(TextPart(text=str(block.get("text", ""))))
            elif kind in ("image", "document"):
                others.append(_attachment_from_source(block))
            else:
                others.append(TextPart(text=json.dumps(block, ensure_ascii=False)))
        if results:
            messages.append(Message(role="tool", parts=tuple(results)))
        if others or not results:
            messages.append(Message(role="user", parts=tuple(others)))
    return messages


# --- OpenAI ----------------------------------------------------------------------------


def _openai_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n\n".join(
        str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
    )


def _decode_openai_messages(raw: Iterable[dict[str, Any]]) -> tuple[str, list[Message]]:
    systems: list[str] = []
    messages: list[Message] = []
    call_names: dict[str, str] = {}
    for entry in raw:
        role = entry.get("role")
        if role in ("system", "developer"):
            systems.append(_openai_text(entry.get("content")))
        elif role == "tool":
            call_id = str(entry.get("tool_call_id"))
            result = ToolResultPart(
                call_id=call_id,
                name=call_names.get(call_id, ""),
                output=_openai_text(entry.get("content")),
            )
            # Consecutive tool messages answer one assistant batch: one engine message.
            if messages and messages[-1].role == "tool":
                messages[-1] = Message(role="tool", parts=(*messages[-1].parts, result))
            else:
                messages.append(Message(role="tool", parts=(result,)))
        elif role == "assistant":
            parts: list[Part] = []
            text = _openai_text(entry.get("content"))
            if text:
                parts.append(TextPart(text=text))
            for tool_call in entry.get("tool_calls") or []:
                function = tool_call.get("function") or {}
                call_names[str(tool_call.get("id"))] = str(function.get("name"))
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = {"_raw": function.get("arguments")}
                parts.append(
                    ToolCallPart(
                        id=str(tool_call.get("id")),
                        name=str(function.get("name")),
                        input=arguments if isinstance(arguments, dict) else {"_value": arguments},
                    )
                )
            messages.append(Message(role="assistant", parts=tuple(parts)))
        else:
            messages.append(
                Message(role="user", parts=(TextPart(text=_openai_text(entry.get("content"))),))
            )
    return "\n\n".join(systems), messages
