"""Shared setup of the fold tests: a small agent session and the sizes it is judged by."""

from __future__ import annotations

from strategies import CharCounter, text_of

from foldline.core.budget import Budget
from foldline.core.compaction import FoldOutcome, Summarizer, SummaryRequest, fold
from foldline.core.digest import emergency_fold
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import (
    History,
    Message,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, Trigger
from foldline.core.view import build_api_messages

COUNTER = CharCounter()
SYSTEM = "You are a careful coding assistant."
TOOLS = [ToolSpec(name="read_file", description="Read a file", input_schema={"type": "object"})]
BUDGET = Budget(context_window=44_000, max_output_tokens=4_000)  # input budget 40k
SETTINGS = CompactionSettings(keep_recent_tokens=2_000)


def agent_session(turns: int, first: int = 0, output_chars: int = 8_000) -> list[Message]:
    """`turns` agent turns (request, a file read, its output, an answer) from item `first`."""
    messages: list[Message] = []
    for i in range(first, first + turns):
        messages.append(user(f"request {i}: please handle item {i}"))
        call = ToolCallPart(id=f"c{i}", name="read_file", input={"path": f"src/m{i}.py"})
        messages.append(assistant("Reading.", call))
        messages.append(
            tool_results(
                ToolResultPart(call_id=f"c{i}", name="read_file", output=text_of(output_chars, i))
            )
        )
        messages.append(assistant(f"Done with item {i}. " + text_of(1_200, i)))
    return messages


def view_tokens(display: list[Message], state: CompactionState | None) -> int:
    return COUNTER.count_request(SYSTEM, build_api_messages(display, state), TOOLS)


def request_size(request: SummaryRequest) -> int:
    return COUNTER.count_request(request.system, [user(request.prompt)], [])


NOW = "2025-05-05T10:00:00Z"


def fold_inputs(display: History, state: CompactionState | None = None, **kw: object) -> FoldInputs:
    """The fold inputs of these tests' session defaults, with any field overridden."""
    args: dict[str, object] = {
        "counter": COUNTER,
        "system": SYSTEM,
        "tools": TOOLS,
        "budget": BUDGET,
        "settings": SETTINGS,
        "now": NOW,
    }
    args.update(kw)
    return FoldInputs.of(display, state, **args)  # type: ignore[arg-type]


async def run_fold(
    display: History,
    summarize: Summarizer | None,
    state: CompactionState | None = None,
    *,
    trigger: Trigger = "auto",
    instructions: str | None = None,
    **kw: object,
) -> FoldOutcome:
    return await fold(
        fold_inputs(display, state, **kw),
        summarize=summarize,
        trigger=trigger,
        instructions=instructions,
    )


def run_emergency(
    display: History,
    state: CompactionState | None = None,
    *,
    trigger: Trigger = "auto",
    reason: str = "the summarizer failed",
    **kw: object,
) -> CompactionState | None:
    return emergency_fold(fold_inputs(display, state, **kw), trigger=trigger, reason=reason)
