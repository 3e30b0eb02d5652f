"""The request rules the fake server enforces, answered with the providers' real errors.

These are the rules a context-folding client can break: required fields, Anthropic's
role alternation, non-empty content and no final assistant message (prefill), tool-call
pairing on both wires, the model's output limit and the context window. Each check
returns the first `WireError` the real API would report, or None when the request is
acceptable.

Anthropic has, since 2024, silently merged consecutive same-role turns; this server is
stricter and rejects them with the error the API used to return, because a client that
sends alternating turns (as Foldline's wire encoder does) is correct against both
behaviours, and an unmerged turn usually means a bug in building the view.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from dataclasses import dataclass
from typing import Any

from foldline.testing import wire_errors
from foldline.testing.codec import Wire
from foldline.testing.media_checks import check_anthropic_media, check_openai_part
from foldline.testing.wire_errors import WireError, bad_request, openai_error


@dataclass(frozen=True)
class ModelLimits:
    """A fake model's limits. `context_window=0` means unlimited."""

    context_window: int
    max_output_tokens: int


def check_structure(body: dict[str, Any], wire: Wire) -> WireError | None:
    """Required fields, message shapes and tool pairing (everything but token limits)."""
    if wire == "anthropic":
        return _anthropic_structure(body)
    return _openai_structure(body)


def check_limits(
    body: dict[str, Any], wire: Wire, limits: ModelLimits, input_tokens: int
) -> WireError | None:
    """The output limit, then the context window, as the provider words them."""
    model = str(body.get("model"))
    if wire == "anthropic":
        requested: int | None = int(body["max_tokens"])
    else:
        explicit = body.get("max_completion_tokens") or body.get("max_tokens")
        requested = int(explicit) if explicit is not None else None
    if requested is not None and requested > limits.max_output_tokens:
        return wire_errors.output_limit_exceeded(wire, model, requested, limits.max_output_tokens)
    window = limits.context_window
    if window <= 0:
        return None
    if input_tokens > window:
        return wire_errors.prompt_too_long(wire, input_tokens, window)
    if requested is not None and input_tokens + requested > window:
        return wire_errors.prompt_and_output_too_long(wire, input_tokens, requested, window)
    return None


# --- Anthropic -------------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)]


def _anthropic_structure(body: dict[str, Any]) -> WireError | None:
    for required in ("model", "max_tokens", "messages"):
        if required not in body:
            return bad_request("anthropic", f"{required}: Field required")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return bad_request("anthropic", "messages: at least one message is required")
    cache_error = _anthropic_cache_markers(body)
    if cache_error is not None:
        return cache_error
    for i, message in enumerate(messages):
        content = message.get("content")
        is_final_assistant = i == len(messages) - 1 and message.get("role") == "assistant"
        if not content and not is_final_assistant:
            return bad_request(
                "anthropic",
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message",
            )
        for block in _blocks(content or []):
            if block.get("type") == "text":
                text = str(block.get("text", ""))
                if not text:
                    return bad_request(
                        "anthropic", "messages: text content blocks must be non-empty"
                    )
                if not text.strip():
                    return bad_request(
                        "anthropic",
                        "messages: text content blocks must contain non-whitespace text",
                    )
    if messages[0].get("role") != "user":
        return bad_request("anthropic", 'messages: first message must use the "user" role')
    if messages[-1].get("role") == "assistant":
        # Claude models since 4.6 refuse a final assistant message (a "prefill"); older
        # ones continued it. The stricter rule is what a client must meet today.
        return bad_request(
            "anthropic",
            "This model does not support assistant message prefill. The conversation must "
            "end with a user message.",
        )
    for previous, message in itertools.pairwise(messages):
        if previous.get("role") == message.get("role"):
            role = message.get("role")
            return bad_request(
                "anthropic",
                'messages: roles must alternate between "user" and "assistant", but found '
                f'multiple "{role}" roles in a row',
            )
    return _anthropic_pairing(messages) or check_anthropic_media(body)


MAX_CACHE_BREAKPOINTS = 4


