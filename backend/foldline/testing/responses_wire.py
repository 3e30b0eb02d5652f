"""The OpenAI Responses API request side, for the fake server: read, check, re-shape.

- `check_responses` refuses what the real API refuses for a stateless client: bad
  `input_image` / `input_file` items (`media_checks.check_responses_media`), a
  `previous_response_id` (nothing is stored with `store: false`, and a fake stores
  nothing at all), a missing `input`, a reasoning item whose encrypted content does not
  verify or is bound to another id, a reasoning item not followed by the item it
  preceded, a function call made after reasoning but handed back without that reasoning
  item, a function call output with no call before it, and a call with no output.
- `decode_responses` turns a body back into an engine `ModelRequest`, so the scripted
  steps and summary predicates work as on the other wires.
- `responses_as_chat` re-shapes a body into the Chat Completions body the same model
  would read, so the fake tokenizer, the prompt cache and the limits apply unchanged
  (images and PDFs become `image_url` and `file` parts, billed by the same formulas).

A call id the fake model gives after reasoning names that reasoning item
(`call_<item>_<n>`), so the server can tell, statelessly, which reasoning a call needs.
Only the calls after the last user message (the tool loop in progress) need theirs: the
API drops earlier turns' reasoning from the context anyway.
"""

from __future__ import annotations

import json
from typing import Any

