"""Engine values and store records as camelCase JSON for events and the HTTP API."""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel

from foldline.core.messages import Message, Part, ToolResultPart
from foldline.core.state import CompactionState


def part_to_json(part: Part, *, include_full: bool = False) -> dict[str, Any]:
    """A part in camelCase. The full output of a truncated tool result is large and only
    sent on request; `truncated` tells the UI it exists."""
    data = part.model_dump(exclude={"full_output"} if isinstance(part, ToolResultPart) else set())
    out = {to_camel(key): value for key, value in data.items()}
    if isinstance(part, ToolResultPart):
        out["truncated"] = part.full_output is not None
        if include_full and part.full_output is not None:
            out["fullOutput"] = part.full_output
    return out


def message_parts_to_json(message: Message) -> list[dict[str, Any]]:
    return [part_to_json(part) for part in message.parts]


def record_to_json(
    record: Any, api_start_index: int, sibling_ids: list[str] | None = None
) -> dict[str, Any]:
    """A store MessageRecord as the API's message object."""
    return {
        "index": record.seq,
        "id": record.id,
        "role": record.message.role,
        "parts": message_parts_to_json(record.message),
        "status": record.status,
        "inContext": record.seq >= api_start_index,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
        "usage": record.usage,
        "error": record.error,
        "parentId": record.parent_id,
        "siblingIds": sibling_ids or [record.id],
    }


def state_to_json(state: CompactionState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    data = state.model_dump()
    out = {to_camel(key): value for key, value in data.items()}
    out["summarizedRange"] = {
        to_camel(key): value for key, value in state.summarized_range.model_dump().items()
    }
    return out
