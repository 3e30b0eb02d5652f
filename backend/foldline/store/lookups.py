"""Reads and small writes beside the history itself: full-text search and pins.

Each function takes the connection the `Store` hands it, so the Store stays a thin
owner of connections and transactions while the SQL lives here.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from foldline.store import queries
from foldline.store.records import (
    MESSAGE_COLUMNS,
    Marks,
    MessageRecord,
    NotFound,
    PinRecord,
    SearchHit,
    load_message,
    message_from_row,
    on_path_sql,
)
from foldline.store.search import fts_query, snippet


def search_hit(conn: sqlite3.Connection, conversation_id: str, q: str) -> SearchHit | None:
    """The newest message of the conversation matching `q`, on the active path if one
    matches there, else on another branch."""
    match = fts_query(q)
    if match is None:
        return None
    # CROSS JOIN keeps the full-text index the outer loop: left to choose, SQLite walks
    # the conversation's messages and runs the full-text query again for each one, which
    # is quadratic in the history (a 20k-message conversation took minutes).
    row = conn.execute(
        f"SELECT m.seq, m.parts, m.id, {on_path_sql('m')} AS on_path FROM messages_fts "
        "CROSS JOIN messages AS m ON m.pk = messages_fts.rowid "
        "WHERE messages_fts MATCH ? AND m.conversation_id = ? "
        "ORDER BY on_path DESC, m.seq DESC, m.pk DESC LIMIT 1",
        (match, conversation_id),
    ).fetchone()
    if row is None:
        return None
    count = conn.execute(
        "SELECT count(*) FROM messages_fts CROSS JOIN messages AS m "
        "ON m.pk = messages_fts.rowid WHERE messages_fts MATCH ? AND m.conversation_id = ?",
        (match, conversation_id),
    ).fetchone()[0]
    return SearchHit(row[0], snippet(_parts_text(row[1]), q), row[2], bool(row[3]), count)


def _parts_text(parts_json: str) -> str:
    parts = json.loads(parts_json)
    return "\n".join(
        str(part.get("text") or part.get("output") or "")
        for part in parts
        if isinstance(part, dict)
    )


FIND_LIMIT = 1000


def find_in_conversation(
    conn: sqlite3.Connection, conversation_id: str, q: str, every_branch: bool
) -> list[SearchHit]:
    """Every message of the conversation matching `q`, in display order (the active path,
    or with `every_branch` every message), each with a snippet; at most FIND_LIMIT."""
    match = fts_query(q)
    if match is None:
        return []
    on_path = on_path_sql("m")
    path = "" if every_branch else f"AND {on_path} "
    rows = conn.execute(
        f"SELECT m.seq, m.parts, m.id, {on_path} AS on_path FROM messages_fts "
        "JOIN messages AS m ON m.pk = messages_fts.rowid "
        f"WHERE messages_fts MATCH ? AND m.conversation_id = ? {path}"
        "ORDER BY m.seq, on_path DESC, m.pk LIMIT ?",
        (match, conversation_id, FIND_LIMIT),
    ).fetchall()
    return [
        SearchHit(row[0], snippet(_parts_text(row[1]), q), row[2], bool(row[3])) for row in rows
    ]


def search_messages(
    conn: sqlite3.Connection, q: str, conversation_id: str | None, limit: int
) -> list[MessageRecord]:
    """Messages matching every typed term (the last one as a prefix), newest first.

    Newest first rather than by relevance: FTS5 walks its index in rowid order and
    stops after `limit` hits, whereas ranking scores every match first (50 ms for a
    common word at 10k messages, growing with the history); in a chat history the
    recent mention is usually the one wanted.
    """
    match = fts_query(q)
    if match is None:
        return []
    # Across conversations, those still being imported are left out (a partial index
    # holds them: usually none).
    scope = (
        "AND messages.conversation_id NOT IN (SELECT id FROM conversations WHERE importing = 1) "
        if conversation_id is None
        else "AND messages.conversation_id = ? "
    )
    params: tuple[Any, ...] = (match,) if conversation_id is None else (match, conversation_id)
    rows = conn.execute(
        f"SELECT {MESSAGE_COLUMNS} "
        "FROM messages_fts JOIN messages ON messages.pk = messages_fts.rowid "
        f"WHERE messages_fts MATCH ? {scope}"
        "ORDER BY messages_fts.rowid DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [message_from_row(row) for row in rows]


def list_pins(conn: sqlite3.Connection, conversation_id: str) -> list[PinRecord]:
    """The pinned messages of the active path, in display order (NotFound for none such)."""
    # Named: left to itself, SQLite reads the pins through one of the indexes of every
    # message on (conversation_id, seq), a walk over the whole history on every model
    # call, where the partial index of pinned messages holds only the few pinned rows.
    rows = conn.execute(
        "SELECT m.id, m.seq, m.role, m.parts, m.pinned_at FROM messages AS m "
        "INDEXED BY messages_pinned "
        f"WHERE m.conversation_id = ? AND m.pinned_at IS NOT NULL AND {on_path_sql('m')} "
        "ORDER BY m.seq",
        (conversation_id,),
    ).fetchall()
    if not rows:
        queries.get_conversation(conn, conversation_id)
    return [
        PinRecord(
            message_id=row[0], seq=row[1], message=load_message(row[2], row[3]), pinned_at=row[4]
        )
        for row in rows
    ]


def set_pinned(
    conn: sqlite3.Connection, conversation_id: str, message_id: str, pinned: bool, now: str
) -> str | None:
    """Pin or unpin a message; returns its `pinned_at` (None when unpinned). Pinning a
    pinned message keeps its first time. NotFound for a message of another conversation."""
    row = conn.execute(
        "SELECT pinned_at FROM messages WHERE id = ? AND conversation_id = ?",
        (message_id, conversation_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"no message {message_id!r} in conversation {conversation_id!r}")
    pinned_at = (row[0] or now) if pinned else None
    conn.execute("UPDATE messages SET pinned_at = ? WHERE id = ?", (pinned_at, message_id))
    conn.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id))
    return pinned_at


def message_marks(conn: sqlite3.Connection, conversation_id: str) -> Marks:
    """The messages with a pin or a remembered fold pointer: id -> (pinned_at,
    leaf_fold_version). Few rows: the pins and the leaves the person left."""
    rows = conn.execute(
        "SELECT id, pinned_at, leaf_fold_version FROM messages WHERE conversation_id = ? "
        "AND (pinned_at IS NOT NULL OR leaf_fold_version IS NOT NULL)",
        (conversation_id,),
    ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}
