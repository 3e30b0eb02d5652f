"""A full disk is `507 disk_full` with a sentence saying so, and nothing half-written.

SQLite's `max_page_count` stands in for the disk: past it, every write fails exactly as
on a full disk (SQLITE_FULL, "database or disk is full")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store, connection


def _fill_the_disk(store: Store, monkeypatch: pytest.MonkeyPatch, spare_pages: int = 4) -> None:
    conn = store._pool.get().conn
    limit = conn.execute("PRAGMA page_count").fetchone()[0] + spare_pages
    opened = connection.open_database

    def open_limited(path: Path):  # type: ignore[no-untyped-def]
        db = opened(path)
        db.conn.execute(f"PRAGMA max_page_count = {limit}")
        return db

    monkeypatch.setattr(connection, "open_database", open_limited)
    for _, db in store._pool._open.values():  # connections other threads already hold
        db.conn.execute(f"PRAGMA max_page_count = {limit}")


def test_a_full_disk_answers_disk_full_and_writes_nothing(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = store.create_conversation(title="big", model="fake-model")
    store.append_messages(
        conversation.id, [m for n in range(200) for m in (user(f"q{n} " * 200), assistant("a"))]
    )
    export = client.get(f"/api/conversations/{conversation.id}/export").json()
    _fill_the_disk(store, monkeypatch)

    imported = client.post("/api/conversations/import", json=export)
    assert imported.status_code == 507
    assert imported.json()["error"]["code"] == "disk_full"
    assert "disk is full" in imported.json()["error"]["message"]
    assert [c.id for c in store.list_conversations()] == [conversation.id]

    turn = client.post(
        f"/api/conversations/{conversation.id}/messages", json={"content": "x" * 400_000}
    )
    assert turn.status_code in (200, 507)
    if turn.status_code == 200:
        assert "disk_full" in turn.text
    assert store.message_count(conversation.id) == 400
    # Reading still works: nothing is lost.
    assert client.get(f"/api/conversations/{conversation.id}/messages").status_code == 200


def test_sqlite_reports_a_full_database_as_we_expect(tmp_path: Path) -> None:
    """The stand-in is faithful: SQLite names the condition SQLITE_FULL."""
    conn = sqlite3.connect(tmp_path / "x.db")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA max_page_count = 2")
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    assert caught.value.sqlite_errorname == "SQLITE_FULL"
