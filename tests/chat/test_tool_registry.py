"""The tool registry: specs plus handlers, typed outcomes, events while a call runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from foldline.api.events import ApprovalRequired
from foldline.api.schemas import UsageOut
from foldline.api.schemas_context import (
    ContextBreakdown,
    ContextStatsOut,
    ConversationUsageOut,
    Thresholds,
)
from foldline.chat import events as ev
from foldline.chat.service import ChatService
from foldline.chat.tool_registry import (
    BatchRun,
    CompactRequest,
    ToolEnv,
    ToolOutcome,
    ToolRegistry,
    Truncation,
)
from foldline.chat.tools import CONTEXT_TOOLS, WorkspaceFiles
from foldline.core.messages import AttachmentPart, ToolCallPart, ToolResultPart, ToolSpec
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step

WORD_TRUNCATION = Truncation(cap_tokens=50, count_text=lambda text: len(text.split()))


NO_USAGE = UsageOut(
    calls=0,
    input_tokens=0,
    output_tokens=0,
    cache_read_tokens=0,
    cache_creation_tokens=0,
    cost=None,
    saved=None,
)
STATS = ContextStatsOut(
    tokens=7,
    input_budget=100,
    context_window=128,
    working_budget=None,
    window_budget=100,
    fraction=0.07,
    exact=True,
    breakdown=ContextBreakdown(system=1, tools=2, summary=0, messages=4),
    thresholds=Thresholds(soft=0.8, hard=0.95),
    model="test-model",
    model_known=True,
    model_lifecycle=None,
    model_replacement=None,
    version=0,
    messages_in_view=1,
    messages_in_history=1,
    usage=ConversationUsageOut(total=NO_USAGE, last_turn=NO_USAGE, priced=False),
    background_fold=None,
)


def env(emit=lambda _event: None) -> ToolEnv:
    return ToolEnv("c1", lambda: STATS, emit)


class EchoTool:
    """A test tool: answers with its arguments, optionally with an image."""

    def __init__(self, name: str = "echo", *, image: bool = False) -> None:
        self.spec = ToolSpec(name=name, description="Echo the input.")
        self.image = image
        self.calls: list[ToolCallPart] = []

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        self.calls.append(call)
        attachments = (
            (AttachmentPart(name="dot.png", media_type="image/png", data_base64="AAAA"),)
            if self.image
            else ()
        )
        return ToolOutcome(f"echo {call.input}", attachments=attachments)


class BrokenTool:
    spec = ToolSpec(name="broken", description="Always raises.")

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        raise RuntimeError("disk on fire")


class WaitingTool:
    """Emits an event, then waits until released (like a call waiting for approval)."""

    spec = ToolSpec(name="wait", description="Waits.")

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.cancelled = False

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        env.emit(
            ev.ApprovalRequired(
                ApprovalRequired(call_id=call.id, server="s", tool="t", name="wait", arguments={}),
            )
        )
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolOutcome("released")


def tool_call(name: str, **arguments: object) -> ToolCallPart:
    return ToolCallPart(id=f"call-{name}", name=name, input=dict(arguments))


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="echo"):
        ToolRegistry([EchoTool(), EchoTool()])


async def test_a_batch_runs_each_call_and_keeps_the_order() -> None:
    echo = EchoTool(image=True)
    registry = ToolRegistry([*CONTEXT_TOOLS, echo, BrokenTool()])
    assert [spec.name for spec in registry.specs()] == [
        "getContextStats",
        "compactContext",
        "echo",
        "broken",
    ]
    calls = [
        tool_call("getContextStats"),
        tool_call("echo", x=1),
        tool_call("broken"),
        tool_call("nope"),
    ]
    batch = await registry.run_batch(calls, env(), WORD_TRUNCATION)
    kinds = [part.kind for part in batch.results]
    # The image follows the result it belongs to, so pruning drops them together.
    assert kinds == ["tool-result", "tool-result", "attachment", "tool-result", "tool-result"]
    stats, echoed, image, broken, unknown = batch.results
    assert isinstance(stats, ToolResultPart) and '"inputBudget": 100' in stats.output
    assert isinstance(echoed, ToolResultPart) and echoed.output == "echo {'x': 1}"
    assert isinstance(image, AttachmentPart) and image.media_type == "image/png"
    assert isinstance(broken, ToolResultPart) and broken.is_error
    assert "disk on fire" in broken.output
    assert isinstance(unknown, ToolResultPart) and unknown.is_error
    assert unknown.output == "Unknown tool: nope"
    assert [part.call_id for part in batch.results if isinstance(part, ToolResultPart)] == [
        call.id for call in calls
    ]
    assert batch.compact is None


async def test_compact_context_asks_for_a_fold_with_its_instructions() -> None:
    registry = ToolRegistry(CONTEXT_TOOLS)
    batch = await registry.run_batch(
        [tool_call("compactContext", instructions="keep the numbers")], env(), WORD_TRUNCATION
    )
    assert batch.compact == CompactRequest("keep the numbers")
    bare = await registry.run_batch([tool_call("compactContext")], env(), WORD_TRUNCATION)
    assert bare.compact == CompactRequest(None)


async def test_long_outputs_are_truncated_and_kept_in_full(tmp_path: Path) -> None:
    long_text = "\n".join(f"line {i} " + "word " * 5 for i in range(100))
    (tmp_path / "big.txt").write_text(long_text)
    files = WorkspaceFiles(tmp_path)
    registry = ToolRegistry(files.tools())
    batch = await registry.run_batch(
        [tool_call("read_file", path="big.txt"), tool_call("read_file", path="../etc/passwd")],
        env(),
        WORD_TRUNCATION,
    )
    read, escaped = batch.results
    assert isinstance(read, ToolResultPart) and read.full_output == long_text
    assert len(read.output.split()) < len(long_text.split())
    assert isinstance(escaped, ToolResultPart) and escaped.is_error
    assert "outside the workspace" in escaped.output


async def test_a_batch_run_relays_events_while_a_call_waits_and_stop_cancels_it() -> None:
    waiting = WaitingTool()
    run = BatchRun(
        registry=ToolRegistry([waiting]),
        calls=[tool_call("wait")],
        conversation_id="c1",
        stats=lambda: STATS,
        truncation=WORD_TRUNCATION,
    )
    events = run.events()
    first = await anext(events)
    assert first.name == "tool.approval_required"
    # The consumer stops (the turn's task is cancelled): the waiting call is cancelled too.
    await events.aclose()
    assert waiting.cancelled
    assert run.batch is None

    released = WaitingTool()
    run = BatchRun(
        registry=ToolRegistry([released]),
        calls=[tool_call("wait")],
        conversation_id="c1",
        stats=lambda: STATS,
        truncation=WORD_TRUNCATION,
    )
    seen = []
    async for event in run.events():
        seen.append(event.name)
        released.release.set()
    assert seen == ["tool.approval_required"]
    assert run.batch is not None
    assert run.batch.results[0].output == "released"


async def test_the_turn_loop_runs_any_registered_tool(store: Store, make_service) -> None:
    """The loop knows no tool names: a tool registered with the service is offered,
    called, and its result paired with the call."""
    echo = EchoTool("lookup")
    model = ScriptedModel(tool_step(call("lookup", {"q": "x"})), text_step("Found it."))
    service: ChatService = make_service(model)
    base = service.tool_registry
    service.tool_registry = lambda: ToolRegistry([*base().tools(), echo])  # type: ignore[method-assign]
    conversation = store.create_conversation()
    events = [e async for e in (await service.start_turn(conversation.id, "look it up")).events()]
    assert "tool.result" in [e.name for e in events]
    assert [t.name for t in model.calls[0].tools] == ["getContextStats", "compactContext", "lookup"]
    assert echo.calls and echo.calls[0].input == {"q": "x"}
    result = model.calls[1].messages[-1].tool_results[0]
    assert result.output == "echo {'q': 'x'}"
    model.assert_complete()