def _anthropic_cache_markers(body: dict[str, Any]) -> WireError | None:
    """At most 4 `cache_control` markers (the top-level one included), each of type
    `ephemeral` with a `5m` or `1h` lifetime, and none on a thinking block."""
    markers: list[Any] = []
    if body.get("cache_control") is not None:
        markers.append(body["cache_control"])
    markers += [t["cache_control"] for t in body.get("tools") or [] if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        markers += [b["cache_control"] for b in _blocks(system) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        for k, block in enumerate(_blocks(message.get("content") or [])):
            if "cache_control" not in block:
                continue
            if block.get("type") in ("thinking", "redacted_thinking"):
                return bad_request(
                    "anthropic",
                    f"messages.{i}.content.{k}.thinking.cache_control: Extra inputs are not "
                    "permitted",
                )
            markers.append(block["cache_control"])
    for marker in markers:
        if not isinstance(marker, dict) or marker.get("type") != "ephemeral":
            return bad_request("anthropic", "cache_control.type: Input should be 'ephemeral'")
        if marker.get("ttl", "5m") not in ("5m", "1h"):
            return bad_request("anthropic", "cache_control.ttl: Input should be '5m' or '1h'")
    if len(markers) > MAX_CACHE_BREAKPOINTS:
        return bad_request(
            "anthropic",
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
            f"provided. Found {len(markers)}.",
        )
    return None


def _anthropic_pairing(messages: list[dict[str, Any]]) -> WireError | None:
    for i, message in enumerate(messages):
        blocks = _blocks(message.get("content") or [])
        if message.get("role") == "user":
            previous = _blocks(messages[i - 1].get("content") or []) if i > 0 else []
            offered = {b.get("id") for b in previous if b.get("type") == "tool_use"}
            for k, block in enumerate(blocks):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in offered:
                    return bad_request(
                        "anthropic",
                        f"messages.{i}.content.{k}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block.get('tool_use_id')}. Each "
                        "`tool_result` block must have a corresponding `tool_use` block in "
                        "the previous message.",
                    )
            continue
        calls = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
        if not calls:
            continue
        following = _blocks(messages[i + 1].get("content") or []) if i + 1 < len(messages) else []
        answered = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
        missing = [c for c in calls if c not in answered]
        if missing:
            return bad_request(
                "anthropic",
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message.",
            )
    return None


# --- OpenAI ----------------------------------------------------------------------------


def _openai_structure(body: dict[str, Any]) -> WireError | None:
    if not body.get("model"):
        return openai_error(400, "you must provide a model parameter")
    if "messages" not in body:
        return openai_error(
            400,
            "Missing required parameter: 'messages'.",
            param="messages",
            code="missing_required_parameter",
        )
    key = body.get("prompt_cache_key")
    if key is not None and not isinstance(key, str):
        return openai_error(
            400,
            "Invalid type for 'prompt_cache_key': expected a string, but got "
            f"{type(key).__name__} instead.",
            param="prompt_cache_key",
            code="invalid_type",
        )
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return openai_error(
            400,
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but "
            "got an empty array instead.",
            param="messages",
            code="empty_array",
        )
    for j, message in enumerate(messages):
        error = _openai_content(j, message)
        if error is not None:
            return error
    return _openai_pairing(messages)


_OPENAI_PART_TYPES = ("text", "image_url", "input_audio", "refusal", "file")
_DATA_URL = re.compile(r"^data:(image/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/]*={0,2})$")


def _openai_content(index: int, message: dict[str, Any]) -> WireError | None:
    """Content parts as the API checks them: known types only, image and file parts only
    in user messages, an image URL either http(s) or a base64 data URL of a supported
    image whose bytes are that image type, a file part a named PDF."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    role = message.get("role")
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        where = f"messages[{index}].content[{k}]"
        if kind not in _OPENAI_PART_TYPES:
            return openai_error(
                400,
                f"Invalid value: '{kind}'. Supported values are: 'text', 'image_url', "
                "'input_audio', 'refusal', and 'file'.",
                param=f"{where}.type",
                code="invalid_value",
            )
        if kind not in ("image_url", "file"):
            continue
        if role != "user":
            return openai_error(
                400,
                f"Invalid '{where}'. Image URLs are only allowed for messages with role "
                f"'user', but this message with role '{role}' contains an image URL.",
                param=where,
                code="invalid_value",
            )
        if kind == "file":
            error = check_openai_part(where, part)
            if error is not None:
                return error
            continue
        url = str((part.get("image_url") or {}).get("url", ""))
        if url.startswith(("http://", "https://")):
            continue
        data = _DATA_URL.match(url)
        if data is None or not _is_base64(data.group(2)):
            return openai_error(
                400,
                f"Invalid '{where}.image_url.url'. Expected a base64-encoded data URL with "
                "an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), "
                "or an http(s) URL.",
                param=f"{where}.image_url.url",
                code="invalid_value",
            )
        error = check_openai_part(where, part)
        if error is not None:
            return error
    return None


def _is_base64(data: str) -> bool:
    try:
        return bool(base64.b64decode(data, validate=True))
    except binascii.Error:
        return False


def _unanswered(index: int, missing: list[str]) -> WireError:
    return openai_error(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        f"response messages: {', '.join(missing)}",
        param=f"messages.[{index}].role",
    )


def _openai_pairing(messages: list[dict[str, Any]]) -> WireError | None:
    # One pass: an assistant message with tool_calls opens a run that only tool messages
    # may continue; the first other message closes it and every call must be answered.
    open_calls: list[str] | None = None
    open_index = 0
    answered: set[str] = set()
    for j, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            if open_calls is None:
                return openai_error(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{j}].role",
                )
            if call_id not in open_calls:
                return openai_error(
                    400,
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in "
                    "'tool_calls' of previous message.",
                    param=f"messages.[{j}].tool_call_id",
                )
            answered.add(call_id)
            continue
        if open_calls is not None:
            missing = [c for c in open_calls if c not in answered]
            if missing:
                return _unanswered(open_index, missing)
            open_calls = None
        calls = message.get("tool_calls") or []
        if message.get("role") == "assistant" and calls:
            open_calls = [str(c.get("id")) for c in calls]
            open_index = j
            answered = set()
    if open_calls is not None:
        missing = [c for c in open_calls if c not in answered]
        if missing:
            return _unanswered(open_index, missing)
    return None
