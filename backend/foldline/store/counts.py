"""Stored per-message token counts: written once, summed over the model's view.

A count depends on the tokenizer, so it is stored per *counter* (a key naming the model,
wire and options it was counted with) in `message_counts`, beside the message's shape
for pair repair (`core.view_counts`). Triggers delete a message's counts when its role
or parts change or it is deleted, so a count that is present is always current: no
timestamp is compared, and a write path that forgets about counts cannot leave a stale
one behind. Counts are raw (uncalibrated): calibration stays a factor applied on top,
to the text only: each row also holds the part of its count that images and PDF page
images make (`media`), billed by the provider's formula and never scaled.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace

from foldline.core.state import CompactionState
from foldline.store import attachments, queries
from foldline.store.connection import BUSY_TIMEOUT_MS, ConnectionPool
from foldline.store.records import (
    MESSAGE_COLUMNS,
    ON_PATH_FILTER,
    PATH_MESSAGE_COLUMNS,
    PATH_MESSAGES,
    MessageRecord,
    message_from_row,
)

CREATE_COUNTS_TABLE = (
    "CREATE TABLE message_counts ("
    " message_id TEXT NOT NULL,"
    " counter TEXT NOT NULL,"
    " tokens INTEGER NOT NULL,"
    " shape TEXT NOT NULL,"
    " media INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (message_id, counter)"
    ") WITHOUT ROWID"
)

COUNT_TRIGGERS: dict[str, str] = {
    "message_counts_stale": """
CREATE TRIGGER message_counts_stale AFTER UPDATE OF role, parts ON messages BEGIN
  DELETE FROM message_counts WHERE message_id = old.id;
END""",
    "message_counts_gone": """
CREATE TRIGGER message_counts_gone AFTER DELETE ON messages BEGIN
  DELETE FROM message_counts WHERE message_id = old.id;
END""",
}
"""Recreated at start when missing: `table.transform()` of `messages` drops them."""

SAVE_WAIT_MS = 50
"""How long saving counts waits for another process's writer: a read that counted can
skip saving (the next read counts again) rather than wait for it. This process's own
writers are short and queue in turn (`ConnectionPool.writers`)."""


CountRow = tuple[str, str, int | None, str | None, int | None]
"""One message of the view's tail as the sum needs it: id, role, and the stored count,
shape and media tokens under the asked counter (None: never counted, or changed since)."""

StoredCount = tuple[int | None, str | None, int | None]
"""A message's stored count, shape and media tokens (all None when it has none)."""

NewCount = tuple[MessageRecord, int, str, int]
"""A count to store: the message as counted, its tokens, shape and media tokens."""


def restore_count_triggers(conn: sqlite3.Connection) -> None:
    present = {
        row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }
    for name, sql in COUNT_TRIGGERS.items():
        if name not in present:
            conn.execute(sql)


class CountMethods:
    """The `Store`'s methods for stored counts (a base of `Store`, which owns the pool)."""

    _pool: ConnectionPool

    def view_count_rows(
        self, conversation_id: str, counter: str
    ) -> tuple[CompactionState | None, list[CountRow]]:
        """The current fold and, for each message of the model's view (`seq >=
        apiStartIndex` on the active path), its stored count and shape, from one read
        snapshot. Reads no message body: a few bytes per message."""
        with self._pool.snapshot() as conn:
            state = queries.current_compaction(conn, conversation_id)
            start = state.api_start_index if state else 0
            rows = conn.execute(
                f"SELECT m.id, m.role, c.tokens, c.shape, c.media FROM {PATH_MESSAGES} "
                "LEFT JOIN message_counts AS c ON c.message_id = m.id AND c.counter = ? "
                f"WHERE {ON_PATH_FILTER} AND m.seq >= ? ORDER BY m.seq",
                (counter, conversation_id, start),
            ).fetchall()
        return state, rows

    def load_window_counted(
        self, conversation_id: str, counter: str
    ) -> tuple[CompactionState | None, list[MessageRecord], list[StoredCount]]:
        """`Store.load_window` with each row's stored count, shape and media tokens under
        `counter` (all None when it has none), from the same read snapshot."""
        with self._pool.snapshot() as conn:
            state = queries.current_compaction(conn, conversation_id)
            start = state.api_start_index if state else 0
            rows = conn.execute(
                f"SELECT {PATH_MESSAGE_COLUMNS}, c.tokens, c.shape, c.media FROM {PATH_MESSAGES} "
                "LEFT JOIN message_counts AS c ON c.message_id = m.id AND c.counter = ? "
                f"WHERE {ON_PATH_FILTER} AND m.seq >= ? ORDER BY m.seq",
                (counter, conversation_id, start),
            ).fetchall()
            records = with_files(conn, [message_from_row(row[:-3]) for row in rows])
        return state, records, [(row[-3], row[-2], row[-1]) for row in rows]

    def messages_by_id(self, message_ids: Sequence[str]) -> dict[str, MessageRecord]:
        """The messages with these ids (those that exist), by id."""
        found: dict[str, MessageRecord] = {}
        conn = self._pool.get().conn
        for begin in range(0, len(message_ids), 500):
            chunk = list(message_ids[begin : begin + 500])
            marks = ", ".join("?" for _ in chunk)
            for row in conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id IN ({marks})", chunk
            ):
                record = message_from_row(row)
                found[record.id] = record
        # Counted messages hold their files: an image's or a PDF's cost is read from them.
        return {record.id: record for record in with_files(conn, list(found.values()))}

    def save_counts(self, counter: str, counts: Sequence[NewCount]) -> bool:
        """Store (message as counted, tokens, shape, media) under `counter`; False when another
        writer held the database longer than `SAVE_WAIT_MS` and nothing was saved.

        A message written or deleted since it was read gets no row: the statement checks
        its `updated_at`, which every write of a message moves."""
        if not counts:
            return True
        conn = self._pool.get().conn
        conn.execute(f"PRAGMA busy_timeout = {SAVE_WAIT_MS}")
        try:
            with self._pool.write() as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO message_counts "
                    "(message_id, counter, tokens, shape, media) "
                    "SELECT id, ?, ?, ?, ? FROM messages WHERE id = ? AND updated_at = ?",
                    [
                        (counter, tokens, shape, media, record.id, record.updated_at)
                        for record, tokens, shape, media in counts
                    ],
                )
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
            return False
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return True


def with_files(conn: sqlite3.Connection, records: list[MessageRecord]) -> list[MessageRecord]:
    """The records with their files' bytes put back (the model's view and its counts read
    them); a record without stored files is returned as it is."""
    messages = attachments.hydrate(conn, [record.message for record in records])
    return [
        record if record.message is message else replace(record, message=message)
        for record, message in zip(records, messages, strict=True)
    ]
