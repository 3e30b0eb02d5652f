"""What of a conversation's cached prompt prefix changed since its last fold gate.

A provider's prompt cache holds the prefix of the last request: the system prompt, the
tools offered and the reasoning settings before the messages. When one of those changes
the cache is read afresh anyway, so a prepared fold can land then at no extra cost (the
gate's `prefix_changed` fact). The gate of each conversation keeps one `PrefixWatch`,
the one owner of what the last gate saw.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal

from foldline.core.reasoning import Effort

if TYPE_CHECKING:
    from foldline.chat.context import ConversationContext

PrefixChange = Literal["reasoning effort", "tools offered"]


class PrefixWatch:
    """The reasoning effort and the tools offered at a conversation's last gate."""

    def __init__(self) -> None:
        self.effort: Effort | None = None
        """The reasoning effort of the last gate's view: a different one breaks the
        prompt cache, which makes it a good moment to fold."""
        self.tool_print: str | None = None
        """The tools offered at the last gate: a change breaks the prompt cache."""

    def changed(self, ctx: ConversationContext) -> PrefixChange | None:
        """What of the cached prefix differs from the last gate (the reasoning effort;
        the tools offered: an MCP server's list changed, a server came or went), and
        remember `ctx`'s for the next gate. None at the first gate."""
        effort_changed = self.effort is not None and self.effort != ctx.reasoning_effort
        self.effort = ctx.reasoning_effort
        tools = json.dumps(
            [[t.name, t.description, t.input_schema] for t in ctx.tools], sort_keys=True
        )
        tools_changed = self.tool_print is not None and self.tool_print != tools
        self.tool_print = tools
        if effort_changed:
            return "reasoning effort"
        return "tools offered" if tools_changed else None
