"""The store's tree follows the reference model through random edits, folds and switches.

The same random steps run on a real `Store` and on `foldline.testing.tree_model`, whose
rules the property test in tests/core checks; after each step the store's active path,
its siblings and its current fold must be the model's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import ticking_clock

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.testing.tree_model import ConversationTree

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["exchange", "edit", "regenerate", "switch", "fold", "undo"]),
        st.integers(min_value=0, max_value=10_000),
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=100, deadline=None)
@given(STEPS)
def test_the_store_keeps_the_active_path_and_its_fold_like_the_model(
    steps: list[tuple[str, int, bool]],
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = Store(Path(directory) / "tree.db", clock=ticking_clock())
        try:
            run_steps(store, steps)
        finally:
            store.close()


def run_steps(store: Store, steps: list[tuple[str, int, bool]]) -> None:
    model = ConversationTree()
    cid = store.create_conversation().id
    stored: dict[str, str] = {}  # model id -> store id

    def append(messages: list) -> None:  # type: ignore[type-arg]
        for model_id, message in zip(model.append(*messages), messages, strict=True):
            stored[model_id] = store.append_message(cid, message).id

    append(model.exchange(0, with_tool=True))
    for step, (operation, choice, flag) in enumerate(steps, start=1):
        path = model.path()
        if operation == "exchange":
            append(model.exchange(step, with_tool=flag))
        elif operation in ("edit", "regenerate"):
            role = "user" if operation == "edit" else "assistant"
            targets = [
                i
                for i, m in enumerate(path)
                if model.messages[m].role == role and (i > 0 or role == "user")
            ]
            if targets:
                index = targets[choice % len(targets)]
                parent = model.parent_of[path[index]]
                message = user(f"edit {step}") if role == "user" else assistant(f"again {step}")
                new_id = model.branch(parent, message)
                record = store.branch(cid, None if parent is None else stored[parent], message)
                assert record is not None
                stored[new_id] = record.id
        elif operation == "switch":
            target = model.order[choice % len(model.order)]
            model.switch(target)
            store.switch_branch(cid, stored[target])
        elif operation == "fold":
            before = model.pointer
            state = model.fold(choice)
            if state is not None:
                committed = store.commit_fold(cid, state, expected_version=before)
                assert committed.version == state.version
        else:
            undone = model.undo()
            if undone:
                store.undo_fold(cid, undone)

        active = store.list_messages(cid, limit=10_000)
        assert [r.id for r in active] == [stored[m] for m in model.path()]
        assert store.get_conversation(cid).active_leaf_id == stored[model.leaf]
        current = store.current_compaction(cid)
        assert (current.version if current else 0) == model.pointer
        for link in store.list_compactions(cid):
            expected = model.folds[link.state.version].last_message_id
            assert link.last_message_id == stored[expected]
        siblings = store.sibling_ids(cid, [r.id for r in active])
        for model_id in model.path():
            parent = model.parent_of[model_id]
            expected_siblings = [m for m in model.order if model.parent_of[m] == parent]
            assert siblings[stored[model_id]] == [stored[m] for m in expected_siblings]
