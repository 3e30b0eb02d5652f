"""The events of a turn, as the server forwards them over SSE (docs/api.md).

`ChatEvent` is a union of one frozen dataclass per event kind, told apart by its `name`
literal (the SSE `event:` field), each holding its own body model from
`foldline.api.events`. A kind's body is fixed by its type, so a `tool.call` cannot carry
a usage body, and a reader that matches on the kinds ends with `assert_never`, which the
type checker turns into an error when a kind is added and not handled.

The server sends the body's `model_dump(by_alias=True)` and reshapes nothing, so the
body models are the one place the event contract lives in code. Callers name the kinds
through the module (`events.Done()`, `events.ToolCall(...)`): several kinds share a name
with their body model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeAlias, TypeVar, get_args

from foldline.api import events as bodies
from foldline.api.schemas import ApiModel
from foldline.api.schemas_context import ContextStatsOut

Body = TypeVar("Body", bound=ApiModel)


@dataclass(frozen=True)
class _Event(Generic[Body]):
    body: Body

    def __post_init__(self) -> None:
        # The type checker holds each kind to its body; this catches an untyped caller,
        # whose body would reach the client in a shape its handler does not expect.
        name = _kind_name(type(self))
        expected = bodies.EVENT_BODIES[name]
        if not isinstance(self.body, expected):
            raise TypeError(f"{name} carries {expected.__name__}, not {self.body!r}")

    @property
    def data(self) -> dict[str, Any]:
        """The body as JSON-ready camelCase: what the `data:` line of the event holds."""
        return self.body.model_dump(mode="json", by_alias=True)


@dataclass(frozen=True)
class MessageCreated(_Event[bodies.MessageEvent]):
    name: Literal["message.created"] = field(default="message.created", init=False)


@dataclass(frozen=True)
class AssistantDelta(_Event[bodies.AssistantDelta]):
    name: Literal["assistant.delta"] = field(default="assistant.delta", init=False)


@dataclass(frozen=True)
class ToolCall(_Event[bodies.ToolCallEventOut]):
    name: Literal["tool.call"] = field(default="tool.call", init=False)


@dataclass(frozen=True)
class ToolResult(_Event[bodies.ToolResultEventOut]):
    name: Literal["tool.result"] = field(default="tool.result", init=False)


@dataclass(frozen=True)
class ApprovalRequired(_Event[bodies.ApprovalRequired]):
    name: Literal["tool.approval_required"] = field(default="tool.approval_required", init=False)


@dataclass(frozen=True)
class ApprovalResolved(_Event[bodies.ApprovalResolved]):
    name: Literal["tool.approval_resolved"] = field(default="tool.approval_resolved", init=False)


@dataclass(frozen=True)
class ElicitationRequired(_Event[bodies.ElicitationRequired]):
    name: Literal["tool.elicitation_required"] = field(
        default="tool.elicitation_required", init=False
    )


@dataclass(frozen=True)
class ElicitationResolved(_Event[bodies.ElicitationResolved]):
    name: Literal["tool.elicitation_resolved"] = field(
        default="tool.elicitation_resolved", init=False
    )


@dataclass(frozen=True)
class ToolProgress(_Event[bodies.ToolProgress]):
    name: Literal["tool.progress"] = field(default="tool.progress", init=False)


@dataclass(frozen=True)
class Notice(_Event[bodies.Notice]):
    name: Literal["notice"] = field(default="notice", init=False)


@dataclass(frozen=True)
class Usage(_Event[bodies.UsageEvent]):
    name: Literal["usage"] = field(default="usage", init=False)


@dataclass(frozen=True)
class ContextStats(_Event[ContextStatsOut]):
    name: Literal["context.stats"] = field(default="context.stats", init=False)


@dataclass(frozen=True)
class CompactionStarted(_Event[bodies.CompactionStarted]):
    name: Literal["compaction.started"] = field(default="compaction.started", init=False)


@dataclass(frozen=True)
class CompactionCompleted(_Event[bodies.CompactionCompleted]):
    name: Literal["compaction.completed"] = field(default="compaction.completed", init=False)


@dataclass(frozen=True)
class CompactionFailed(_Event[bodies.CompactionFailed]):
    name: Literal["compaction.failed"] = field(default="compaction.failed", init=False)


@dataclass(frozen=True)
class PruneCompleted(_Event[bodies.PruneCompleted]):
    name: Literal["prune.completed"] = field(default="prune.completed", init=False)


@dataclass(frozen=True)
class MessageCompleted(_Event[bodies.MessageEvent]):
    name: Literal["message.completed"] = field(default="message.completed", init=False)


@dataclass(frozen=True)
class Error(_Event[bodies.ErrorEvent]):
    name: Literal["error"] = field(default="error", init=False)


@dataclass(frozen=True)
class Done(_Event[bodies.Done]):
    """Always the last event of a turn; `Done()` when it ended by itself."""

    body: bodies.Done = field(default_factory=bodies.Done)
    name: Literal["done"] = field(default="done", init=False)


ChatEvent: TypeAlias = (
    MessageCreated
    | AssistantDelta
    | ToolCall
    | ToolResult
    | ApprovalRequired
    | ApprovalResolved
    | ElicitationRequired
    | ElicitationResolved
    | ToolProgress
    | Notice
    | Usage
    | ContextStats
    | CompactionStarted
    | CompactionCompleted
    | CompactionFailed
    | PruneCompleted
    | MessageCompleted
    | Error
    | Done
)
"""Every event of a turn or fold; `name` tells them apart."""

EVENT_KINDS: tuple[type[ChatEvent], ...] = get_args(ChatEvent)

EventName = Literal[
    "message.created",
    "assistant.delta",
    "tool.call",
    "tool.result",
    "tool.approval_required",
    "tool.approval_resolved",
    "tool.elicitation_required",
    "tool.elicitation_resolved",
    "tool.progress",
    "notice",
    "usage",
    "context.stats",
    "compaction.started",
    "compaction.completed",
    "compaction.failed",
    "prune.completed",
    "message.completed",
    "error",
    "done",
]


def _kind_name(kind: type[Any]) -> str:
    """The wire name a kind of event is sent under (its `name` field's one value)."""
    return kind.__dataclass_fields__["name"].default


_BY_NAME: dict[str, type[ChatEvent]] = {_kind_name(kind): kind for kind in EVENT_KINDS}


def event_from_wire(name: str, data: dict[str, Any]) -> ChatEvent:
    """The event an SSE `event:` name and its `data:` JSON stand for (the way back of
    `data`, for readers of the stream such as the tests' and benchmarks' clients)."""
    kind = _BY_NAME.get(name)
    if kind is None:
        raise ValueError(f"no event is called {name!r}")
    body_model = bodies.EVENT_BODIES[name]
    return kind(body_model.model_validate(data))  # type: ignore[arg-type]
