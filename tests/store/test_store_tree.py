"""The message tree in the store: branches, the active path, and each path's folds."""

from __future__ import annotations

import pytest
from store_helpers import fold_state

from foldline.core.messages import assistant, user
from foldline.store import NotFound, Store
from foldline.store.branches import NotOnPath, rebuild_lanes


def path_ids(store: Store, conversation_id: str) -> list[str]:
    return [r.id for r in store.list_messages(conversation_id, limit=1000)]


def on_path_flags(store: Store, conversation_id: str) -> dict[str, int]:
    """Each message's id -> 1 when the stored path's lanes hold it, else 0."""
    rows = store._pool.get().conn.execute(
        "SELECT m.id, m.seq <= coalesce(l.path_last, -1) FROM messages AS m "
        "JOIN lanes AS l ON l.lane = m.lane WHERE m.conversation_id = ?",
        (conversation_id,),
    )
    return dict(rows.fetchall())


def texts(store: Store, conversation_id: str) -> list[str]:
    return [r.message.text for r in store.list_messages(conversation_id, limit=1000)]


def chat(store: Store, conversation_id: str, n: int) -> list[str]:
    """n exchanges "q{i}" / "a{i}" appended to the active path; their ids."""
    ids = []
    for i in range(n):
        ids.append(store.append_message(conversation_id, user(f"q{i}")).id)
        ids.append(store.append_message(conversation_id, assistant(f"a{i}")).id)
    return ids


def test_appends_form_one_path_ending_at_the_active_leaf(store: Store) -> None:
    cid = store.create_conversation().id
    ids = chat(store, cid, 2)
    records = store.list_messages(cid)
    assert [r.parent_id for r in records] == [None, *ids[:-1]]
    assert [r.seq for r in records] == [0, 1, 2, 3]
    assert store.get_conversation(cid).active_leaf_id == ids[-1]
    assert store.sibling_ids(cid, ids) == {i: [i] for i in ids}


def test_an_edit_is_a_sibling_and_the_old_branch_comes_back(store: Store) -> None:
    cid = store.create_conversation().id
    q0, a0, q1, a1, q2, a2 = chat(store, cid, 3)
    edited = store.branch(cid, a0, user("q1 edited"))
    assert edited is not None and (edited.seq, edited.parent_id) == (2, a0)
    store.append_message(cid, assistant("a1 on the edit"))
    assert texts(store, cid) == ["q0", "a0", "q1 edited", "a1 on the edit"]
    conversation = store.get_conversation(cid)
    assert conversation.message_count == 4
    assert store.sibling_ids(cid, [q1, edited.id]) == {
        q1: [q1, edited.id],
        edited.id: [q1, edited.id],
    }
    # Back to the first version: where that branch was left (its latest leaf).
    back = store.switch_branch(cid, q1)
    assert back.active_leaf_id == a2
    assert path_ids(store, cid) == [q0, a0, q1, a1, q2, a2]
    flags = on_path_flags(store, cid)
    assert sum(flags.values()) == 6 and flags[edited.id] == 0
    assert store.switch_branch(cid, a2).active_leaf_id == a2
    # The first message's subtree was last written on the edit's branch.
    assert store.switch_branch(cid, q0).active_leaf_id != a2
    assert texts(store, cid)[2:] == ["q1 edited", "a1 on the edit"]


def test_the_latest_leaf_of_a_subtree_is_where_its_branch_was_left(store: Store) -> None:
    cid = store.create_conversation().id
    q0, a0 = chat(store, cid, 1)
    first = store.branch(cid, q0)
    assert first is None and path_ids(store, cid) == [q0]
    a0b = store.append_message(cid, assistant("a0 again")).id
    store.append_message(cid, user("more on b"))
    latest = store.append_message(cid, assistant("latest on b")).id
    store.switch_branch(cid, a0)
    assert path_ids(store, cid) == [q0, a0]
    # The root's subtree: its most recent leaf is on branch b.
    assert store.switch_branch(cid, q0).active_leaf_id == latest
    assert store.list_messages(cid)[1].id == a0b


