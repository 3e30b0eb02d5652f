"""Where a request marks Anthropic's prompt cache, shared by the provider and the fakes.

Anthropic caches only what a request marks, with at most 4 `cache_control` breakpoints
(a fifth is refused with a 400). A conversation's request uses three:

1. the end of the stable prefix: the system prompt (tools come before it in the cache's
   order), which never changes within a conversation;
2. the fold's summary, the start of the model's view, which changes only on a fold;
3. the newest block, through the top-level automatic `cache_control`, which moves with
   the conversation without rewriting any earlier block: two consecutive requests'
   bodies are byte-identical up to the new message, so each reads the previous one's
   prefix back.

The first two keep the cache useful when the third misses: after a fold, the tools and
system prompt are still read back; the summary is read back by every turn until the
next fold. Everything else is serialized deterministically by `foldline.core.wire`.

A summary asked after the view (its last block a `<fold-request>`, `core/prompts.py`)
uses the fourth: the view's end, the block before the request. The request itself is
never sent again, but the view up to the last answer is what the next turn sends before
its new message, so that turn reads the answer back instead of writing it again.
"""

from __future__ import annotations

from typing import Any

from foldline.core.prompts import is_fold_request
from foldline.core.wire import (
    CACHE_BREAKPOINT,
    to_anthropic_messages,
    to_anthropic_system,
    to_anthropic_tools,
)
from foldline.providers.base import ModelRequest

MAX_ANTHROPIC_BREAKPOINTS = 4
"""The API's limit on `cache_control` markers in one request (top-level included)."""


def anthropic_prompt_fields(request: ModelRequest) -> dict[str, Any]:
    """`system`, `tools`, `messages` and the top-level `cache_control` of a request."""
    cache = request.cache_key is not None
    fields: dict[str, Any] = {}
    if request.system:
        fields["system"] = to_anthropic_system(request.system, cache=cache)
    if request.tools:
        tools = to_anthropic_tools(request.tools)
        if cache and not request.system:
            tools[-1]["cache_control"] = dict(CACHE_BREAKPOINT)
        fields["tools"] = tools
    summary = request.stable_prefix - 1 if cache and request.stable_prefix > 0 else None
    fields["messages"] = to_anthropic_messages(request.messages, cache_after=summary)
    if cache:
        _mark_view_end(fields["messages"])
        fields["cache_control"] = dict(CACHE_BREAKPOINT)
    return fields


def _mark_view_end(messages: list[dict[str, Any]]) -> None:
    """In a summary asked after the view, a breakpoint on the view's last block (before
    the fold request; thinking blocks may not carry one)."""
    if not messages or not messages[-1]["content"]:
        return
    last = messages[-1]["content"][-1]
    if last.get("type") != "text" or not is_fold_request(last.get("text", "")):
        return
    earlier = [block for message in messages for block in message["content"]][:-1]
    for block in reversed(earlier):
        if block["type"] not in ("thinking", "redacted_thinking"):
            block["cache_control"] = dict(CACHE_BREAKPOINT)
            return
