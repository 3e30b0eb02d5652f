"""The message tree and its folds: paths, siblings, the pointer walk, each branch's view.

The property test drives a small conversation model through random sequences of
appends, edits, regenerations, branch switches, folds and undos, with the rules the store
follows (a fold is planned at a safe split of the active path; leaving a leaf remembers
the fold pointer; arriving restores it, else walks the chain). After every step, for
EVERY branch, the model's view must be exactly its applicable summary plus its path from
that fold's `apiStartIndex`, with no tool call separated from its result.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foldline.core.messages import Message, assistant
from foldline.core.messages import user as user_message
from foldline.core.tree import (
    FoldLink,
    applicable_fold,
    applies,
    branch_view,
    children_of,
    fold_chain,
    latest_leaf,
    path_to,
    sibling_ids,
)
from foldline.core.view import mark_unanswered, summary_to_message, view_message
from foldline.testing.tree_model import ConversationTree


def test_path_siblings_and_latest_leaf() -> None:
    parent_of = {"a": None, "b": "a", "c": "a", "d": "c", "e": None}
    order = ["a", "b", "c", "d", "e"]
    assert path_to("d", parent_of) == ["a", "c", "d"]
    assert path_to(None, parent_of) == []
    assert sibling_ids("c", parent_of, order) == ["b", "c"]
    assert sibling_ids("e", parent_of, order) == ["a", "e"]
    children = children_of(parent_of, order)
    rank = order.index
    assert latest_leaf("a", children, rank) == "d"
    assert latest_leaf("b", children, rank) == "b"
    with pytest.raises(ValueError):
        path_to("x", {"x": "y", "y": "x"})


def test_the_pointer_walk_finds_the_deepest_fold_on_the_path() -> None:
    folds = {
        1: FoldLink(1, 0, "m1"),
        2: FoldLink(2, 1, "m3"),
        3: FoldLink(3, 2, "m5"),
        4: FoldLink(4, 1, "x3"),  # a fold of another branch, stacked on fold 1
    }
    assert [link.version for link in fold_chain(3, folds)] == [3, 2, 1]
    assert applicable_fold(3, folds, {"m1", "m3", "m5"}) == 3
    assert applicable_fold(3, folds, {"m1", "m3", "x9"}) == 2
    assert applicable_fold(3, folds, {"m1"}) == 1
    assert applicable_fold(3, folds, set()) == 0
    assert applicable_fold(4, folds, {"m1", "m3", "m5"}) == 1
    assert applicable_fold(0, folds, {"m1"}) == 0
    assert applies(FoldLink(5, 0, None), set())
    # A damaged chain (a loop) ends instead of spinning.
    assert applicable_fold(1, {1: FoldLink(1, 1, "z")}, set()) == 0


# --- the property ---------------------------------------------------------------------


def assert_paired(view: list[Message]) -> None:
    """Every call is answered in the next message, every result answers the one before."""
    for i, message in enumerate(view):
        calls = {call.id for call in message.tool_calls}
        if calls:
            assert i + 1 < len(view), "a tool call ends the view"
            assert {r.call_id for r in view[i + 1].tool_results} == calls
        results = {result.call_id for result in message.tool_results}
        if results:
            assert i > 0 and results == {call.id for call in view[i - 1].tool_calls}


def check_every_branch(conversation: ConversationTree) -> None:
    for leaf in conversation.leaves():
        path = conversation.path(leaf)
        pointer = conversation.pointer_of(leaf)
        chain = fold_chain(pointer, conversation.folds)
        # The branch sees only folds of its own path: the shared prefix's, then its own.
        assert all(link.last_message_id in path for link in chain)
        state = conversation.states.get(pointer)
        messages = [conversation.messages[m] for m in path]
        view = branch_view(messages, state)
        start = state.api_start_index if state else 0
        # (A person's message that got no answer carries the view's note saying so.)
        expected = ([summary_to_message(state)] if state else []) + mark_unanswered(
            [view_message(message) for message in messages[start:]]
        )
        assert view == expected
        assert_paired(view)


OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["exchange", "edit", "regenerate", "switch", "fold", "undo"]),
        st.integers(min_value=0, max_value=10_000),
        st.booleans(),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(OPERATIONS)
def test_each_branch_sees_its_applicable_summary_and_its_own_path(
    operations: list[tuple[str, int, bool]],
) -> None:
    conversation = ConversationTree()
    conversation.append(*conversation.exchange(0, with_tool=True))
    for step, (operation, choice, flag) in enumerate(operations, start=1):
        path = conversation.path()
        start = (
            conversation.states[conversation.pointer].api_start_index if conversation.pointer else 0
        )
        if operation == "exchange":
            conversation.append(*conversation.exchange(step, with_tool=flag))
        elif operation == "edit":
            users = [i for i, m in enumerate(path) if conversation.messages[m].role == "user"]
            index = users[choice % len(users)]
            before = conversation.pointer
            conversation.branch(conversation.parent_of[path[index]], user_message(f"edit {step}"))
            # An edit after the fold's boundary keeps the fold; an edit of a folded
            # message falls back to a fold that ends before it.
            if index >= start:
                assert conversation.pointer == before
            else:
                kept = conversation.states.get(conversation.pointer)
                assert kept is None or kept.api_start_index <= index
            if flag:
                conversation.append(assistant(f"answer to edit {step}"))
        elif operation == "regenerate":
            answers = [
                i
                for i, m in enumerate(path)
                if conversation.messages[m].role == "assistant" and i > 0
            ]
            if answers:
                index = answers[choice % len(answers)]
                conversation.branch(path[index - 1], assistant(f"regenerated {step}"))
        elif operation == "switch":
            conversation.switch(conversation.order[choice % len(conversation.order)])
        elif operation == "fold":
            conversation.fold(choice)
        else:
            conversation.undo()
        check_every_branch(conversation)
