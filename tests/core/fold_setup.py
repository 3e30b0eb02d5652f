"""Shared setup of the fold tests: a small agent session and the sizes it is judged by."""

from __future__ import annotations

from strategies import CharCounter, text_of

from foldline.core.budget import Budget
from foldline.core.compaction import SummaryRequest
from foldline.core.messages import (
    Message,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
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
