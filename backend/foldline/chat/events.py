"""The events of a turn, as the server forwards them over SSE (docs/api.md).

Each event is a name and a body from `foldline.api.events`; the server sends the body's
`model_dump(by_alias=True)` and reshapes nothing, so those models are the one place the
event contract lives in code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from foldline.api.events import EVENT_BODIES, Done, EventBody

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


@dataclass(frozen=True)
class ChatEvent:
    name: EventName
    body: EventBody = field(default_factory=Done)

    def __post_init__(self) -> None:
        # A body under the wrong name would reach the client in a shape its handler for
        # that name does not expect; refuse it where it is made.
        expected = EVENT_BODIES.get(self.name)
        if expected is None:
            raise TypeError(f"{self.name} has no body model: add one to api/events.py")
        if not isinstance(self.body, expected):
            raise TypeError(f"{self.name} carries {expected.__name__}, not {self.body!r}")

    @property
    def data(self) -> dict[str, Any]:
        """The body as JSON-ready camelCase: what the `data:` line of the event holds."""
        return self.body.model_dump(mode="json", by_alias=True)
