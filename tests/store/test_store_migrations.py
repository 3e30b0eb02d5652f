"""Migrations from an empty database and from every earlier version, and the schema docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlite_utils import Database

from foldline.core.calibration import Calibration
from foldline.core.messages import user
from foldline.store import Store
from foldline.store.migrations import MIGRATION_NAMES, migrations
from foldline.store.schema import COLUMN_DOCS, SEARCH_TRIGGERS

NOW = "2025-01-01T00:00:00.000000Z"


def schema_of(path: Path) -> list[tuple[str, str, str]]:
    db = Database(path)
    try:
        return [
            (row[0], row[1], row[2])
            for row in db.execute(
                "SELECT type, name, sql FROM sqlite_master "
                "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
            )
        ]
    finally:
        db.close()


def seed(db: Database, applied: set[str]) -> None:
    """Rows as the application wrote them at that schema version, in that version's SQL."""
    if "m001_conversations_and_messages" not in applied:
        return
    db.execute(
        "INSERT INTO conversations (id, title, model, system_prompt, settings, created_at, "
        "updated_at) VALUES ('c1', 'Seeded', 'm', 'sys', '{\"k\": 1}', ?, ?)",
        (NOW, NOW),
    )
    parts = [
        json.dumps([{"kind": "text", "text": "the ancient walrus"}]),
        json.dumps([{"kind": "text", "text": "half an ans"}]),
    ]
    for seq, (role, status) in enumerate([("user", "complete"), ("assistant", "streaming")]):
        db.execute(
            "INSERT INTO messages (id, conversation_id, seq, role, parts, status, "
            "created_at, updated_at) VALUES (?, 'c1', ?, ?, ?, ?, ?, ?)",
            (f"m{seq}", seq, role, parts[seq], status, NOW, NOW),
        )
    if "m002_compactions" in applied:
        db.execute(
            "INSERT INTO compactions (conversation_id, version, parent_version, compacted_at, "
            "summary_message, api_start_index, from_index, to_index, message_count, strategy, "
            "trigger, tokens_before, tokens_after, model, degraded) "
            "VALUES ('c1', 1, 0, ?, 'old summary', 1, 0, 1, 1, 'structured', 'auto', 90, 10, "
            "'m', 0)",
            (NOW,),
        )
        db.execute("UPDATE conversations SET fold_version = 1 WHERE id = 'c1'")
    if "m003_calibration" in applied:
        db.execute("INSERT INTO calibration VALUES ('anthropic', 'claude', 1.25, 7, ?)", (NOW,))
    if "m008_message_tree" in applied:
        db.execute("UPDATE messages SET parent_id = 'm0' WHERE id = 'm1'")
        db.execute("UPDATE conversations SET active_leaf_id = 'm1' WHERE id = 'c1'")
        db.execute("UPDATE compactions SET last_message_id = 'm0' WHERE conversation_id = 'c1'")
    if "m011_counts_and_lanes" in applied:
        # One lane (the first message's pk) holding both messages, on the path to m1.
        db.execute("UPDATE messages SET lane = (SELECT pk FROM messages WHERE id = 'm0')")
        db.execute(
            "INSERT INTO lanes (lane, conversation_id, head_seq, path_last) "
            "SELECT pk, 'c1', 0, 1 FROM messages WHERE id = 'm0'"
        )
    if "m010_projects" in applied:
        db.execute(
            "INSERT INTO projects (id, name, instructions, settings, created_at, updated_at) "
            "VALUES ('p1', 'Seeded project', 'Be brief.', '{}', ?, ?)",
            (NOW, NOW),
        )
        db.execute(
            "INSERT INTO project_files (id, project_id, name, media_type, size, sha256, "
            "text, content, created_at) VALUES ('f1', 'p1', 'a.txt', 'text/plain', 3, 'x', "
            "'abc', CAST('abc' AS BLOB), ?)",
            (NOW,),
        )
        db.execute("UPDATE conversations SET project_id = 'p1' WHERE id = 'c1'")


