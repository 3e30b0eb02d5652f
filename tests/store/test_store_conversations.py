from __future__ import annotations

import re
import threading
from datetime import datetime

import pytest
from store_helpers import exchange, fold_state

from foldline.core.messages import user
from foldline.store import NotFound, Store

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_create_and_get_round_trip_every_field(store: Store) -> None:
    created = store.create_conversation(
        title="Refactor the parser",
        model="gpt-4.1",
        system_prompt="Be terse.",
        settings={"compaction": {"threshold": 0.7}, "tags": ["a", "b"]},
    )
    fetched = store.get_conversation(created.id)
    assert fetched == created
    assert fetched.title == "Refactor the parser"
    assert fetched.model == "gpt-4.1"
    assert fetched.system_prompt == "Be terse."
    assert fetched.settings == {"compaction": {"threshold": 0.7}, "tags": ["a", "b"]}
    assert fetched.message_count == 0


def test_defaults_of_a_new_conversation(store: Store) -> None:
    created = store.create_conversation()
    assert (created.title, created.model, created.system_prompt, created.settings) == (
        "New conversation",
        None,
        "",
        {},
    )


def test_timestamps_are_iso_8601_utc(db_path) -> None:
    # The real clock this time: the format must hold for whatever time it is.
    with Store(db_path) as store:
        conversation = store.create_conversation()
        message = store.append_message(conversation.id, user("hi"))
    for stamp in (conversation.created_at, conversation.updated_at, message.created_at):
        assert ISO_UTC.match(stamp), stamp
        assert datetime.fromisoformat(stamp).utcoffset().total_seconds() == 0


def test_list_is_newest_first_and_a_new_message_moves_a_conversation_up(store: Store) -> None:
    first = store.create_conversation(title="first")
    second = store.create_conversation(title="second")
    third = store.create_conversation(title="third")
    assert [c.id for c in store.list_conversations()] == [third.id, second.id, first.id]
    store.append_message(first.id, user("back to the first one"))
    assert [c.id for c in store.list_conversations()] == [first.id, third.id, second.id]
    assert [c.id for c in store.list_conversations(limit=2)] == [first.id, third.id]


def test_list_reports_message_counts(store: Store) -> None:
    empty = store.create_conversation(title="empty")
    full = store.create_conversation(title="full")
    store.append_messages(full.id, exchange(1) + exchange(2))
    counts = {c.id: c.message_count for c in store.list_conversations()}
    assert counts == {empty.id: 0, full.id: 8}


def test_update_changes_only_given_fields_and_bumps_updated_at(store: Store) -> None:
    created = store.create_conversation(
        title="old", model="m1", system_prompt="p", settings={"a": 1}
    )
    renamed = store.update_conversation(created.id, title="new")
    assert (renamed.title, renamed.model, renamed.system_prompt, renamed.settings) == (
        "new",
        "m1",
        "p",
        {"a": 1},
    )
    assert renamed.updated_at > created.updated_at
    assert renamed.created_at == created.created_at
    changed = store.update_conversation(
        created.id, model="m2", system_prompt="q", settings={"b": 2}
    )
    assert (changed.title, changed.model, changed.system_prompt, changed.settings) == (
        "new",
        "m2",
        "q",
        {"b": 2},
    )
    assert store.get_conversation(created.id) == changed


def test_unknown_conversation_raises_not_found_naming_the_id(store: Store) -> None:
    for call in (
        lambda: store.get_conversation("nope"),
        lambda: store.update_conversation("nope", title="x"),
        lambda: store.delete_conversation("nope"),
        lambda: store.append_message("nope", user("x")),
        lambda: store.list_messages("nope"),
        lambda: store.message_count("nope"),
        lambda: store.load_window("nope"),
        lambda: store.current_compaction("nope"),
        lambda: store.list_compactions("nope"),
    ):
        with pytest.raises(NotFound, match="nope"):
            call()


def test_delete_removes_messages_and_every_fold_version(store: Store, db_path) -> None:
    doomed = store.create_conversation(title="doomed")
    kept = store.create_conversation(title="kept")
    store.append_messages(doomed.id, exchange(1) + exchange(2))
    kept_messages = store.append_messages(kept.id, exchange(3))
    store.commit_fold(doomed.id, fold_state(1, 4), expected_version=0)
    store.commit_fold(doomed.id, fold_state(2, 6, previous_start=4), expected_version=1)
    doomed_message = store.list_messages(doomed.id)[0]

    store.delete_conversation(doomed.id)

    with pytest.raises(NotFound):
        store.get_conversation(doomed.id)
    with pytest.raises(NotFound):
        store.get_message(doomed_message.id)
    assert store.search_messages("question") == [
        m for m in kept_messages if m.message.text == "question 3"
    ]
    rows = {
        table: store._pool.get().conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("conversations", "messages", "compactions")
    }
    assert rows == {"conversations": 1, "messages": 4, "compactions": 0}
    assert [c.id for c in store.list_conversations()] == [kept.id]


def test_a_closed_store_refuses_work_on_every_thread(db_path) -> None:
    store = Store(db_path)
    conversation = store.create_conversation()
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.get_conversation(conversation.id)
    errors: list[BaseException] = []

    def elsewhere() -> None:
        try:
            store.get_conversation(conversation.id)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert [type(e) for e in errors] == [RuntimeError]