from foldline.core.messages import (
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from foldline.providers.base import ModelRequest
from foldline.testing.codec import DEFAULT_MAX_OUTPUT
from foldline.testing.media_checks import check_responses_media
from foldline.testing.reasoning_rules import decrypt_reasoning
from foldline.testing.wire_errors import WireError, openai_error


def reasoning_call_id(item_id: str, n: int) -> str:
    """The id of the fake model's n-th call after reasoning item `item_id` (`rs_<hex>`)."""
    return f"call_{item_id.removeprefix('rs_')}_{n}"


def required_reasoning(call_id: str) -> str | None:
    """The reasoning item a call of the fake model needs before it, or None."""
    parts = call_id.split("_")
    if len(parts) == 3 and parts[0] == "call" and parts[1].startswith("fake"):
        return f"rs_{parts[1]}"
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _kind(item: dict[str, Any]) -> str:
    return str(item.get("type") or "message")


def check_responses(body: dict[str, Any]) -> WireError | None:
    if not body.get("model"):
        return openai_error(
            400,
            "Missing required parameter: 'model'.",
            param="model",
            code="missing_required_parameter",
        )
    previous = body.get("previous_response_id")
    if previous is not None:
        stored = (
            " Previous response cannot be used for this request as it has 'store' set to false."
            if body.get("store") is False
            else ""
        )
        return openai_error(
            400,
            f"Previous response with id '{previous}' not found.{stored}",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return openai_error(
            400,
            "Missing required parameter: 'input'.",
            param="input",
            code="missing_required_parameter",
        )
    items = [i for i in items if isinstance(i, dict)]
    return check_responses_media(items) or _check_items(items)


def _check_items(items: list[dict[str, Any]]) -> WireError | None:
    calls: set[str] = set()
    answered: set[str] = set()
    seen_reasoning: set[str] = set()
    # The API drops reasoning from before the last user message, so only the calls of
    # the tool loop in progress need theirs (a stricter reading would refuse every client
    # that leaves old reasoning out, as the API itself advises).
    loop_start = max((i for i, item in enumerate(items) if item.get("role") == "user"), default=-1)
    for index, item in enumerate(items):
        kind = _kind(item)
        if kind == "reasoning":
            item_id = str(item.get("id", ""))
            decrypted = decrypt_reasoning(str(item.get("encrypted_content") or ""))
            if decrypted is None:
                return openai_error(
                    400,
                    f"The encrypted content for item {item_id} could not be verified.",
                    param=f"input[{index}].encrypted_content",
                    code="invalid_encrypted_content",
                )
            if decrypted[0] != item_id:
                return openai_error(
                    400,
                    f"The encrypted content for item {item_id} could not be verified. Reason: "
                    "Encrypted content item_id did not match the target item id.",
                    param=f"input[{index}].encrypted_content",
                    code="invalid_encrypted_content",
                )
            following = items[index + 1] if index + 1 < len(items) else None
            if (
                following is None
                or _kind(following) == "reasoning"
                or following.get("role") == "user"
            ):
                return openai_error(
                    400,
                    f"Item '{item_id}' of type 'reasoning' was provided without its required "
                    "following item.",
                    param="input",
                )
            seen_reasoning.add(item_id)
        elif kind == "function_call":
            call_id = str(item.get("call_id", ""))
            needed = required_reasoning(call_id)
            if needed is not None and index > loop_start and needed not in seen_reasoning:
                name = item.get("id") or call_id
                return openai_error(
                    400,
                    f"Item '{name}' of type 'function_call' was provided without its required "
                    f"'reasoning' item: '{needed}'.",
                    param="input",
                )
            calls.add(call_id)
        elif kind == "function_call_output":
            call_id = str(item.get("call_id", ""))
            if call_id not in calls:
                return openai_error(
                    400,
                    f"No tool call found for function call output with call_id {call_id}.",
                    param="input",
                )
            answered.add(call_id)
    missing = sorted(calls - answered)
    if missing:
        return openai_error(
            400, f"No tool output found for function call {missing[0]}.", param="input"
        )
    return None


def decode_responses(body: dict[str, Any]) -> ModelRequest:
    """The engine request behind a Responses body (lenient, like `decode_request`)."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    messages: list[Message] = []
    names: dict[str, str] = {}
    pending: list[Part] = []  # an assistant message's parts, until its last call

    def flush() -> None:
        if pending:
            messages.append(Message(role="assistant", parts=tuple(pending)))
            pending.clear()

    for item in items or []:
        kind = _kind(item)
        if kind == "reasoning":
            flush()
            summary = _text(item.get("summary"))
            pending.append(
                ReasoningPart(
                    text=summary,
                    item_id=item.get("id"),
                    encrypted_content=item.get("encrypted_content"),
                )
            )
        elif kind == "function_call":
            names[str(item.get("call_id"))] = str(item.get("name"))
            try:
                arguments = json.loads(item.get("arguments") or "{}")
            except ValueError:
                arguments = {"_raw": item.get("arguments")}
            pending.append(
                ToolCallPart(
                    id=str(item.get("call_id")),
                    name=str(item.get("name")),
                    input=arguments if isinstance(arguments, dict) else {"_value": arguments},
                )
            )
        elif kind == "function_call_output":
            flush()
            result = ToolResultPart(
                call_id=str(item.get("call_id")),
                name=names.get(str(item.get("call_id")), ""),
                output=_text(item.get("output")),
            )
            if messages and messages[-1].role == "tool":
                messages[-1] = Message(role="tool", parts=(*messages[-1].parts, result))
            else:
                messages.append(Message(role="tool", parts=(result,)))
        elif item.get("role") == "assistant":
            if pending and any(isinstance(p, ToolCallPart) for p in pending):
                flush()
            pending.append(TextPart(text=_text(item.get("content"))))
        else:
            flush()
            messages.append(
                Message(role="user", parts=(TextPart(text=_text(item.get("content"))),))
            )
    flush()
    tools = [
        ToolSpec(
            name=str(t.get("name", "")),
            description=str(t.get("description", "")),
            input_schema=t.get("parameters") or {"type": "object"},
        )
        for t in body.get("tools") or []
        if t.get("type") == "function"
    ]
    temperature = body.get("temperature")
    return ModelRequest(
        model=str(body.get("model", "")),
        system=str(body.get("instructions") or ""),
        messages=messages,
        tools=tools,
        max_output_tokens=int(body.get("max_output_tokens") or DEFAULT_MAX_OUTPUT),
        temperature=float(temperature) if temperature is not None else None,
    )


def _chat_content(item: dict[str, Any]) -> Any:
    """A message item's content as Chat Completions content: text, or for one that holds
    images or files the parts that bill them alike (`image_url`, `file`)."""
    content = item.get("content")
    if not isinstance(content, list) or not any(
        isinstance(p, dict) and p.get("type") in ("input_image", "input_file") for p in content
    ):
        return _text(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": part.get("image_url", "")}})
        elif kind == "input_file":
            file = {"filename": part.get("filename"), "file_data": part.get("file_data", "")}
            parts.append({"type": "file", "file": file})
        elif isinstance(part, dict) and "text" in part:
            parts.append({"type": "text", "text": str(part["text"])})
    return parts


def responses_as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions body the model reads for a Responses body: instructions as
    the system message, items as messages (reasoning items are not part of the prompt),
    tools in the chat shape, `max_output_tokens` as `max_completion_tokens`."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        kind = _kind(item)
        if kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments", "")},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            elif last is not None and last["role"] == "assistant" and last.get("content"):
                last["tool_calls"] = [call]
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": _text(item.get("output")),
                }
            )
        elif kind == "message":
            messages.append({"role": str(item.get("role", "user")), "content": _chat_content(item)})
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = [
        {
            "type": "function",
            "function": {k: v for k, v in t.items() if k not in ("type", "strict")},
        }
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function"
    ]
    if tools:
        chat["tools"] = tools
    if body.get("max_output_tokens") is not None:
        chat["max_completion_tokens"] = body["max_output_tokens"]
    if body.get("prompt_cache_key") is not None:
        chat["prompt_cache_key"] = body["prompt_cache_key"]
    return chat
