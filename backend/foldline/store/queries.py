"""SQL shared by the store's methods, as functions of a connection.

Each function runs inside whatever transaction the caller holds, so a method can combine
several of them atomically (`Store` opens the transactions; these never do).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from foldline.core.calibration import Calibration
from foldline.core.messages import Message
from foldline.core.state import CompactionState
from foldline.store.attachments import parts_json
from foldline.store.records import (
    COMPACTION_COLUMNS,
    CONVERSATION_COLUMNS,
    CompactionRecord,
    ConversationRecord,
    NotFound,
    compaction_from_row,
    conversation_from_row,
    stored_json,
)


def insert_conversation(conn: sqlite3.Connection, record: ConversationRecord) -> None:
    conn.execute(
        "INSERT INTO conversations (id, title, model, system_prompt, settings, "
        "created_at, updated_at, project_id, provider) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record.id,
            record.title,
            record.model,
            record.system_prompt,
            stored_json(record.settings, "settings"),
            record.created_at,
            record.updated_at,
            record.project_id,
            record.provider,
        ),
    )


def get_conversation(conn: sqlite3.Connection, conversation_id: str) -> ConversationRecord:
    row = conn.execute(
        # A conversation still being imported does not exist yet for any reader.
        f"SELECT {CONVERSATION_COLUMNS} FROM conversations AS c WHERE c.id = ? AND c.importing = 0",
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no conversation with id {conversation_id!r}")
    return conversation_from_row(row)


def next_seq(conn: sqlite3.Connection, conversation_id: str) -> int:
    """The seq of the next message = the active path's length (seq is dense on it)."""
    row = conn.execute(
        "SELECT (SELECT coalesce(max(path_last) + 1, 0) FROM lanes "
        "WHERE conversation_id = ?1 AND path_last IS NOT NULL) "
        "FROM conversations WHERE id = ?1",
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no conversation with id {conversation_id!r}")
    return row[0]


def current_compaction(conn: sqlite3.Connection, conversation_id: str) -> CompactionState | None:
    row = conn.execute(
        f"SELECT c.fold_version, {COMPACTION_COLUMNS} FROM conversations AS c "
        "LEFT JOIN compactions AS k "
        "  ON k.conversation_id = c.id AND k.version = c.fold_version "
        "WHERE c.id = ?",
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no conversation with id {conversation_id!r}")
    return None if row[0] == 0 else compaction_from_row(row[1:])


def list_compactions(conn: sqlite3.Connection, conversation_id: str) -> list[CompactionRecord]:
    current = fold_version(conn, conversation_id)
    rows = conn.execute(
        f"SELECT {COMPACTION_COLUMNS} FROM compactions AS k "
        "WHERE k.conversation_id = ? ORDER BY k.version",
        (conversation_id,),
    ).fetchall()
    return [
        CompactionRecord(
            state=compaction_from_row(row),
            is_current=row[0] == current,
            parent_version=row[13],
            last_message_id=row[18],
        )
        for row in rows
    ]


def fold_version(conn: sqlite3.Connection, conversation_id: str) -> int:
    """The current fold version (0 = none): the pointer the optimistic check compares."""
    row = conn.execute(
        "SELECT fold_version FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no conversation with id {conversation_id!r}")
    return row[0]


def replace_messages(
    conn: sqlite3.Connection,
    conversation_id: str,
    replacements: Mapping[str, Message],
    now: str,
) -> None:
    """Overwrite messages of this conversation (e.g. pruning marks); NotFound if one is
    missing, which rolls back the caller's whole transaction."""
    for message_id, message in replacements.items():
        cursor = conn.execute(
            "UPDATE messages SET role = ?, parts = ?, updated_at = ? "
            "WHERE id = ? AND conversation_id = ?",
            (message.role, parts_json(conn, message, now), now, message_id, conversation_id),
        )
        if cursor.rowcount == 0:
            raise NotFound(f"no message with id {message_id!r} in {conversation_id!r}")


def get_calibration(conn: sqlite3.Connection, provider: str, model: str) -> Calibration:
    row = conn.execute(
        "SELECT ratio, samples FROM calibration WHERE provider = ? AND model = ?",
        (provider, model),
    ).fetchone()
    return Calibration() if row is None else Calibration(ratio=row[0], samples=row[1])


def best_provider_calibration(conn: sqlite3.Connection, provider: str) -> Calibration:
    """The provider's most-sampled calibration (any model), or the default."""
    row = conn.execute(
        "SELECT ratio, samples FROM calibration WHERE provider = ? AND samples > 0 "
        "ORDER BY samples DESC, updated_at DESC LIMIT 1",
        (provider,),
    ).fetchone()
    return Calibration() if row is None else Calibration(ratio=row[0], samples=row[1])


def highest_learned_ratio(conn: sqlite3.Connection) -> float | None:
    """The highest ratio learned for any model of any provider (None: none learned)."""
    row = conn.execute("SELECT MAX(ratio) FROM calibration WHERE samples > 0").fetchone()
    return None if row is None or row[0] is None else float(row[0])


def set_calibration(
    conn: sqlite3.Connection, provider: str, model: str, calibration: Calibration, now: str
) -> None:
    conn.execute(
        "INSERT INTO calibration (provider, model, ratio, samples, updated_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (provider, model) DO UPDATE SET "
        "ratio = excluded.ratio, samples = excluded.samples, updated_at = excluded.updated_at",
        (provider, model, calibration.ratio, calibration.samples, now),
    )
