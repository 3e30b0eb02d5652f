"""Pins in the model's view, the pin cap, the explicit window type and the fold inputs."""

from __future__ import annotations

import pytest
from fold_setup import COUNTER, agent_session, fold_inputs, run_fold
from strategies import ScriptedSummarizer, state_at

from foldline.core.messages import HistoryWindow, assistant, user
from foldline.core.pins import PINS_HEADING, Pin, pins_block, pins_cap, pins_tokens
from foldline.core.view import build_api_messages


def test_folded_pins_ride_after_the_summary_and_pins_in_view_are_not_repeated() -> None:
    display = [user("pin me: budget 1234"), assistant("ok"), user("later"), assistant("fine")]
    pins = [Pin(0, display[0]), Pin(2, display[2])]
    view = build_api_messages(display, state_at(2, version=2), pins)
    first = view[0].text
    assert first.index("</summary>") < first.index(PINS_HEADING)
    assert "[#0 user]\npin me: budget 1234" in first and "[#2 user]" not in first
    assert [m.text for m in view[1:]] == ["later", "fine"]
    # Without a fold everything is in view: no block at all.
    assert [m.text for m in build_api_messages(display, None, pins)] == [m.text for m in display]


def test_the_block_lists_pins_oldest_first_and_is_empty_without_folded_pins() -> None:
    a, b = Pin(5, user("five")), Pin(1, user("one"))
    block = pins_block([a, b], before=10)
    assert block.index("[#1 user]") < block.index("[#5 user]")
    assert pins_block([a], before=5) == ""
    assert pins_tokens([], COUNTER.count_text) == 0
    assert pins_tokens([a, b], COUNTER.count_text) == COUNTER.count_text(block)


def test_the_pin_cap_is_a_share_of_the_budget() -> None:
    assert pins_cap(10_000) == 1_500
    assert pins_cap(None) > 0


async def test_a_fold_reserves_room_for_pins_and_tells_the_summarizer() -> None:
    display = agent_session(12)
    pins = [Pin(0, display[0])]
    summarizer = ScriptedSummarizer(COUNTER)
    outcome = await run_fold(display, summarizer, pins=pins)
    state = outcome.state
    assert state is not None and state.api_start_index > 0
    assert "The user pinned these messages: #0." in summarizer.requests[0].prompt
    view = build_api_messages(display, state, pins)
    tokens = COUNTER.count_request(fold_inputs(display).system, view, fold_inputs(display).tools)
    assert tokens <= state.tokens_after  # the pins' room was counted
    assert "request 0: please handle item 0" in view[0].text


def test_the_window_is_not_a_sequence_and_refuses_reads_before_its_start() -> None:
    messages = tuple(user(str(i)) for i in range(5))
    window = HistoryWindow(10, messages)
    assert window.end == 15 and window.at(12).text == "2"
    assert [m.text for m in window.since(13)] == ["3", "4"]
    assert [m.text for m in window.between(11, 13)] == ["1", "2"]
    assert window.since(20) == []
    with pytest.raises(IndexError):
        window.at(9)
    with pytest.raises(IndexError):
        window.since(3)
    with pytest.raises(TypeError):
        len(window)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        iter(window)  # type: ignore[call-overload]
    whole = HistoryWindow.whole(list(messages))
    assert whole.start == 0 and whole.end == 5


def test_fold_inputs_are_frozen() -> None:
    inputs = fold_inputs(agent_session(2))
    assert inputs.start == 0 and inputs.window.end == 8
    with pytest.raises(AttributeError):
        inputs.now = "later"  # type: ignore[misc]
