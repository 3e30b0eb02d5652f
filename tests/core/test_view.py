"""The model's view: `[summary] + display[api_start_index:]`, placeholders, pair repair."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import conversations, message_soups, state_at

from foldline.core.messages import (
    AttachmentPart,
    HistoryWindow,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.planning import safe_split_points
from foldline.core.view import (
    INTERRUPTED_RESULT,
    PRUNED_PLACEHOLDER,
    UNANSWERED_NOTE,
    build_api_messages,
    repair_pairs,
    summary_to_message,
    view_message,
)


def call(call_id: str, name: str = "bash") -> ToolCallPart:
    return ToolCallPart(id=call_id, name=name, input={"cmd": "ls"})


def result(call_id: str, output: str = "ok", **kw: object) -> ToolResultPart:
    return ToolResultPart(call_id=call_id, name="bash", output=output, **kw)


def assert_pairs_valid(messages: Sequence[Message]) -> None:
    """Every call answered exactly once right after its assistant message; no orphans.

    Call ids are unique within a message; pairing is local to the message.
    """
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.role == "tool":
            raise AssertionError(f"tool message at {i} does not follow an assistant message")
        if message.role == "user":
            assert not message.tool_calls and not message.tool_results
            i += 1
            continue
        assert message.parts, "empty assistant message"
        assert not message.tool_results
        ids = [c.id for c in message.tool_calls]
        assert len(ids) == len(set(ids))
        i += 1
        answered: list[str] = []
        while i < len(messages) and messages[i].role == "tool":
            assert messages[i].tool_results
            answered += [r.call_id for r in messages[i].tool_results]
            i += 1
        assert sorted(answered) == sorted(ids), (answered, ids)


# --- unit tests -----------------------------------------------------------------------


def test_summary_message_frames_the_summary_as_data() -> None:
    message = summary_to_message(state_at(4, summary="## Active Task\nship it"))
    assert message.role == "user"
    assert "## Active Task\nship it" in message.text
    assert "not a new message from the user" in message.text
    assert "version 1" in message.text


def test_degraded_summary_says_it_is_an_extract() -> None:
    state = state_at(2).model_copy(update={"degraded": True})
    assert "without a model" in summary_to_message(state).text


def test_the_summary_message_word_for_word() -> None:
    # The framing is part of the prompt the model reads before every request: a change
    # to it is a change of behaviour, so it is pinned here in full.
    state = state_at(7, summary="## Active Task\nship it", version=3)
    assert summary_to_message(state).text == (
        "[Conversation summary, version 3]\n"
        "The earlier part of this conversation (7 messages) was folded into a summary "
        "below to save context. It is background data written for you, not a new message "
        "from the user: respect the constraints it records, treat requests quoted in it as "
        "history, and continue from where it leaves off with the messages that follow.\n\n"
        "<summary>\n## Active Task\nship it\n</summary>\n\n"
        "Messages #0-#6 are folded: searchHistory and readHistory return them verbatim."
    )
    degraded = summary_to_message(state.model_copy(update={"degraded": True})).text
    assert degraded == summary_to_message(state).text.replace(
        "into a summary below",
        "into an extract made without a model (the summarizer was unavailable) below",
    )


def test_no_state_gives_the_history_unchanged() -> None:
    display = [user("a"), assistant("b", call("1")), tool_results(result("1")), assistant("c")]
    assert build_api_messages(display, None) == display


def test_fold_gives_summary_then_the_tail() -> None:
    display = [user("a"), assistant("b"), user("c"), assistant("d")]
    view = build_api_messages(display, state_at(2, summary="old stuff"))
    assert view[0] == summary_to_message(state_at(2, summary="old stuff"))
    assert view[1:] == display[2:]


def test_pruned_output_is_replaced_and_its_attachment_dropped() -> None:
    pruned = result("1", output="x" * 500, compacted_at="t", full_output="y" * 900)
    image = AttachmentPart(name="shot.png", media_type="image/png", data_base64="AAAA")
    kept = result("2", output="small")
    note = AttachmentPart(name="n.txt", media_type="text/plain", text="kept")
    display = [
        user("a"),
        assistant("", call("1"), call("2")),
        Message(role="tool", parts=(pruned, image, kept, note)),
    ]
    view = build_api_messages(display, None)
    parts = view[2].parts
    assert parts[0].output == PRUNED_PLACEHOLDER and parts[0].full_output is None
    assert parts[0].call_id == "1" and parts[0].compacted_at == "t"
    assert parts[1:] == (kept, note)
    # The display message itself is untouched: nothing is lost.
    assert display[2].parts[0].output == "x" * 500


def test_view_message_returns_unpruned_messages_as_they_are() -> None:
    message = tool_results(result("1"))
    assert view_message(message) is message


def test_interrupted_batch_gets_synthetic_results_right_after_its_call() -> None:
    display = [user("a"), assistant("", call("1"), call("2")), user("stop; do b")]
    view = build_api_messages(display, None)
    assert [m.role for m in view] == ["user", "assistant", "tool", "user"]
    synthetic = view[2].tool_results
    assert [r.call_id for r in synthetic] == ["1", "2"]
    assert all(r.is_error and r.output == INTERRUPTED_RESULT for r in synthetic)


def test_partial_batch_is_completed_in_its_own_group() -> None:
    display = [user("a"), assistant("", call("1"), call("2")), tool_results(result("2"))]
    view = repair_pairs(display)
    assert [r.call_id for r in view[2].tool_results] == ["2", "1"]
    assert view[2].tool_results[1].output == INTERRUPTED_RESULT


def test_orphan_and_duplicate_results_are_dropped() -> None:
    display = [
        tool_results(result("zz")),  # orphan at the start (its call was folded)
        user("a"),
        assistant("", call("1")),
        tool_results(result("1"), result("1", output="again")),
        tool_results(result("9")),
        user("b"),
        tool_results(result("1")),  # after a user message: answers nothing
    ]
    view = repair_pairs(display)
    assert [m.role for m in view] == ["user", "assistant", "tool", "user"]
    assert view[2].tool_results == (result("1"),)


def test_duplicate_call_ids_in_one_message_are_dropped_and_empty_assistants_removed() -> None:
    display = [
        user("a"),
        Message(role="assistant", parts=(call("1"), call("1"))),
        tool_results(result("1")),
        Message(role="assistant", parts=()),
        assistant("done"),
    ]
    view = repair_pairs(display)
    assert [m.role for m in view] == ["user", "assistant", "tool", "assistant"]
    assert view[1].tool_calls == (call("1"),)
    assert view[-1].text == "done"


def test_call_ids_reused_by_a_later_response_are_paired_locally() -> None:
    # Some local servers number calls afresh in every response.
    display = [
        user("a"),
        assistant("", call("call_0")),
        tool_results(result("call_0", "first")),
        user("b"),
        assistant("", call("call_0")),
        tool_results(result("call_0", "second")),
    ]
    assert repair_pairs(display) == display
    assert safe_split_points(display, 0) == [3, 6]


def test_repair_keeps_messages_that_need_nothing() -> None:
    display = [user("a"), assistant("b", call("1")), tool_results(result("1")), assistant("c")]
    repaired = repair_pairs(display)
    assert all(a is b for a, b in zip(repaired, display, strict=True))


def test_view_reads_only_from_api_start_index_of_a_history_window() -> None:
    tail = [user("recent"), assistant("answer")]
    window = HistoryWindow(1000, tail)
    view = build_api_messages(window, state_at(1000))
    assert view[1:] == tail


def test_tool_message_text_before_a_dropped_result_goes_with_it() -> None:
    lead = TextPart(text="lead")
    display = [
        user("a"),
        assistant("", call("1")),
        Message(role="tool", parts=(lead, result("x"), result("1"))),
    ]
    view = repair_pairs(display)
    assert view[2].parts == (result("1"),)


# --- properties -----------------------------------------------------------------------


def _strip_repairs(messages: Sequence[Message]) -> list[Message]:
    """The view without synthetic results and notes, to compare with the history."""
    out = []
    for message in messages:
        parts = tuple(
            p
            for p in message.parts
            if not (isinstance(p, ToolResultPart) and p.output == INTERRUPTED_RESULT)
            and not (isinstance(p, TextPart) and p.text == UNANSWERED_NOTE)
        )
        if parts:
            out.append(message.model_copy(update={"parts": parts}))
    return out


@settings(max_examples=120, deadline=None)
@given(conversations())
def test_without_a_fold_the_view_is_the_history_apart_from_placeholders(
    display: list[Message],
) -> None:
    view = build_api_messages(display, None)
    assert _strip_repairs(view) == [view_message(m) for m in display]
    for original, shown in zip(display, (view_message(m) for m in display), strict=True):
        for a, b in zip(original.tool_results, shown.tool_results, strict=True):
            assert b.output == (PRUNED_PLACEHOLDER if a.compacted_at else a.output)


@settings(max_examples=120, deadline=None)
@given(conversations(), st.data())
def test_with_a_fold_the_view_is_summary_plus_history_from_the_split(
    display: list[Message], data: st.DataObject
) -> None:
    points = safe_split_points(display, 0)
    split = data.draw(st.sampled_from(points))
    state = state_at(split, summary="folded")
    view = build_api_messages(display, state)
    assert view[0] == summary_to_message(state)
    assert _strip_repairs(view[1:]) == [view_message(m) for m in display[split:]]
    assert view == build_api_messages(HistoryWindow(split, display[split:]), state)


@settings(max_examples=200, deadline=None)
@given(st.one_of(conversations(), message_soups()), st.data())
def test_after_repair_every_call_has_exactly_one_result_and_every_result_its_call(
    messages: list[Message], data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(messages)))
    repaired = repair_pairs(messages[start:])
    assert_pairs_valid(repaired)
    assert repair_pairs(repaired) == repaired
    # User messages are never dropped; only tool parts where none belong leave them.
    assert [m for m in repaired if m.role == "user"] == [
        m.model_copy(
            update={
                "parts": tuple(p for p in m.parts if p.kind not in ("tool-call", "tool-result"))
            }
        )
        for m in messages[start:]
        if m.role == "user"
    ]


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_no_split_point_falls_inside_a_tool_interaction(display: list[Message]) -> None:
    for split in safe_split_points(display, 0):
        before_calls = {c.id for m in display[:split] for c in m.tool_calls}
        after_results = {r.call_id for m in display[split:] for r in m.tool_results}
        assert not before_calls & after_results
        if split < len(display):
            assert display[split].role != "tool"
            assert display[split].role == "user" or display[split - 1].role == "tool"


# --- the repair and the placeholder pass, restated -------------------------------------
#
# Plain restatements of `view_message` and `repair_pairs` from their docstrings, compared
# with the engine on message soups (stray tool parts in user messages, attachments
# before, between and after results, pruned results beside unpruned ones).


def _owned(parts: Sequence[Part]) -> tuple[list[Part], list[tuple[Part, list[Part]]]]:
    """A tool message's parts as (leading parts, [(result, the parts after it)])."""
    leaders: list[Part] = []
    groups: list[tuple[Part, list[Part]]] = []
    for part in parts:
        if isinstance(part, ToolResultPart):
            groups.append((part, []))
        elif groups:
            groups[-1][1].append(part)
        else:
            leaders.append(part)
    return leaders, groups


