"""The recall index: full text of every message for the model's recall tools.

A second FTS5 table beside `messages_fts` (the person's find and search): it stems
(`porter` over `unicode61`), so "gardening" finds "gardens", and it holds everything a
message says in full: text, tool calls with their input, tool outputs whole
(`full_output` of a truncated one; a pruned output is still stored and indexed), and
files' text (text files, PDF text). Reasoning is left out, as in the find index.
Triggers keep it in step with `messages.parts`; `rebuild_recall_index` restores them
after a `table.transform()` of `messages` (which drops triggers), as the store does for
the find index at startup.

`RecallMethods` (a base of the `Store`) runs the queries in a read snapshot; the chat
layer calls them through `asyncio.to_thread`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from sqlite_utils import Database

from foldline.core.messages import Message
from foldline.core.recall import PERSON_BOOST, RECALL_TOOL_NAMES
from foldline.store import queries
from foldline.store.connection import ConnectionPool
from foldline.store.records import (
    ON_PATH_FILTER,
    PATH_MESSAGE_COLUMNS,
    PATH_MESSAGES,
    MessageRecord,
    NotFound,
    load_message,
    message_from_row,
    on_path_sql,
)

CREATE_RECALL_TABLE = (
    "CREATE VIRTUAL TABLE recall_fts USING fts5("
    "text, content='', tokenize='porter unicode61 remove_diacritics 2')"
)

# Deterministic, as the find index's: the delete trigger recomputes it from the old row
# to remove exactly the tokens the insert added. The recall tools' own calls and results
# are left out: a search would otherwise find its own question, and earlier results
# that only quote the messages they found.
_RECALL_TEXT = """(
  SELECT group_concat(
    CASE
      WHEN json_extract(part.value, '$.name') IN ({recall_tools}) THEN NULL
      ELSE CASE json_extract(part.value, '$.kind')
      WHEN 'tool-call' THEN json_extract(part.value, '$.name') || ' '
        || coalesce(json_extract(part.value, '$.input'), '')
      WHEN 'tool-result' THEN json_extract(part.value, '$.name') || ' '
        || coalesce(json_extract(part.value, '$.full_output'),
                    json_extract(part.value, '$.output'), '')
      WHEN 'attachment' THEN json_extract(part.value, '$.name') || ' '
        || coalesce(json_extract(part.value, '$.text'), '')
      WHEN 'reasoning' THEN NULL
      ELSE json_extract(part.value, '$.text')
    END END, char(10))
  FROM json_each({parts}) AS part
)"""


def recall_text_sql(parts: str) -> str:
    names = ", ".join(f"'{name}'" for name in sorted(RECALL_TOOL_NAMES))
    return _RECALL_TEXT.format(parts=parts, recall_tools=names)


RECALL_TRIGGERS: dict[str, str] = {
    "recall_fts_insert": f"""
CREATE TRIGGER recall_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO recall_fts (rowid, text) VALUES (new.pk, {recall_text_sql("new.parts")});
END""",
    "recall_fts_delete": f"""
CREATE TRIGGER recall_fts_delete AFTER DELETE ON messages BEGIN
  INSERT INTO recall_fts (recall_fts, rowid, text)
  VALUES ('delete', old.pk, {recall_text_sql("old.parts")});
END""",
    "recall_fts_update": f"""
CREATE TRIGGER recall_fts_update AFTER UPDATE OF parts ON messages BEGIN
  INSERT INTO recall_fts (recall_fts, rowid, text)
  VALUES ('delete', old.pk, {recall_text_sql("old.parts")});
  INSERT INTO recall_fts (rowid, text) VALUES (new.pk, {recall_text_sql("new.parts")});
END""",
}


def missing_recall_triggers(db: Database) -> list[str]:
    """The recall triggers not in the database (none before `m017_recall_index`)."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "recall_fts" not in tables:
        return []
    present = {
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
        )
    }
    return [name for name in RECALL_TRIGGERS if name not in present]


def rebuild_recall_index(db: Database) -> None:
    """Recreate any missing recall trigger and index every message again (inside a
    transaction)."""
    for name in RECALL_TRIGGERS:
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
        db.execute(RECALL_TRIGGERS[name])
    db.execute("INSERT INTO recall_fts (recall_fts) VALUES ('delete-all')")
    db.execute(
        f"INSERT INTO recall_fts (rowid, text) SELECT pk, {recall_text_sql('parts')} FROM messages"
    )


