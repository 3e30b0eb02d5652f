"""The built-in tools: the two the model is always offered, and the optional file reader.

`getContextStats` and `compactContext` let the model see and manage its own context.
`read_file`/`list_files` read from a folder the person (or a test) chooses; they exist
so long tool outputs, pruning and truncation are exercised for real.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foldline.chat.tool_registry import CompactRequest, Tool, ToolEnv, ToolOutcome
from foldline.core.messages import ToolCallPart, ToolSpec

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


class ContextStatsTool:
    """`getContextStats`: the same numbers as the context meter."""

    spec = GET_CONTEXT_STATS

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        return ToolOutcome(json.dumps(env.stats().model_dump(by_alias=True), indent=2))


class CompactContextTool:
    """`compactContext`: asks the loop to fold after the current batch."""

    spec = COMPACT_CONTEXT

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        instructions = call.input.get("instructions")
        return ToolOutcome(
            "The context will be folded after this batch of tool calls.",
            compact=CompactRequest(instructions if isinstance(instructions, str) else None),
        )


CONTEXT_TOOLS: tuple[Tool, ...] = (ContextStatsTool(), CompactContextTool())


class WorkspaceFiles:
    """Read-only access to one folder (`read_file`, `list_files`); paths that escape it
    are refused."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def tools(self) -> tuple[Tool, ...]:
        return (_ReadFileTool(self), _ListFilesTool(self))

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


@dataclass(frozen=True)
class _ReadFileTool:
    files: WorkspaceFiles
    spec: ToolSpec = READ_FILE

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        return self.files.read(call.input)


@dataclass(frozen=True)
class _ListFilesTool:
    files: WorkspaceFiles
    spec: ToolSpec = LIST_FILES

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        return self.files.list()
