"""The extractive digest and the emergency fold: no model call, always within budget."""

from __future__ import annotations

from fold_setup import run_emergency
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from strategies import CharCounter, conversations, state_at, text_of

from foldline.core.budget import Budget
from foldline.core.digest import extractive_digest
from foldline.core.messages import (
    HistoryWindow,
    Message,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.planning import safe_split_points
from foldline.core.settings import CompactionSettings
from foldline.core.view import build_api_messages, summary_to_message

COUNTER = CharCounter()
COUNT = COUNTER.count_text
TOOLS = [ToolSpec(name="read_file", description="Read a file", input_schema={"type": "object"})]


def session() -> list[Message]:
    return [
        user("Please refactor src/app.py; keep the public API unchanged."),
        assistant("", ToolCallPart(id="1", name="read_file", input={"path": "src/app.py"})),
        tool_results(ToolResultPart(call_id="1", name="read_file", output="def f(): ...")),
        assistant("", ToolCallPart(id="2", name="bash", input={"cmd": "pytest -q"})),
        tool_results(
            ToolResultPart(
                call_id="2",
                name="bash",
                output="FAILED test_app.py::test_f\nAssertionError",
                is_error=True,
            )
        ),
        assistant("The test fails; fixing."),
        user("Also add type hints to src/util.py"),
        assistant("", ToolCallPart(id="3", name="edit_file", input={"file_path": "src/util.py"})),
        tool_results(ToolResultPart(call_id="3", name="edit_file", output="ok")),
    ]


def test_digest_extracts_requests_files_tools_errors_and_the_open_task() -> None:
    digest = extractive_digest(session(), "## Active Task\nolder work", 2000, COUNT)
    assert "Please refactor src/app.py; keep the public API unchanged." in digest
    assert "Also add type hints to src/util.py" in digest.split("## Earlier")[0]
    assert "src/app.py (read_file)" in digest and "src/util.py (edit_file)" in digest
    assert "read_file ×1" in digest and "bash ×1" in digest
    assert "bash: FAILED test_app.py::test_f AssertionError" in digest
    assert "older work" in digest
    assert COUNT(digest) <= 2000


def test_digest_respects_tiny_and_zero_caps() -> None:
    for cap in (0, 1, 5, 30, 100):
        assert COUNT(extractive_digest(session(), "x" * 5000, cap, COUNT)) <= cap


def test_digest_puts_the_requests_first_newest_first_when_short_of_room() -> None:
    messages = [user(f"request number {i} " + "pad " * 40) for i in range(60)]
    messages.append(assistant("latest activity " + "noise " * 400))
    digest = extractive_digest(messages, None, 1200, COUNT)
    assert digest.index("request number 59 ") < digest.index("request number 58 ")  # open task
    assert digest.index("request number 58 ") < digest.index("request number 57 ")
    assert "request number 0 " not in digest
    assert "older requests left out for space" in digest
    assert digest.index("request number 57 ") < digest.index("## Latest activity")
    assert COUNT(digest) <= 1200


def test_emergency_fold_makes_a_degraded_versioned_state() -> None:
    display = [*session(), user("go on " + text_of(40_000)), assistant("done")]
    budget = Budget(context_window=9000, max_output_tokens=1000)
    state = run_emergency(
        display,
        None,
        counter=COUNTER,
        system="You are helpful.",
        tools=TOOLS,
        budget=budget,
        settings=CompactionSettings(),
        trigger="auto",
        now="2025-01-01T00:00:00Z",
        reason="the summarizer failed",
    )
    assert state is not None and state.degraded and state.strategy == "emergency"
    assert state.version == 1 and state.compacted_at == "2025-01-01T00:00:00Z"
    view = build_api_messages(display, state)
    tokens = COUNTER.count_request("You are helpful.", view, TOOLS)
    assert tokens == state.tokens_after <= 8000
    assert state.tokens_before == COUNTER.count_request("You are helpful.", display, TOOLS)
    assert state.tokens_after < state.tokens_before
    # The last user message alone is over the budget: everything is folded and the
    # digest quotes it (cut).
    assert state.api_start_index == len(display)
    assert "go on alpha beta" in state.summary_message


def test_emergency_fold_stacks_on_a_previous_fold_and_reads_only_the_window() -> None:
    display = session() * 3
    window = HistoryWindow(9, tuple(display[9:]))
    budget = Budget(context_window=3000, max_output_tokens=500)
    state = run_emergency(
        window,
        state_at(9, summary="S" * 400, version=3),
        counter=COUNTER,
        system="",
        tools=[],
        budget=budget,
        settings=CompactionSettings(keep_recent_tokens=50),
        trigger="manual",
        now="n",
        reason="test",
    )
    assert state is not None and state.version == 4
    assert state.summarized_range.from_index == 9
    assert state.summarized_range.to_index == state.api_start_index > 9
    assert "SSSS" in state.summary_message  # the previous summary, trimmed


def test_nothing_to_fold_gives_none() -> None:
    budget = Budget(context_window=100_000, max_output_tokens=1000)
    args: dict = {"system": "", "tools": [], "budget": budget, "settings": CompactionSettings()}
    assert run_emergency([user("hi")], None, **args) is None
    assert run_emergency([], None, **args) is None


@hyp_settings(max_examples=80, deadline=None)
@given(
    display=conversations(max_turns=8, max_output_chars=12_000),
    window=st.integers(1500, 40_000),
    system_chars=st.integers(0, 2000),
    with_state=st.booleans(),
    data=st.data(),
)
def test_emergency_fold_succeeds_on_every_input_and_fits_the_budget(
    display: list[Message], window: int, system_chars: int, with_state: bool, data: st.DataObject
) -> None:
    budget = Budget(context_window=window, max_output_tokens=window // 8)
    system = text_of(system_chars)
    state = None
    if with_state:
        index = data.draw(st.integers(0, len(display)))
        state = state_at(index, summary=text_of(3000), version=3)
    result = run_emergency(
        display,
        state,
        counter=COUNTER,
        system=system,
        tools=TOOLS,
        budget=budget,
        settings=CompactionSettings(),
        trigger="auto",
        now="n",
        reason="test",
    )
    before = COUNTER.count_request(system, build_api_messages(display, state), TOOLS)
    if result is None:
        assert before <= budget.input_budget
        return
    view = build_api_messages(display, result)
    tokens = COUNTER.count_request(system, view, TOOLS)
    assert tokens == result.tokens_after <= budget.input_budget
    assert result.tokens_before == before
    assert view[0] == summary_to_message(result)
    start = state.api_start_index if state else 0
    if result.api_start_index > start:
        assert result.api_start_index in safe_split_points(display, start)
    assert result.degraded and result.version == (state.version if state else 0) + 1
