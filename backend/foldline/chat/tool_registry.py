"""The tool registry: every tool the model may call is a spec plus a handler.

Built-in tools (`getContextStats`, `compactContext`, the workspace reader) and MCP
servers' tools are registered the same way, so the turn loop never knows a tool's name:
it hands the model's calls to `ToolRegistry.run_batch` and gets back a typed
`ToolBatch`, the tool message to store plus whether the model asked for a fold.

A handler may emit events while it runs (an MCP call waiting for the person's approval
announces itself); `BatchRun` runs a batch in a task of its own and relays those events
as they come, so the turn's event stream stays live while a call waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from foldline.api.schemas_context import ContextStatsOut
from foldline.chat.events import ChatEvent
from foldline.core.json_values import refused_arguments
from foldline.core.messages import AttachmentPart, Part, ToolCallPart, ToolResultPart, ToolSpec
from foldline.core.recall import RecallScope
from foldline.core.truncation import truncate_tool_output

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactRequest:
    """The model asked for a fold after this batch (`compactContext`)."""

    instructions: str | None = None


@dataclass(frozen=True)
class ToolOutcome:
    """What one handler returns: the output the model reads, and what it asks of the loop.

    `attachments` are images (or other binary content) a tool produced; they are stored
    right after the result in the tool message, where pruning drops them with it.
    """

    output: str
    is_error: bool = False
    attachments: tuple[AttachmentPart, ...] = ()
    compact: CompactRequest | None = None


@dataclass(frozen=True)
class ToolBatch:
    """The outcome of one batch of calls: the tool message's parts (each result followed
    by its attachments), and the fold the model asked for, if any."""

    results: tuple[Part, ...]
    compact: CompactRequest | None = None


@dataclass(frozen=True)
class ToolEnv:
    """What a handler may use besides its call's arguments."""

    conversation_id: str
    stats: Callable[[], ContextStatsOut]
    """The context numbers `getContextStats` reports (computed on demand)."""
    emit: Callable[[ChatEvent], None]
    """Sends an event to the turn's stream while the handler runs."""
    recall: RecallScope | None = None
    """What the recall tools may read and return in this batch (None: not offered)."""


class Tool(Protocol):
    """One tool: its spec (what the model is offered) and its handler."""

    @property
    def spec(self) -> ToolSpec: ...

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome: ...


class ToolSource(Protocol):
    """Tools that come from outside the app (MCP servers): started when first needed."""

    def tools(self) -> list[Tool]:
        """The tools offered now (stable while nothing changes: part of the cached prefix)."""
        ...

    async def prepare(self) -> list[ChatEvent]:
        """Start what a turn needs; events (notices) for what could not start."""
        ...

    async def shutdown(self) -> None: ...


@dataclass(frozen=True)
class Truncation:
    """Ingest truncation of tool outputs: the cap and how to count tokens."""

    cap_tokens: int
    count_text: Callable[[str], int]


class ToolRegistry:
    """The tools of one turn, by name, in the order they are offered."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.spec.name in self._tools:
                raise ValueError(f"two tools are named {tool.spec.name!r}")
            self._tools[tool.spec.name] = tool

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    async def run_one(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        refused = refused_arguments(call)
        if refused is not None:
            return ToolOutcome(refused, is_error=True)
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolOutcome(f"Unknown tool: {call.name}", is_error=True)
        try:
            return await tool.run(call, env)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a broken tool must not break the turn
            log.exception("tool %s failed", call.name)
            return ToolOutcome(f"The tool {call.name} failed: {error}", is_error=True)

    async def run_batch(
        self,
        calls: Sequence[ToolCallPart],
        env: ToolEnv,
        truncation: Truncation,
        parts: list[Part] | None = None,
    ) -> ToolBatch:
        """Run the calls one after another (approvals are asked in the model's order).
        `parts` receives each result as it finishes, so a stopped batch keeps them."""
        parts = [] if parts is None else parts
        compact: CompactRequest | None = None
        for call in calls:
            outcome = await self.run_one(call, env)
            compact = outcome.compact or compact
            # In a worker thread: fitting a megabyte of output counts it many times over
            # (~0.6 s), and the event loop meanwhile serves every other stream.
            cut = await asyncio.to_thread(
                truncate_tool_output,
                outcome.output,
                truncation.cap_tokens,
                truncation.count_text,
                tool_name=call.name,
            )
            parts.append(
                ToolResultPart(
                    call_id=call.id,
                    name=call.name,
                    output=cut.text,
                    is_error=outcome.is_error,
                    full_output=outcome.output if cut.truncated else None,
                )
            )
            parts.extend(outcome.attachments)
        return ToolBatch(results=tuple(parts), compact=compact)


@dataclass
class BatchRun:
    """A batch running in its own task, its handlers' events relayed as they come.

    Cancelling the consumer (Stop) cancels the batch: a call waiting for approval or
    running on a server is abandoned; the turn stores the results in `done` and an
    interrupted result for every other call.
    """

    registry: ToolRegistry
    calls: Sequence[ToolCallPart]
    conversation_id: str
    stats: Callable[[], ContextStatsOut]
    truncation: Truncation
    recall: RecallScope | None = None
    batch: ToolBatch | None = None
    done: list[Part] = field(default_factory=list)
    """The results (and their attachments) of the calls finished so far."""
    _queue: asyncio.Queue[ChatEvent] = field(default_factory=asyncio.Queue)

    async def events(self) -> AsyncIterator[ChatEvent]:
        env = ToolEnv(self.conversation_id, self.stats, self._queue.put_nowait, self.recall)
        task = asyncio.create_task(
            self.registry.run_batch(self.calls, env, self.truncation, self.done)
        )
        getter: asyncio.Task[ChatEvent] | None = None
        try:
            while True:
                getter = asyncio.create_task(self._queue.get())
                done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                    continue
                getter.cancel()
                while not self._queue.empty():
                    yield self._queue.get_nowait()
                self.batch = task.result()
                return
        finally:
            if getter is not None and not getter.done():
                getter.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