@pytest.mark.parametrize("applied_count", range(len(MIGRATION_NAMES) + 1))
def test_upgrade_from_every_earlier_version(tmp_path: Path, applied_count: int) -> None:
    fresh = tmp_path / "fresh.db"
    Store(fresh).close()

    path = tmp_path / "old.db"
    old = Database(path)
    if applied_count < len(MIGRATION_NAMES):
        migrations.apply(old, stop_before=MIGRATION_NAMES[applied_count])
    else:
        migrations.apply(old)
    applied = {m.name for m in migrations.applied(old)}
    assert applied == set(MIGRATION_NAMES[:applied_count])
    seed(old, applied)
    old.close()

    with Store(path) as store:
        assert schema_of(path) == schema_of(fresh)
        assert [m.name for m in migrations.applied(store._pool.get())] == list(MIGRATION_NAMES)
        if applied_count == 0:
            assert store.list_conversations() == []
            conversation_id = store.create_conversation().id
        else:
            conversation_id = "c1"
            conversation = store.get_conversation("c1")
            assert (conversation.title, conversation.settings, conversation.message_count) == (
                "Seeded",
                {"k": 1},
                2,
            )
            # Rows written before the search migration are indexed by it.
            assert [r.id for r in store.search_messages("walrus")] == ["m0"]
            # And by the recall index's migration, stemmed.
            assert [r.seq for r in store.recall_search("c1", '"walrus"', 5)[0]] == [0]
            # The streaming row left by the old version is recovered on the upgrade.
            assert store.get_message("m1").status == "interrupted"
            folded = "m002_compactions" in applied
            state = store.current_compaction("c1")
            assert (state.summary_message if state else None) == ("old summary" if folded else None)
            # A fold stored before its cost was recorded reads as "not recorded".
            if state is not None:
                assert (state.summary_input_tokens, state.saving_turns) == (0, 0)
            # Every conversation is one path: each message follows the one before, the
            # last is the active leaf, and a fold's last message is the one before its
            # boundary.
            assert [store.get_message(m).parent_id for m in ("m0", "m1")] == [None, "m0"]
            assert conversation.active_leaf_id == "m1"
            assert [c.last_message_id for c in store.list_compactions("c1")] == (
                ["m0"] if folded else []
            )
            # A conversation from before projects is in none; one after keeps its own.
            in_project = "m010_projects" in applied
            assert conversation.project_id == ("p1" if in_project else None)
            assert [p.name for p in store.list_projects()] == (
                ["Seeded project"] if in_project else []
            )
            if in_project:
                assert store.get_project_file("p1", "f1").content == b"abc"
                (seeded,) = store.list_project_files("p1", text=True)
                assert seeded.text == "abc" and seeded.pages is None
                assert store.list_conversations(project_id="p1")[0].id == "c1"
            else:
                assert store.list_conversations(no_project=True)[0].id == "c1"
            calibrated = "m003_calibration" in applied
            assert store.get_calibration("anthropic", "claude") == (
                Calibration(1.25, 7) if calibrated else Calibration()
            )
        # And the search index keeps up with messages written after the upgrade.
        new = store.append_message(conversation_id, user("a fresh narwhal"))
        assert new.parent_id == (None if applied_count == 0 else "m1")
        assert new.seq == (0 if applied_count == 0 else 2)
        assert [r.id for r in store.search_messages("narwhal")] == [new.id]
        edited = store.update_message(new.id, message=user("a fresh orca"))
        assert store.search_messages("narwhal") == []
        assert [r.id for r in store.search_messages("orca")] == [edited.id]
        assert store.recall_search(conversation_id, '"narwhal"', 5) == ([], 0)
        assert [r.seq for r in store.recall_search(conversation_id, '"orcas"', 5)[0]] == [new.seq]


def test_opening_twice_applies_nothing_twice(db_path: Path) -> None:
    Store(db_path).close()
    before = schema_of(db_path)
    Store(db_path).close()
    assert schema_of(db_path) == before
    db = Database(db_path)
    assert [m.name for m in migrations.applied(db)] == list(MIGRATION_NAMES)
    db.close()


def test_a_table_rebuild_drops_the_search_triggers_and_opening_repairs_them(
    db_path: Path,
) -> None:
    with Store(db_path) as store:
        conversation = store.create_conversation()
        old = store.append_message(conversation.id, user("before the rebuild: zebra"))

    db = Database(db_path)
    # What a future migration might do; sqlite-utils rebuilds the table to do it.
    db["messages"].transform(types={"token_count": int}, not_null={"role"})
    triggers = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert not triggers & set(SEARCH_TRIGGERS)  # the hazard is real...
    db.execute(
        "INSERT INTO messages (id, conversation_id, seq, role, parts, status, created_at, "
        "updated_at, parent_id) VALUES ('raw', ?, 1, 'user', ?, 'complete', ?, ?, ?)",
        (conversation.id, json.dumps([{"kind": "text", "text": "zebra unseen"}]), NOW, NOW, old.id),
    )
    db.execute("UPDATE conversations SET active_leaf_id = 'raw'")
    unseen = db.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'unseen'"
    ).fetchone()[0]
    assert unseen == 0  # ...new rows are silently not indexed
    db.close()

    with Store(db_path) as store:
        assert {r.id for r in store.search_messages("zebra")} == {old.id, "raw"}
        new = store.append_message(conversation.id, user("after the repair: zebra"))
        assert {r.id for r in store.search_messages("zebra")} == {old.id, "raw", new.id}


def test_every_column_has_a_comment(db_path: Path) -> None:
    Store(db_path).close()
    db = Database(db_path)
    try:
        tables = [
            name
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "AND name != '_sqlite_migrations' AND name NOT LIKE 'messages_fts_%' "
                "AND name NOT LIKE 'recall_fts_%'"
            )
        ]
        live = {t: [row[1] for row in db.execute(f"PRAGMA table_info([{t}])")] for t in tables}
    finally:
        db.close()
    assert set(live) == set(COLUMN_DOCS)
    for table, columns in live.items():
        assert set(columns) == set(COLUMN_DOCS[table]), table
        for column in columns:
            assert len(COLUMN_DOCS[table][column]) > 10, (table, column)


def test_wal_and_pragmas(store: Store) -> None:
    conn = store._pool.get().conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
