from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_helpers import (
    assert_index_matches_a_fresh_rebuild,
    exchange,
    fold_state,
    rich_history,
    ticking_clock,
)

from foldline.core.calibration import Calibration
from foldline.core.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    assistant,
    user,
)
from foldline.store import NotFound, Store


def test_append_gives_dense_seq_per_conversation(store: Store) -> None:
    a = store.create_conversation()
    b = store.create_conversation()
    seqs_a = [store.append_message(a.id, user(f"a{i}")).seq for i in range(3)]
    seqs_b = [store.append_message(b.id, user(f"b{i}")).seq for i in range(2)]
    seqs_a += [r.seq for r in store.append_messages(a.id, exchange(1))]
    assert seqs_a == [0, 1, 2, 3, 4, 5, 6]
    assert seqs_b == [0, 1]
    assert store.message_count(a.id) == 7
    assert store.get_conversation(a.id).message_count == 7


def test_every_part_kind_round_trips_through_the_database(store: Store, db_path) -> None:
    conversation = store.create_conversation()
    written = store.append_messages(conversation.id, rich_history())
    store.close()
    with Store(db_path) as reopened:
        read = reopened.list_messages(conversation.id)
    assert [r.message for r in read] == rich_history()
    assert read == written


def test_append_records_status_usage_and_token_count(store: Store) -> None:
    conversation = store.create_conversation()
    record = store.append_message(
        conversation.id,
        assistant("hi"),
        status="streaming",
        usage={"input_tokens": 10},
        token_count=3,
    )
    assert store.get_message(record.id) == record
    assert (record.status, record.usage, record.token_count, record.error) == (
        "streaming",
        {"input_tokens": 10},
        3,
        None,
    )


def test_update_message_changes_only_what_is_given(store: Store) -> None:
    conversation = store.create_conversation()
    record = store.append_message(conversation.id, assistant(""), status="streaming")
    partial = store.update_message(record.id, message=assistant("Hel"))
    assert (partial.message.text, partial.status) == ("Hel", "streaming")
    assert partial.updated_at > record.updated_at
    done = store.update_message(
        record.id,
        message=assistant("Hello"),
        status="complete",
        usage={"input_tokens": 5, "output_tokens": 2},
        token_count=4,
    )
    assert store.get_message(record.id) == done
    assert (done.message.text, done.status, done.usage, done.token_count) == (
        "Hello",
        "complete",
        {"input_tokens": 5, "output_tokens": 2},
        4,
    )
    failed = store.update_message(record.id, status="error", error="rate limited")
    assert (failed.message.text, failed.status, failed.error, failed.token_count) == (
        "Hello",
        "error",
        "rate limited",
        4,
    )
    assert (failed.seq, failed.created_at) == (record.seq, record.created_at)


def test_unknown_status_and_unknown_ids_are_refused(store: Store) -> None:
    conversation = store.create_conversation()
    with pytest.raises(ValueError, match="status"):
        store.append_message(conversation.id, user("x"), status="done")  # type: ignore[arg-type]
    record = store.append_message(conversation.id, user("x"))
    with pytest.raises(ValueError, match="status"):
        store.update_message(record.id, status="finished")  # type: ignore[arg-type]
    with pytest.raises(NotFound, match="missing-id"):
        store.update_message("missing-id", status="complete")
    with pytest.raises(NotFound, match="missing-id"):
        store.get_message("missing-id")
    assert store.message_count(conversation.id) == 1


def test_pages_of_the_display_history(store: Store) -> None:
    conversation = store.create_conversation()
    for n in range(5):
        store.append_messages(conversation.id, exchange(n))
    everything = store.list_messages(conversation.id, limit=1000)
    assert [r.seq for r in everything] == list(range(20))
    pages = [store.list_messages(conversation.id, offset=o, limit=6) for o in range(0, 20, 6)]
    assert [r for page in pages for r in page] == everything
    assert [len(page) for page in pages] == [6, 6, 6, 2]
    assert store.list_messages(conversation.id, offset=20) == []
    with pytest.raises(ValueError):
        store.list_messages(conversation.id, offset=-1)


def test_load_window_reads_from_the_current_fold(store: Store) -> None:
    conversation = store.create_conversation()
    for n in range(4):
        store.append_messages(conversation.id, exchange(n))
    assert store.load_window(conversation.id) == (None, store.list_messages(conversation.id))
    store.commit_fold(conversation.id, fold_state(1, 12), expected_version=0)
    state, window = store.load_window(conversation.id)
    assert state is not None and state.api_start_index == 12
    assert [r.seq for r in window] == [12, 13, 14, 15]
    assert window == store.list_messages(conversation.id, offset=12)


