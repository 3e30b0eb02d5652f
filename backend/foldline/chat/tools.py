"""Tools the model is always offered, and the optional file-reading tool.

`getContextStats` and `compactContext` let the model see and manage its own context.
`read_file`/`list_files` read from a folder the person (or a test) chooses; they exist
so long tool outputs, pruning and truncation are exercised for real.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foldline.core.messages import ToolSpec

GET_CONTEXT_STATS = ToolSpec(
    name="getContextStats",
    description=(
        "Report how full your context window is: tokens in the current request, the input "
        "budget, the fraction used, the fold version, and how many messages of the full "
        "history are in your view. Use it before long tool work to decide whether to "
        "compact first."
    ),
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
)

COMPACT_CONTEXT = ToolSpec(
    name="compactContext",
    description=(
        "Fold the older part of this conversation into a summary to free context. The fold "
        "happens after the current batch of tool calls; the person still sees the full "
        "history. Pass `instructions` to say what the summary must keep."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "instructions": {
                "type": "string",
                "description": "What the summary must preserve or focus on (optional).",
            }
        },
        "additionalProperties": False,
    },
)

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a text file from the workspace folder. `path` is relative to it.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)

LIST_FILES = ToolSpec(
    name="list_files",
    description="List the files of the workspace folder.",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
)

CONTEXT_TOOLS = (GET_CONTEXT_STATS, COMPACT_CONTEXT)
FILE_TOOLS = (READ_FILE, LIST_FILES)


@dataclass(frozen=True)
class ToolOutcome:
    output: str
    is_error: bool = False


class WorkspaceFiles:
    """Read-only access to one folder; paths that escape it are refused."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def read(self, arguments: dict[str, Any]) -> ToolOutcome:
        relative = arguments.get("path")
        if not isinstance(relative, str) or not relative:
            return ToolOutcome("read_file needs a `path` string.", is_error=True)
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root):
            return ToolOutcome(f"{relative} is outside the workspace folder.", is_error=True)
        if not target.is_file():
            return ToolOutcome(f"No such file: {relative}", is_error=True)
        try:
            return ToolOutcome(target.read_text(encoding="utf-8", errors="replace"))
        except OSError as error:
            return ToolOutcome(f"Could not read {relative}: {error}", is_error=True)

    def list(self) -> ToolOutcome:
        names = sorted(
            str(path.relative_to(self.root)) for path in self.root.rglob("*") if path.is_file()
        )
        return ToolOutcome("\n".join(names) if names else "(the folder is empty)")


def context_stats_output(stats: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(json.dumps(stats, indent=2))
