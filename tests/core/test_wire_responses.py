"""Engine messages as OpenAI Responses API input items, and their estimated counts."""

from __future__ import annotations

from foldline.core.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.tokens import OpenAIResponsesCounter
from foldline.core.wire import to_responses_input, to_responses_tools
from foldline.tokenizers import get_encoder

THOUGHT = ReasoningPart(text="look first", item_id="rs_1", encrypted_content="gAAAAAxyz")
CALL = ToolCallPart(id="call_1", name="read_file", input={"path": "a.txt"})


def loop() -> list[Message]:
    return [
        user("Read a.txt"),
        Message(role="assistant", parts=(THOUGHT, CALL)),
        tool_results(ToolResultPart(call_id="call_1", name="read_file", output="hello")),
    ]


def test_the_tool_loop_carries_its_reasoning_item_before_its_call() -> None:
    items = to_responses_input(loop())
    assert items == [
        {"role": "user", "content": "Read a.txt"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "look first"}],
            "encrypted_content": "gAAAAAxyz",
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read_file",
            "arguments": '{"path":"a.txt"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
    ]


def test_earlier_turns_reasoning_and_unverifiable_reasoning_are_not_sent() -> None:
    history = [*loop(), assistant("It says hello."), user("Thanks")]
    kinds = [item.get("type") for item in to_responses_input(history)]
    assert "reasoning" not in kinds
    # Reasoning without encrypted content (another provider's) never goes.
    unsigned = Message(role="assistant", parts=(ReasoningPart(text="hm"), CALL))
    in_loop = [user("x"), unsigned, loop()[2]]
    assert "reasoning" not in [item.get("type") for item in to_responses_input(in_loop)]


def test_text_and_calls_of_one_answer_keep_their_order() -> None:
    answer = Message(role="assistant", parts=(THOUGHT, TextPart(text="Reading."), CALL))
    items = to_responses_input([user("go"), answer, loop()[2]])
    assert [i.get("type", i.get("role")) for i in items] == [
        "user",
        "reasoning",
        "assistant",
        "function_call",
        "function_call_output",
    ]


def test_tools_are_flat_function_tools() -> None:
    spec = ToolSpec(name="f", description="does f", input_schema={"type": "object"})
    assert to_responses_tools([spec]) == [
        {
            "type": "function",
            "name": "f",
            "description": "does f",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]


def test_counter_is_additive_and_counts_no_reasoning() -> None:
    counter = OpenAIResponsesCounter(get_encoder("o200k_base"))
    assert not counter.exact
    spec = ToolSpec(name="read_file", description="Read a file")
    history = loop()
    whole = counter.count_request("Be brief.", history, [spec])
    parts = counter.count_request("Be brief.", [], [spec]) + sum(
        counter.count_message(m) for m in history
    )
    assert whole == parts
    with_thought = counter.count_message(history[1])
    without = counter.count_message(Message(role="assistant", parts=(CALL,)))
    assert with_thought == without > 0
