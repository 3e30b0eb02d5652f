"""Thinking blocks on the Anthropic wire: first in the tool loop's turns, byte-identical,
and nowhere else."""

from __future__ import annotations

from foldline.core.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.wire import to_anthropic_messages

SIGNED = ReasoningPart(text="Plan the read.", signature="EqQBsig")
REDACTED = ReasoningPart(text="", redacted="EmwKAhgBEgy3")
CALL = ToolCallPart(id="toolu_1", name="read_file", input={"path": "a.txt"})
RESULT = tool_results(ToolResultPart(call_id="toolu_1", name="read_file", output="hello"))


def turn() -> Message:
    # Text before the thinking in the engine's order still goes after it on the wire.
    return Message(role="assistant", parts=(TextPart(text="Reading."), SIGNED, REDACTED, CALL))


def test_the_loop_in_progress_starts_each_assistant_turn_with_its_thinking() -> None:
    wire = to_anthropic_messages([user("Read a.txt"), turn(), RESULT])
    assert wire[1]["content"][:2] == [
        {"type": "thinking", "thinking": "Plan the read.", "signature": "EqQBsig"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
    ]
    assert [b["type"] for b in wire[1]["content"][2:]] == ["text", "tool_use"]


def test_thinking_of_finished_turns_is_not_sent() -> None:
    history = [user("Read a.txt"), turn(), RESULT, assistant("It says hello."), user("Thanks")]
    kinds = [b["type"] for m in to_anthropic_messages(history) for b in m["content"]]
    assert "thinking" not in kinds and "redacted_thinking" not in kinds


def test_unsigned_reasoning_never_goes_and_breakpoints_skip_thinking() -> None:
    unsigned = Message(role="assistant", parts=(ReasoningPart(text="hm"), CALL))
    wire = to_anthropic_messages([user("x"), unsigned, RESULT], cache_after=1)
    assert [b["type"] for b in wire[1]["content"]] == ["tool_use"]
    marked = to_anthropic_messages([user("x"), turn(), RESULT], cache_after=1)
    assert "cache_control" in marked[1]["content"][-1]
    assert all("cache_control" not in b for b in marked[1]["content"][:2])
