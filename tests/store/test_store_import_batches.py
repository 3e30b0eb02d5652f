"""An import writes in batches, each its own transaction, and shows nothing until done.

Other conversations' writes get the database between two batches; until `finish`, the
conversation is in no list, search or lookup; a failed import deletes what it wrote,
and one cut by SIGKILL is deleted when the store opens next.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from test_store_crash import integrity, run_and_kill

from foldline.core.messages import assistant, user
from foldline.store import NotFound, Store
from foldline.store.records import ConversationRecord, MessageRecord

NOW = "2025-01-01T00:00:00.000000Z"


def _record(n: int, parent: str | None) -> MessageRecord:
    return MessageRecord(
        id=f"m{n}",
        conversation_id="x",
        seq=n,
        message=user(f"walrus question {n}") if n % 2 == 0 else assistant(f"answer {n}"),
        status="complete",
        usage=None,
        token_count=None,
        created_at=NOW,
        updated_at=NOW,
        error=None,
        parent_id=parent,
    )


def _conversation() -> ConversationRecord:
    return ConversationRecord(
        id="x",
        title="Imported",
        model=None,
        system_prompt="",
        settings={},
        created_at=NOW,
        updated_at=NOW,
        message_count=0,
    )


def _rows(store: Store, conversation_id: str) -> int:
    conn = store._pool.get().conn
    return conn.execute(
        "SELECT count(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()[0]


def test_other_writes_go_through_between_batches_and_nothing_shows_until_done(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "foldline.db")
    with store.import_conversation(_conversation()) as writer:
        writer.add_messages([_record(0, None), _record(1, "m0")])
        # Another thread (its own connection) writes with no patience at all: it gets
        # the lock at once because no transaction is held between two batches.
        written: list[str] = []

        def other_write() -> None:
            conn = store._pool.get().conn
            conn.execute("PRAGMA busy_timeout = 0")
            written.append(store.create_conversation(title="Meanwhile").id)

        thread = threading.Thread(target=other_write)
        thread.start()
        thread.join()
        assert written
        writer.add_messages([_record(2, "m1")])
        # Committed, yet hidden from every read.
        hidden = writer.record.id
        assert _rows(store, hidden) == 3
        assert [c.title for c in store.list_conversations()] == ["Meanwhile"]
        assert store.list_conversations(q="walrus") == []
        assert store.search_messages("walrus") == []
        with pytest.raises(NotFound):
            store.get_conversation(hidden)
        record = writer.finish([])
    assert record.message_count == 3
    assert {c.title for c in store.list_conversations()} == {"Imported", "Meanwhile"}
    assert [m.message.text for m in store.list_messages(record.id)] == [
        "walrus question 0",
        "answer 1",
        "walrus question 2",
    ]
    assert len(store.search_messages("walrus")) == 2
    store.close()


def test_a_failed_import_deletes_what_it_wrote(tmp_path: Path) -> None:
    store = Store(tmp_path / "foldline.db")
    with pytest.raises(ValueError), store.import_conversation(_conversation()) as writer:
        writer.add_messages([_record(n, f"m{n - 1}" if n else None) for n in range(5)])
        hidden = writer.record.id
        assert _rows(store, hidden) == 5
        raise ValueError("invalid data further on")
    assert _rows(store, hidden) == 0
    conn = store._pool.get().conn
    assert conn.execute("SELECT count(*) FROM conversations").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM lanes").fetchone()[0] == 0
    store.close()


@pytest.mark.parametrize("batches_before_kill", [1, 7])
def test_an_import_killed_half_way_leaves_nothing(tmp_path: Path, batches_before_kill: int) -> None:
    db_path = tmp_path / "foldline.db"
    lines = run_and_kill("import", db_path, 2 + batches_before_kill, 0.0)
    batches = [line for line in lines if line.startswith("batch ")]
    assert len(batches) >= batches_before_kill
    assert not [line for line in lines if line.startswith("imported ")]
    hidden = batches[-1].split()[2]
    # Batches committed before the kill are in the file (read without recovery)...
    raw = sqlite3.connect(db_path)
    assert (
        raw.execute(
            "SELECT count(*) FROM messages WHERE conversation_id = ?", (hidden,)
        ).fetchone()[0]
        >= 500 * batches_before_kill
    )
    raw.close()
    # ...and opening the store deletes them: nothing half-imported remains.
    with Store(db_path) as store:
        assert store.list_conversations() == []
        assert _rows(store, hidden) == 0
        conn = store._pool.get().conn
        assert conn.execute("SELECT count(*) FROM conversations").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM lanes").fetchone()[0] == 0
        assert integrity(store) == "ok"