@dataclass(frozen=True)
class RecallRow:
    """A message recall found: where, who, when, and the message itself."""

    conversation_id: str
    seq: int
    role: str
    created_at: str
    record_parts: str
    title: str = ""

    @property
    def message(self) -> Message:
        return load_message(self.role, self.record_parts)


_SCORE = f"bm25(recall_fts) * (CASE m.role WHEN 'user' THEN {PERSON_BOOST} ELSE 1.0 END)"
"""bm25 is negative (lower is better), so the person's messages scaled up rank higher."""


def search_conversation(
    conn: sqlite3.Connection, conversation_id: str, match: str, limit: int
) -> tuple[list[RecallRow], int]:
    """The active path's messages matching `match`, best first (at most `limit`), and
    how many match in all."""
    on_path = on_path_sql("m")
    rows = conn.execute(
        f"SELECT m.conversation_id, m.seq, m.role, m.created_at, m.parts FROM recall_fts "
        "JOIN messages AS m ON m.pk = recall_fts.rowid "
        f"WHERE recall_fts MATCH ? AND m.conversation_id = ? AND {on_path} "
        f"ORDER BY {_SCORE}, m.seq DESC LIMIT ?",
        (match, conversation_id, limit),
    ).fetchall()
    total = conn.execute(
        "SELECT count(*) FROM recall_fts JOIN messages AS m ON m.pk = recall_fts.rowid "
        f"WHERE recall_fts MATCH ? AND m.conversation_id = ? AND {on_path}",
        (match, conversation_id),
    ).fetchone()[0]
    return [RecallRow(*row) for row in rows], total


def search_others(
    conn: sqlite3.Connection,
    conversation_id: str,
    project_id: str | None,
    match: str,
    limit: int,
) -> tuple[list[RecallRow], int]:
    """The other conversations' active-path messages matching `match`: those of
    `project_id` when given, else every conversation; never this one, never one being
    imported. Best first, and how many match in all."""
    scope = "c.project_id = ?" if project_id is not None else "1"
    params: tuple[object, ...] = (project_id,) if project_id is not None else ()
    where = (
        f"WHERE recall_fts MATCH ? AND m.conversation_id != ? AND c.importing = 0 AND {scope} "
        f"AND {on_path_sql('m')} "
    )
    joins = (
        "FROM recall_fts JOIN messages AS m ON m.pk = recall_fts.rowid "
        "JOIN conversations AS c ON c.id = m.conversation_id "
    )
    rows = conn.execute(
        f"SELECT m.conversation_id, m.seq, m.role, m.created_at, m.parts, c.title {joins}{where}"
        f"ORDER BY {_SCORE}, m.seq DESC LIMIT ?",
        (match, conversation_id, *params, limit),
    ).fetchall()
    total = conn.execute(
        f"SELECT count(*) {joins}{where}", (match, conversation_id, *params)
    ).fetchone()[0]
    return [RecallRow(*row) for row in rows], total


def read_range(
    conn: sqlite3.Connection, conversation_id: str, from_index: int, to_index: int
) -> list[MessageRecord]:
    """The active path's messages `from_index`..`to_index` (inclusive), in order."""
    rows = conn.execute(
        f"SELECT {PATH_MESSAGE_COLUMNS} FROM {PATH_MESSAGES} "
        f"WHERE {ON_PATH_FILTER} AND m.seq >= ? AND m.seq <= ? ORDER BY m.seq",
        (conversation_id, from_index, to_index),
    ).fetchall()
    return [message_from_row(row) for row in rows]


class RecallMethods:
    """The `Store`'s reads for the recall tools (a base of `Store`, which owns the pool)."""

    _pool: ConnectionPool

    def recall_search(
        self, conversation_id: str, match: str, limit: int
    ) -> tuple[list[RecallRow], int]:
        with self._pool.snapshot() as conn:
            return search_conversation(conn, conversation_id, match, limit)

    def recall_search_others(
        self, conversation_id: str, project_id: str | None, match: str, limit: int
    ) -> tuple[list[RecallRow], int]:
        with self._pool.snapshot() as conn:
            return search_others(conn, conversation_id, project_id, match, limit)

    def recall_read(
        self, conversation_id: str, from_index: int, to_index: int
    ) -> tuple[int, list[MessageRecord]]:
        """The conversation's length and its messages `from_index`..`to_index`, from one
        snapshot (NotFound for no such conversation, or one being imported)."""
        with self._pool.snapshot() as conn:
            length = queries.get_conversation(conn, conversation_id).message_count
            return length, read_range(conn, conversation_id, from_index, to_index)


__all__ = ["NotFound", "RecallMethods", "RecallRow"]
