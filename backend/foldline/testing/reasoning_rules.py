"""The reasoning rules the fake server enforces, with the providers' real errors.

The fake models sign what they think, as the real ones do: an Anthropic thinking block
carries a signature over its text, an OpenAI reasoning item encrypted content bound to
its id. A request that hands reasoning back is checked the way the APIs check it:

- Anthropic, thinking on: inside a tool loop (the last user turn holds tool results)
  the last assistant turn must start with a thinking or redacted_thinking block;
  every thinking block's signature must match its text; `budget_tokens` is at least
  1024 and below `max_tokens`; no temperature but 1.
- OpenAI Chat Completions: the families that refuse function tools together with a
  reasoning effort (GPT-5.4 and later, GPT-6) refuse them, and on GPT-5.6 and GPT-6 an
  absent effort counts as reasoning.
- OpenAI Responses (`foldline.testing.responses_wire`): a function call the model made
  after reasoning needs that reasoning item before it; an encrypted item must verify.

Where the fake thinks: when the request asks for it (Anthropic `thinking`, OpenAI
`reasoning.effort` other than none/minimal) and the script gave the reply no reasoning,
the fake writes a short one, so a session "with reasoning on" exercises every rule.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import replace
from typing import Any

from foldline.core.reasoning import chat_reasons_by_default, chat_refuses_tools_with_reasoning
from foldline.testing.steps import Reply
from foldline.testing.wire_errors import WireError, bad_request, openai_error

_SECRET = b"foldline-fake-model"
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def _mac(*pieces: str) -> str:
    digest = hashlib.sha256(_SECRET + "\x00".join(pieces).encode())
    return digest.hexdigest()[:40]


def thinking_signature(text: str) -> str:
    """The fake model's signature over a thinking block's text."""
    return "EqQB" + base64.b64encode(bytes.fromhex(_mac("thinking", text))).decode()


def encrypted_reasoning(item_id: str, text: str) -> str:
    """The fake model's `encrypted_content` of a reasoning item: bound to its id."""
    payload = json.dumps({"id": item_id, "text": text, "mac": _mac("reasoning", item_id, text)})
    return "gAAAAA" + base64.urlsafe_b64encode(payload.encode()).decode()


def decrypt_reasoning(encrypted: str) -> tuple[str, str] | None:
    """(item id, text) of an encrypted reasoning item the fake made, or None."""
    if not encrypted.startswith("gAAAAA"):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(encrypted[6:].encode()))
        item_id, text, mac = str(data["id"]), str(data["text"]), str(data["mac"])
    except (ValueError, KeyError, TypeError):
        return None
    return (item_id, text) if mac == _mac("reasoning", item_id, text) else None


FAKE_THOUGHT = "The person asked something; I consider what they need and how to answer it."
"""What the fake model reasons when reasoning is asked for and the script gave none."""


def with_reasoning(reply: Reply, asked: bool) -> Reply:
    """The reply with reasoning when it was asked for and none is scripted."""
    if asked and not reply.reasoning:
        return replace(reply, reasoning=FAKE_THOUGHT)
    return reply


def signed(reply: Reply) -> Reply:
    """The reply with its thinking signed (unless the script set a signature of its own),
    once it is final: after the `max_tokens` cut."""
    if reply.reasoning and reply.reasoning_signature == Reply.reasoning_signature:
        reply = replace(reply, reasoning_signature=thinking_signature(reply.reasoning))
    return reply


# --- Anthropic -------------------------------------------------------------------------


def anthropic_thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def check_anthropic_thinking(body: dict[str, Any]) -> WireError | None:
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return bad_request(
                "anthropic",
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
            )
        if int(body.get("max_tokens") or 0) <= budget:
            return bad_request(
                "anthropic",
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult "
                f"our documentation at {THINKING_DOCS}#max-tokens-and-context-window-size",
            )
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for i, message in enumerate(messages):
        for k, block in enumerate(_blocks(message.get("content"))):
            if block.get("type") != "thinking":
                continue
            if block.get("signature") != thinking_signature(str(block.get("thinking", ""))):
                return bad_request(
                    "anthropic",
                    f"messages.{i}.content.{k}: Invalid `signature` in `thinking` block",
                )
    if not anthropic_thinking_on(body):
        return None
    if body.get("temperature") not in (None, 1, 1.0):
        return bad_request(
            "anthropic",
            "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode.",
        )
    if not messages or not any(
        b.get("type") == "tool_result" for b in _blocks(messages[-1].get("content"))
    ):
        return None
    index = len(messages) - 2
    if index < 0 or messages[index].get("role") != "assistant":
        return None
    blocks = _blocks(messages[index].get("content"))
    first = blocks[0].get("type") if blocks else "nothing"
    if first in ("thinking", "redacted_thinking"):
        return None
    return bad_request(
        "anthropic",
        f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
        f"found `{first}`. When `thinking` is enabled, a final `assistant` message must start "
        "with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
        "blocks). We recommend you include thinking blocks from previous turns. To avoid "
        "this requirement, disable `thinking`. Please consult our documentation at "
        f"{THINKING_DOCS}",
    )


# --- OpenAI Chat Completions -------------------------------------------------------------


def openai_effort_asked(effort: Any) -> bool:
    """Whether an OpenAI effort makes the fake think (none and minimal do not)."""
    return isinstance(effort, str) and effort not in ("none", "minimal")


def check_openai_chat_reasoning(body: dict[str, Any]) -> WireError | None:
    model = str(body.get("model", ""))
    if not body.get("tools") or not chat_refuses_tools_with_reasoning(model):
        return None
    effort = body.get("reasoning_effort")
    if effort == "none" or (effort is None and not chat_reasons_by_default(model)):
        return None
    return openai_error(
        400,
        f"Function tools with reasoning_effort are not supported for {model} in "
        "/v1/chat/completions. To use function tools, use /v1/responses or set "
        "reasoning_effort to 'none'.",
        param="reasoning_effort",
    )