def test_a_switch_back_returns_to_the_version_the_person_left_not_the_newest(
    store: Store,
) -> None:
    cid = store.create_conversation().id
    q0, a0, q1, a1 = chat(store, cid, 2)
    regenerated = store.branch(cid, q1, assistant("a1 again"))
    assert regenerated is not None
    # Back on the first answer to q1 (older than its regeneration), then off to an edit
    # of q0's answer: returning to a0 must land on a1, where the person was.
    assert store.switch_branch(cid, a1).active_leaf_id == a1
    store.branch(cid, q0, assistant("a0 again"))
    assert store.switch_branch(cid, a0).active_leaf_id == a1
    assert path_ids(store, cid) == [q0, a0, q1, a1]


def test_editing_the_first_message_starts_a_second_root(store: Store) -> None:
    cid = store.create_conversation().id
    q0, _a0 = chat(store, cid, 1)
    root = store.branch(cid, None, user("hello again"))
    assert root is not None and (root.seq, root.parent_id) == (0, None)
    assert store.sibling_ids(cid, [root.id])[root.id] == [q0, root.id]
    assert path_ids(store, cid) == [root.id]


def test_branching_refuses_a_message_off_the_active_path(store: Store) -> None:
    cid = store.create_conversation().id
    q0, a0 = chat(store, cid, 1)
    store.branch(cid, q0, assistant("other"))
    with pytest.raises(NotOnPath):
        store.branch(cid, a0, user("x"))
    with pytest.raises(NotFound):
        store.branch(cid, "nope", user("x"))
    with pytest.raises(NotFound):
        store.switch_branch(cid, "nope")


def test_each_path_keeps_its_own_folds(store: Store) -> None:
    cid = store.create_conversation().id
    ids = chat(store, cid, 4)  # q0 a0 q1 a1 q2 a2 q3 a3
    one = store.commit_fold(cid, fold_state(1, 2), expected_version=0)
    two = store.commit_fold(cid, fold_state(2, 4, previous_start=2), expected_version=1)
    assert [c.last_message_id for c in store.list_compactions(cid)] == [ids[1], ids[3]]

    # An edit after the current fold's boundary keeps it.
    store.branch(cid, ids[5], user("q3 edited"))
    assert store.current_compaction(cid).version == two.version
    store.switch_branch(cid, ids[7])
    # An edit of a folded message (q1, behind fold 2) sees only fold 1.
    store.branch(cid, ids[1], user("q1 edited"))
    assert store.current_compaction(cid).version == one.version
    assert [c.state.version for c in store.list_compactions(cid, active_path_only=True)] == [1]
    store.append_message(cid, assistant("a1 on the edit"))
    three = store.commit_fold(cid, fold_state(3, 4, previous_start=2), expected_version=1)
    edit_leaf = store.get_conversation(cid).active_leaf_id
    assert edit_leaf is not None

    # Back on the first path: its own fold pointer (2), and fold 3 is not its. q1's
    # subtree holds the "q3 edited" leaf too, but a3 is where the person left it.
    assert store.switch_branch(cid, ids[2]).active_leaf_id == ids[7]
    assert store.current_compaction(cid).version == two.version
    assert [c.state.version for c in store.list_compactions(cid, active_path_only=True)] == [1, 2]
    # Undo on this path goes back to its parent, and the branch is untouched by it.
    store.undo_fold(cid, two.version)
    assert store.current_compaction(cid).version == one.version
    store.switch_branch(cid, edit_leaf)
    assert store.current_compaction(cid).version == three.version
    store.switch_branch(cid, ids[7])
    assert store.current_compaction(cid).version == one.version


def test_a_path_left_without_a_remembered_fold_walks_the_chain(store: Store) -> None:
    cid = store.create_conversation().id
    ids = chat(store, cid, 3)  # q0 a0 q1 a1 q2 a2
    store.commit_fold(cid, fold_state(1, 2), expected_version=0)
    store.commit_fold(cid, fold_state(2, 4, previous_start=2), expected_version=1)
    other = store.branch(cid, ids[1], user("another q1"))
    assert other is not None
    store.switch_branch(cid, ids[2])
    assert store.current_compaction(cid).version == 2
    # No remembered pointer (as an import leaves the leaves): the pointer walks back from
    # the current fold to the deepest one that applies to the new path.
    store._pool.get().conn.execute("UPDATE messages SET leaf_fold_version = NULL")
    store.switch_branch(cid, other.id)
    assert store.current_compaction(cid).version == 1


