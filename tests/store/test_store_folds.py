from __future__ import annotations

import pytest
from store_helpers import exchange, fold_state

from foldline.core.messages import HistoryWindow, ToolResultPart, tool_results, user
from foldline.core.view import build_api_messages
from foldline.store import ConcurrentFold, NotFound, Store


@pytest.fixture
def conversation_id(store: Store) -> str:
    conversation = store.create_conversation(title="folded")
    for n in range(6):
        store.append_messages(conversation.id, exchange(n))
    return conversation.id


def test_commit_makes_the_fold_current_and_keeps_every_field(
    store: Store, conversation_id: str
) -> None:
    state = fold_state(1, 8, summary="## Active Task\nship it", trigger="manual")
    stored = store.commit_fold(conversation_id, state, expected_version=0)
    assert stored == state
    assert store.current_compaction(conversation_id) == state
    [record] = store.list_compactions(conversation_id)
    assert (record.state, record.is_current, record.parent_version) == (state, True, 0)


def test_a_folds_cost_is_stored_with_it(store: Store, conversation_id: str) -> None:
    state = fold_state(1, 8).model_copy(update={"summary_input_tokens": 6_812, "saving_turns": 7})
    assert store.commit_fold(conversation_id, state, expected_version=0) == state
    stored = store.current_compaction(conversation_id)
    assert stored is not None
    assert (stored.summary_input_tokens, stored.saving_turns) == (6_812, 7)


def test_folds_stack_and_every_version_is_kept(store: Store, conversation_id: str) -> None:
    first = fold_state(1, 8)
    second = fold_state(2, 16, previous_start=8, degraded=True)
    store.commit_fold(conversation_id, first, expected_version=0)
    store.commit_fold(conversation_id, second, expected_version=1)
    records = store.list_compactions(conversation_id)
    assert [(r.state, r.is_current, r.parent_version) for r in records] == [
        (first, False, 0),
        (second, True, 1),
    ]


def test_a_stale_expected_version_raises_and_writes_nothing(
    store: Store, conversation_id: str
) -> None:
    store.commit_fold(conversation_id, fold_state(1, 8), expected_version=0)
    victim = store.list_messages(conversation_id, offset=10, limit=1)[0]
    with pytest.raises(ConcurrentFold) as raised:
        store.commit_fold(
            conversation_id,
            fold_state(1, 12),
            expected_version=0,
            pruned={victim.id: user("replaced")},
        )
    assert (raised.value.expected_version, raised.value.actual_version) == (0, 1)
    assert store.current_compaction(conversation_id) == fold_state(1, 8)
    assert len(store.list_compactions(conversation_id)) == 1
    assert store.get_message(victim.id) == victim


def test_api_start_index_must_lie_within_the_history(store: Store, conversation_id: str) -> None:
    count = store.message_count(conversation_id)
    with pytest.raises(ValueError, match="outside the history"):
        store.commit_fold(conversation_id, fold_state(1, count + 1), expected_version=0)
    # Folding everything (an empty tail) is allowed.
    store.commit_fold(conversation_id, fold_state(1, count), expected_version=0)
    with pytest.raises(ValueError, match="back"):
        store.commit_fold(conversation_id, fold_state(2, 4), expected_version=1)
    assert store.current_compaction(conversation_id).api_start_index == count


def test_pruned_messages_are_written_with_the_fold(store: Store, conversation_id: str) -> None:
    window = store.list_messages(conversation_id, offset=8)
    tool_message = next(r for r in window if r.message.role == "tool")
    result = tool_message.message.tool_results[0]
    marked = tool_results(result.model_copy(update={"compacted_at": "2025-02-02T00:00:00Z"}))
    store.commit_fold(
        conversation_id, fold_state(1, 8), expected_version=0, pruned={tool_message.id: marked}
    )
    assert store.get_message(tool_message.id).message == marked


def test_an_unknown_pruned_message_rolls_the_whole_fold_back(
    store: Store, conversation_id: str
) -> None:
    other = store.create_conversation()
    foreign = store.append_message(other.id, user("not yours"))
    mine = store.list_messages(conversation_id, offset=9, limit=1)[0]
    for bad_id in ("no-such-message", foreign.id):
        with pytest.raises(NotFound):
            store.commit_fold(
                conversation_id,
                fold_state(1, 8),
                expected_version=0,
                pruned={mine.id: user("changed"), bad_id: user("x")},
            )
        assert store.current_compaction(conversation_id) is None
        assert store.list_compactions(conversation_id) == []
        assert store.get_message(mine.id) == mine
    assert store.get_message(foreign.id) == foreign


