"""The events of a turn, as the server forwards them over SSE (docs/api.md).

Each event is a name and a JSON-ready dict in camelCase; the server does not reshape
them, so this module is the single place the event contract lives in code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EventName = Literal[
    "message.created",
    "assistant.delta",
    "tool.call",
    "tool.result",
    "tool.approval_required",
    "tool.approval_resolved",
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


@dataclass(frozen=True)
class ChatEvent:
    name: EventName
    data: dict[str, Any] = field(default_factory=dict)