def _plans(conn: sqlite3.Connection, statements: list[str]) -> list[str]:
    details = []
    for sql in statements:
        if sql.lstrip().upper().startswith(("SELECT", "UPDATE", "INSERT")):
            details += [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    return details


@pytest.mark.parametrize(
    "operation",
    ["load_window", "list_messages", "message_count", "append_message", "current_compaction"],
)
def test_reads_of_one_conversation_never_scan_a_table(store: Store, operation: str) -> None:
    """The model's view must cost the same at 100 or 100k messages: every statement must
    be an index search, never a scan (the benchmark measures the timings)."""
    conversation = store.create_conversation()
    for n in range(5):
        store.append_messages(conversation.id, exchange(n))
    store.commit_fold(conversation.id, fold_state(1, 16), expected_version=0)
    conn = store._pool.get().conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        if operation == "append_message":
            store.append_message(conversation.id, user("more"))
        else:
            getattr(store, operation)(conversation.id)
    finally:
        conn.set_trace_callback(None)
    details = _plans(conn, statements)
    assert details, statements
    assert not [d for d in details if d.startswith("SCAN")], details


def test_startup_recovery_marks_streaming_messages_interrupted(db_path) -> None:
    store = Store(db_path, clock=ticking_clock())
    conversation = store.create_conversation()
    question = store.append_message(conversation.id, user("tell me a story"))
    answer = store.append_message(conversation.id, assistant(""), status="streaming")
    store.update_message(answer.id, message=assistant("Once upon a"))
    store.close()  # as if the process died: nothing ever completed the answer

    reopened = Store(db_path)
    try:
        recovered = reopened.get_message(answer.id)
        assert recovered.status == "interrupted"
        assert recovered.message.text == "Once upon a"
        assert recovered.error
        assert reopened.recovered_message_ids == (answer.id,)
        assert reopened.get_message(question.id).status == "complete"
    finally:
        reopened.close()
    with Store(db_path) as again:
        assert again.recovered_message_ids == ()


def test_calibration_per_provider_and_model(store: Store, db_path) -> None:
    assert store.get_calibration("anthropic", "claude-sonnet-4-5") == Calibration()
    store.set_calibration("anthropic", "claude-sonnet-4-5", Calibration(ratio=1.18, samples=3))
    store.set_calibration("local", "claude-sonnet-4-5", Calibration(ratio=0.9, samples=1))
    store.set_calibration("anthropic", "claude-sonnet-4-5", Calibration(ratio=1.2, samples=4))
    store.close()
    with Store(db_path) as reopened:
        assert reopened.get_calibration("anthropic", "claude-sonnet-4-5") == Calibration(1.2, 4)
        assert reopened.get_calibration("local", "claude-sonnet-4-5") == Calibration(0.9, 1)
        assert reopened.get_calibration("anthropic", "other") == Calibration()


_text = st.text(max_size=40)
_parts = st.one_of(
    st.builds(TextPart, text=_text),
    st.builds(ReasoningPart, text=_text, signature=st.none() | _text),
    st.builds(
        ToolCallPart,
        id=_text,
        name=_text,
        input=st.dictionaries(_text, st.none() | st.integers() | _text | st.booleans()),
    ),
    st.builds(
        ToolResultPart,
        call_id=_text,
        name=_text,
        output=_text,
        is_error=st.booleans(),
        compacted_at=st.none() | _text,
        full_output=st.none() | _text,
    ),
)
_messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "tool"]),
    parts=st.lists(_parts, max_size=4).map(tuple),
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    messages=st.lists(_messages, min_size=1, max_size=4),
    replacements=st.lists(_messages, max_size=3),
    delete=st.booleans(),
)
def test_any_message_round_trips_and_the_index_follows_every_write(
    store: Store, messages: list[Message], replacements: list[Message], delete: bool
) -> None:
    conversation = store.create_conversation()
    written = store.append_messages(conversation.id, messages)
    assert [store.get_message(r.id).message for r in written] == messages
    for record, replacement in zip(written, replacements, strict=False):
        assert store.update_message(record.id, message=replacement).message == replacement
    if delete:
        store.delete_conversation(conversation.id)
    assert_index_matches_a_fresh_rebuild(store)


def test_search_follows_an_edited_message(store: Store) -> None:
    conversation = store.create_conversation()
    record = store.append_message(conversation.id, assistant("the walrus sings"))
    store.update_message(record.id, message=assistant("the narwhal sings"))
    assert store.search_messages("walrus") == []
    assert [r.id for r in store.search_messages("narwhal")] == [record.id]