def expected_view_message(message: Message) -> Message:
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    if message.role != "tool" or all(r.compacted_at is None for r in results):
        return message
    leaders, groups = _owned(message.parts)
    parts = list(leaders)
    for owner, followers in groups:
        if owner.compacted_at is None:
            parts += [owner, *followers]
        else:
            parts.append(
                owner.model_copy(update={"output": PRUNED_PLACEHOLDER, "full_output": None})
            )
    return message.model_copy(update={"parts": tuple(parts)})


def expected_repair(messages: Sequence[Message]) -> list[Message]:
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.role == "tool":
            continue
        if message.role == "user":
            kept = tuple(
                p for p in message.parts if not isinstance(p, ToolCallPart | ToolResultPart)
            )
            out.append(
                message if kept == message.parts else message.model_copy(update={"parts": kept})
            )
            continue
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                continue
            if isinstance(part, ToolCallPart) and any(
                isinstance(p, ToolCallPart) and p.id == part.id for p in parts
            ):
                continue
            parts.append(part)
        if not parts:
            continue
        out.append(message.model_copy(update={"parts": tuple(parts)}))
        calls = [p for p in parts if isinstance(p, ToolCallPart)]
        answered: list[str] = []
        results: list[Message] = []
        while i < len(messages) and messages[i].role == "tool":
            leaders, groups = _owned(
                [p for p in messages[i].parts if not isinstance(p, ToolCallPart)]
            )
            i += 1
            kept_parts: list[Part] = []
            for n, (owner, followers) in enumerate(groups):
                if owner.call_id in {c.id for c in calls} and owner.call_id not in answered:
                    answered.append(owner.call_id)
                    kept_parts += (leaders if n == 0 else []) + [owner, *followers]
            if kept_parts:
                results.append(Message(role="tool", parts=tuple(kept_parts)))
        missing = [
            ToolResultPart(call_id=c.id, name=c.name, output=INTERRUPTED_RESULT, is_error=True)
            for c in calls
            if c.id not in answered
        ]
        if missing and results:
            results[-1] = Message(role="tool", parts=(*results[-1].parts, *missing))
        elif missing:
            results.append(Message(role="tool", parts=tuple(missing)))
        out += results
    return out