def test_commit_prune_is_all_or_nothing(store: Store, conversation_id: str) -> None:
    first, second = store.list_messages(conversation_id, offset=2, limit=2)
    with pytest.raises(NotFound):
        store.commit_prune(conversation_id, {first.id: user("a"), "missing": user("b")})
    assert store.get_message(first.id) == first
    store.commit_prune(conversation_id, {first.id: user("a"), second.id: user("b")})
    assert [store.get_message(m.id).message for m in (first, second)] == [user("a"), user("b")]


def test_undo_restores_the_previous_version_and_deletes_nothing(
    store: Store, conversation_id: str
) -> None:
    first = fold_state(1, 8)
    second = fold_state(2, 16, previous_start=8)
    store.commit_fold(conversation_id, first, expected_version=0)
    store.commit_fold(conversation_id, second, expected_version=1)

    assert store.undo_fold(conversation_id, 2) == first
    assert store.current_compaction(conversation_id) == first
    state, window = store.load_window(conversation_id)
    assert state == first and window[0].seq == 8
    assert [(r.state.version, r.is_current) for r in store.list_compactions(conversation_id)] == [
        (1, True),
        (2, False),
    ]

    assert store.undo_fold(conversation_id, 1) is None
    assert store.load_window(conversation_id) == (None, store.list_messages(conversation_id))
    assert len(store.list_compactions(conversation_id)) == 2


def test_undo_needs_the_current_version(store: Store, conversation_id: str) -> None:
    store.commit_fold(conversation_id, fold_state(1, 8), expected_version=0)
    store.commit_fold(conversation_id, fold_state(2, 16, previous_start=8), expected_version=1)
    with pytest.raises(ConcurrentFold):
        store.undo_fold(conversation_id, 1)
    with pytest.raises(NotFound, match="version 7"):
        store.undo_fold(conversation_id, 7)
    assert store.current_compaction(conversation_id).version == 2


def test_a_fold_after_an_undo_gets_a_fresh_version_number(
    store: Store, conversation_id: str
) -> None:
    store.commit_fold(conversation_id, fold_state(1, 8), expected_version=0)
    store.commit_fold(conversation_id, fold_state(2, 16, previous_start=8), expected_version=1)
    store.undo_fold(conversation_id, 2)
    # The engine numbers the new fold current + 1 = 2, but 2 is kept as an undone version.
    planned = fold_state(2, 12, previous_start=8)
    stored = store.commit_fold(conversation_id, planned, expected_version=1)
    assert stored == planned.model_copy(update={"version": 3})
    assert store.current_compaction(conversation_id) == stored
    chain = {r.state.version: r.parent_version for r in store.list_compactions(conversation_id)}
    assert chain == {1: 0, 2: 1, 3: 1}
    assert store.undo_fold(conversation_id, 3).version == 1


def test_a_folded_conversation_survives_a_restart_unchanged(
    store: Store, conversation_id: str, db_path
) -> None:
    store.commit_fold(conversation_id, fold_state(1, 8), expected_version=0)
    store.commit_fold(conversation_id, fold_state(2, 16, previous_start=8), expected_version=1)
    store.append_message(conversation_id, user("after the fold"))
    before_state, before_window = store.load_window(conversation_id)
    before_view = build_api_messages(
        HistoryWindow(16, [r.message for r in before_window]), before_state
    )
    store.close()

    with Store(db_path) as reopened:
        state, window = reopened.load_window(conversation_id)
        assert (state.version, state.api_start_index) == (2, 16)
        assert (state, window) == (before_state, before_window)
        view = build_api_messages(HistoryWindow(16, [r.message for r in window]), state)
    assert view == before_view
    assert len(view) == 1 + 9  # the summary + messages 16..24
    assert "summary of everything before 16" in view[0].text
    assert [m for m in view[1:]] == [r.message for r in window]


def test_tool_result_pruning_mark_survives_with_its_output(
    store: Store, conversation_id: str
) -> None:
    record = store.append_message(
        conversation_id,
        tool_results(
            ToolResultPart(
                call_id="x", name="shell", output="big", compacted_at="2025-02-03T00:00:00Z"
            )
        ),
    )
    part = store.get_message(record.id).message.tool_results[0]
    assert (part.output, part.compacted_at) == ("big", "2025-02-03T00:00:00Z")
