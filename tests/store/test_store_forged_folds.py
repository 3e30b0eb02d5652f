"""Forged folds in an import: a fold that would apply to every branch, and a fold chain
that jumps from one branch to another. Both are refused; and undo never makes current a
fold that does not apply to the active path, however the chain was made."""

from __future__ import annotations

import json

import pytest
from store_helpers import exchange, fold_state

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.store.export import export_json
from foldline.store.import_reader import import_json


def two_branches(store: Store) -> str:
    """Path A: 12 messages, fold v1 at 9. Path B branches at index 5 and is 12 long,
    with its own fold v2 (parent 0: v1 does not apply to it) at 11. B is active."""
    cid = store.create_conversation().id
    store.append_messages(cid, [m for n in range(3) for m in exchange(n)])
    store.commit_fold(cid, fold_state(1, 9), expected_version=0)
    path_a = store.list_messages(cid)
    store.branch(cid, path_a[4].id, user("another question"))
    store.append_messages(cid, [assistant(f"answer {n}") for n in range(6)])
    assert store.message_count(cid) == 12
    store.commit_fold(cid, fold_state(2, 11), expected_version=0)
    return cid


def test_a_format_2_fold_without_its_last_message_is_refused(store: Store) -> None:
    document = export_json(store, two_branches(store))
    del document["compactions"][0]["lastMessageId"]
    with pytest.raises(ValueError, match=r"compactions\[0\]: lastMessageId is required"):
        import_json(store, document)


def test_a_fold_chain_that_jumps_to_another_branch_is_refused(store: Store) -> None:
    document = export_json(store, two_branches(store))
    assert [f["parentVersion"] for f in document["compactions"]] == [0, 0]
    forged = json.loads(json.dumps(document))
    forged["compactions"][1]["parentVersion"] = 1
    with pytest.raises(ValueError, match="v2 lies on another branch than its parent fold v1"):
        import_json(store, forged)
    assert len(store.list_conversations()) == 1
    # The honest document imports, and its chain on one branch still does.
    imported = import_json(store, document)
    assert store.current_compaction(imported.id).version == 2


def test_undo_walks_back_to_a_fold_that_applies_to_the_active_path(store: Store) -> None:
    cid = two_branches(store)
    # A chain made across branches (by an older version's import): v2's parent is v1.
    conn = store._pool.get().conn
    conn.execute(
        "UPDATE compactions SET parent_version = 1 WHERE conversation_id = ? AND version = 2",
        (cid,),
    )
    assert store.current_compaction(cid).version == 2
    assert store.undo_fold(cid, 2) is None
    assert store.get_conversation(cid) is not None
    assert store.list_compactions(cid) and store.current_compaction(cid) is None