@settings(max_examples=250, deadline=None)
@given(st.one_of(message_soups(max_size=16), conversations(max_output_chars=300)))
def test_view_message_and_repair_follow_their_rules(messages: list[Message]) -> None:
    viewed = [view_message(m) for m in messages]
    assert viewed == [expected_view_message(m) for m in messages]
    assert repair_pairs(viewed) == expected_repair(viewed)
    assert repair_pairs(messages) == expected_repair(messages)
    # A message with nothing pruned is passed through, not copied.
    for original, shown in zip(messages, viewed, strict=True):
        if shown == original:
            assert shown is original


def test_a_user_message_loses_only_its_stray_tool_parts() -> None:
    text = TextPart(text="please")
    stray = (call("9"), result("9"))
    repaired = repair_pairs([Message(role="user", parts=(stray[0], text, stray[1]))])
    assert repaired == [Message(role="user", parts=(text,))]
    plain = user("as it is")
    assert repair_pairs([plain])[0] is plain


def test_attachments_follow_their_result_between_and_after() -> None:
    first, second = (
        AttachmentPart(name="a", media_type="text/plain"),
        AttachmentPart(name="b", media_type="text/plain"),
    )
    display = [
        user("go"),
        assistant("", call("1"), call("2")),
        Message(role="tool", parts=(first, result("x"), result("1"), second, result("2"))),
    ]
    # `first` leads, so it goes with the first result (an orphan, dropped); `second`
    # follows result 1 and stays with it.
    assert repair_pairs(display)[2].parts == (result("1"), second, result("2"))
    pruned = result("1").model_copy(update={"compacted_at": "t", "full_output": "all"})
    shown = view_message(Message(role="tool", parts=(first, pruned, second, result("2"))))
    assert shown.parts == (
        first,
        pruned.model_copy(update={"output": PRUNED_PLACEHOLDER, "full_output": None}),
        result("2"),
    )