def test_search_finds_every_branch_and_says_which(store: Store) -> None:
    cid = store.create_conversation().id
    q0, a0 = chat(store, cid, 1)
    store.branch(cid, q0, assistant("a quokka on the other branch"))
    store.switch_branch(cid, a0)
    hit = store.search_hit(cid, "quokka")
    assert hit is not None and (hit.seq, hit.on_active_path) == (1, False)
    assert "quokka" in hit.snippet
    assert [c.id for c in store.list_conversations(q="quokka")] == [cid]
    # A match on the active path wins over a newer one elsewhere.
    here = store.append_message(cid, user("a quokka here too"))
    hit = store.search_hit(cid, "quokka")
    assert hit is not None and (hit.message_id, hit.on_active_path) == (here.id, True)


def test_pins_ride_only_on_their_own_branch(store: Store) -> None:
    cid = store.create_conversation().id
    q0, a0, _q1, a1 = chat(store, cid, 2)
    store.set_pinned(cid, a1, True)
    store.set_pinned(cid, q0, True)
    store.branch(cid, a0, user("another q1"))
    assert [p.message_id for p in store.list_pins(cid)] == [q0]
    store.switch_branch(cid, a1)
    assert [p.message_id for p in store.list_pins(cid)] == [q0, a1]


def test_lanes_rebuilt_from_parents_are_the_lanes_written_one_by_one(store: Store) -> None:
    """What the migration, an import and a salvage build in one go (`rebuild_lanes`)
    equals what appends, edits and switches maintained message by message."""
    cid = store.create_conversation().id
    first = store.append_messages(cid, [user(f"q{n}") for n in range(6)])
    store.branch(cid, first[1].id, user("edit at 2"))
    store.append_messages(cid, [user("more"), user("and more")])
    store.branch(cid, None, user("another first message"))
    store.switch_branch(cid, first[4].id)
    store.branch(cid, first[4].id, user("edit at 5"))
    store.branch(cid, first[2].id, user("edit at 3"))
    store.switch_branch(cid, first[0].id)
    other = store.create_conversation().id
    store.append_messages(other, [user("x"), user("y")])
    conn = store._pool.get().conn

    def snapshot() -> tuple[object, ...]:
        lanes = conn.execute(
            "SELECT h.id, p.id, l.fork_seq, l.head_seq, l.path_last FROM lanes AS l "
            "JOIN messages AS h ON h.pk = l.lane "
            "LEFT JOIN messages AS p ON p.pk = l.parent_lane ORDER BY h.id"
        ).fetchall()
        members = conn.execute(
            "SELECT m.id, h.id FROM messages AS m JOIN messages AS h ON h.pk = m.lane ORDER BY m.id"
        ).fetchall()
        views = [(path_ids(store, c), [r.id for r in store.branch_starts(c)]) for c in (cid, other)]
        return lanes, members, views

    before = snapshot()
    conn.execute("BEGIN IMMEDIATE")
    rebuild_lanes(conn)
    conn.execute("COMMIT")
    assert snapshot() == before
    assert len(before[0]) == 6  # the main lane, four edits, the other conversation's


def test_switching_versions_or_moving_to_a_project_keeps_the_sidebar_order(store: Store) -> None:
    """Only new messages move a conversation up the sidebar (newest `updated_at` first):
    looking at another version, or filing it in a project, is not news in it."""
    older = store.create_conversation().id
    q0, a0 = chat(store, older, 1)
    store.branch(older, None, user("q0 edited"))
    newer = store.create_conversation().id
    chat(store, newer, 1)
    order = [c.id for c in store.list_conversations()]
    assert order == [newer, older]
    stamp = store.get_conversation(older).updated_at

    store.switch_branch(older, q0)
    assert store.get_conversation(older).active_leaf_id == a0
    project = store.create_project(name="P")
    store.move_conversation(older, project.id)
    store.move_conversation(older, None)

    assert store.get_conversation(older).updated_at == stamp
    assert [c.id for c in store.list_conversations()] == order
    # A new message still brings it to the top.
    store.append_message(older, user("q1"))
    assert [c.id for c in store.list_conversations()] == [older, newer]
