"""The bodies of the server-sent events of a turn or fold (docs/api.md), in camelCase.

The chat service builds its events from these models and the server sends
`model_dump(by_alias=True)` of them, so an event has exactly one shape in code. Where an
event carries an API object (a message, a part, the context's numbers) it is that
object's schema, or a subclass adding the event's own fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import SerializerFunctionWrapHandler, model_serializer

from foldline.api.schemas import ApiModel, SummarizedRangeOut
from foldline.api.schemas_context import ContextStatsOut
from foldline.api.schemas_messages import (
    MessageOut,
    StoredMessage,
    ToolCallPartOut,
    ToolResultPartOut,
    part_out,
)
from foldline.core.messages import ToolCallPart, ToolResultPart
from foldline.core.state import CompactionState


class MessageEvent(ApiModel):
    """`message.created` and `message.completed`."""

    message: MessageOut

    @classmethod
    def of(
        cls, record: StoredMessage, api_start_index: int, sibling_ids: list[str] | None = None
    ) -> MessageEvent:
        return cls(message=MessageOut.from_record(record, api_start_index, sibling_ids=sibling_ids))


class AssistantDelta(ApiModel):
    """`assistant.delta`: append `text` to the message's text (or reasoning)."""

    message_id: str
    kind: Literal["text", "reasoning"]
    text: str


class ToolCallEventOut(ToolCallPartOut):
    """`tool.call`: the part, and the assistant message it belongs to."""

    message_id: str

    @classmethod
    def of(cls, message_id: str, part: ToolCallPart) -> ToolCallEventOut:
        return cls(message_id=message_id, **dict(part_out(part)))


class ToolResultEventOut(ToolResultPartOut):
    """`tool.result`: the part, and the tool message it belongs to."""

    message_id: str

    @classmethod
    def of(cls, message_id: str, part: ToolResultPart) -> ToolResultEventOut:
        return cls(message_id=message_id, **dict(part_out(part)))


class ApprovalRequired(ApiModel):
    """`tool.approval_required`: an MCP call waits for the person's decision."""

    call_id: str
    server: str
    tool: str
    name: str
    """What the model called (`SERVER__TOOL`)."""
    arguments: dict[str, Any]


ApprovalDecision = Literal["allow", "always", "deny"]


class ApprovalResolved(ApiModel):
    """`tool.approval_resolved`: the wait ended (from any client)."""

    call_id: str
    decision: ApprovalDecision


class ElicitationRequired(ApiModel):
    """`tool.elicitation_required`: an MCP server asks the person something during a call.

    Form mode: `requestedSchema` is a flat JSON schema (strings, numbers, booleans, enums)
    to build the form from. URL mode: `url` is a page the person may choose to open."""

    call_id: str
    elicitation_id: str
    server: str
    message: str
    mode: Literal["form", "url"]
    requested_schema: dict[str, Any]
    url: str | None = None


class ElicitationResolved(ApiModel):
    """`tool.elicitation_resolved`: the question was answered (from any client) or dropped."""

    call_id: str
    elicitation_id: str
    action: Literal["accept", "decline", "cancel"]


class ToolProgress(ApiModel):
    """`tool.progress`: how far a running MCP call is, as its server reports it."""

    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


class Notice(ApiModel):
    """`notice`: something the person should know that did not stop the turn."""

    code: Literal[
        "mcp_server_failed",
        "mcp_tools_limited",
        "mcp_server_awaiting_approval",
        "mcp_sign_in_required",
    ]
    server: str
    message: str


class CallUsageOut(ApiModel):
    """What one model call used, as the provider reported it."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    total_input: int
    reasoning_tokens: int = 0
    """Of `outputTokens`, those spent reasoning (billed as output); 0 where the provider
    does not split them out (Anthropic counts thinking in `outputTokens`)."""


class UsageEvent(CallUsageOut):
    """`usage`: one model call's usage, for the answer being written."""

    message_id: str


class CompactionStarted(ApiModel):
    trigger: str
    reason: str
    prepared: bool = False
    """True when a summary written in the background is being committed."""
    waiting: bool = False
    """True when the turn waits for that summary (only at the hard threshold)."""


class CompactionCompleted(ApiModel):
    version: int
    strategy: str
    trigger: str
    turn: int
    tokens_before: int
    tokens_after: int
    api_start_index: int
    summarized_range: SummarizedRangeOut
    degraded: bool
    details_total: int
    details_kept: int
    details_appended: int
    prepared: bool = False
    """True for a fold whose summary was written in the background."""
    resummarized: bool = False
    """True when a model summary replaced an emergency digest."""

    @classmethod
    def of(
        cls,
        state: CompactionState,
        turn: int,
        *,
        prepared: bool = False,
        resummarized: bool = False,
    ) -> CompactionCompleted:
        """The event of a committed fold (`turn`: the history length it was made at)."""
        fields = state.model_dump() | {"turn": turn}
        return cls.model_validate(fields | {"prepared": prepared, "resummarized": resummarized})


class CompactionFailed(ApiModel):
    trigger: str
    reason: str


class PruneCompleted(ApiModel):
    pruned_calls: int
    reclaimed_tokens: int


class ErrorEvent(ApiModel):
    """`error`: a provider error code, `internal` or `disk_full`."""

    code: str
    message: str
    retryable: bool


class Done(ApiModel):
    """`done`: always the last event; `{}`, or `{"cancelled": true}` after Stop."""

    cancelled: bool = False

    @model_serializer(mode="wrap")
    def _omit_not_cancelled(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `{}` is the documented body of a turn that ended by itself.
        data = handler(self)
        if not self.cancelled:
            data.pop("cancelled", None)
        return data


EventBody = (
    MessageEvent
    | AssistantDelta
    | ToolCallEventOut
    | ToolResultEventOut
    | ApprovalRequired
    | ApprovalResolved
    | ElicitationRequired
    | ElicitationResolved
    | ToolProgress
    | Notice
    | UsageEvent
    | ContextStatsOut
    | CompactionStarted
    | CompactionCompleted
    | CompactionFailed
    | PruneCompleted
    | ErrorEvent
    | Done
)
"""Every event body; each kind of `foldline.chat.events.ChatEvent` holds one of them."""

EVENT_BODIES: dict[str, type[ApiModel]] = {
    "message.created": MessageEvent,
    "assistant.delta": AssistantDelta,
    "tool.call": ToolCallEventOut,
    "tool.result": ToolResultEventOut,
    "tool.approval_required": ApprovalRequired,
    "tool.approval_resolved": ApprovalResolved,
    "tool.elicitation_required": ElicitationRequired,
    "tool.elicitation_resolved": ElicitationResolved,
    "tool.progress": ToolProgress,
    "notice": Notice,
    "usage": UsageEvent,
    "context.stats": ContextStatsOut,
    "compaction.started": CompactionStarted,
    "compaction.completed": CompactionCompleted,
    "compaction.failed": CompactionFailed,
    "prune.completed": PruneCompleted,
    "message.completed": MessageEvent,
    "error": ErrorEvent,
    "done": Done,
}
"""Which body each event name carries (the docs' table, and the UI's typedefs)."""
