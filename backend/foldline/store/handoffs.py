"""Continue in place and hand-offs: the SQL beside the history for both.

An answer that Continue extends keeps its row (same id, same place in the history) and
is marked `continued`. A hand-off ("New conversation from here") writes a new
conversation whose first fold is the summary of the old one; the two are linked by
`conversations.origin_id`, so the old one can list where it went and the new one where
it came from. Each function runs inside the caller's transaction, like `queries`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace

from foldline.core.state import CompactionState
from foldline.store.connection import ConnectionPool
from foldline.store.importing import ConversationImport
from foldline.store.records import (
    MESSAGE_COLUMNS,
    CompactionRecord,
    ConversationRecord,
    Marks,
    MessageRecord,
    NotFound,
    message_from_row,
    new_id,
)


@dataclass(frozen=True)
class ConversationLink:
    """One end of a hand-off: the other conversation, its title, and when it began."""

    conversation_id: str
    title: str
    created_at: str
    message_id: str | None = None
    """On the origin side: the last message of the origin that the hand-off covered."""


def begin_continuation(conn: sqlite3.Connection, message_id: str, now: str) -> MessageRecord:
    """Mark an interrupted answer as being continued: `streaming` again, `continued`,
    its old error cleared (the answer is no longer stopped)."""
    row = conn.execute(
        "UPDATE messages SET status = 'streaming', continued = 1, error = NULL, "
        f"updated_at = ? WHERE id = ? RETURNING {MESSAGE_COLUMNS}",
        (now, message_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"no message with id {message_id!r}")
    return message_from_row(row)


def link_origin(
    conn: sqlite3.Connection, conversation_id: str, origin_id: str, origin_message_id: str | None
) -> None:
    conn.execute(
        "UPDATE conversations SET origin_id = ?, origin_message_id = ? WHERE id = ?",
        (origin_id, origin_message_id, conversation_id),
    )


def unlink_handoffs(conn: sqlite3.Connection, conversation_id: str) -> None:
    """Before a conversation is deleted: the ones handed off from it lose their origin
    (they stay whole: their own summary holds what they needed of it)."""
    conn.execute(
        "UPDATE conversations SET origin_id = NULL, origin_message_id = NULL WHERE origin_id = ?",
        (conversation_id,),
    )


def conversation_links(
    conn: sqlite3.Connection, conversation_id: str
) -> tuple[ConversationLink | None, list[ConversationLink]]:
    """(where the conversation came from, the conversations handed off from it, oldest
    first)."""
    row = conn.execute(
        "SELECT o.id, o.title, o.created_at, c.origin_message_id FROM conversations AS c "
        "JOIN conversations AS o ON o.id = c.origin_id WHERE c.id = ?",
        (conversation_id,),
    ).fetchone()
    origin = ConversationLink(row[0], row[1], row[2], row[3]) if row else None
    rows = conn.execute(
        "SELECT id, title, created_at FROM conversations WHERE origin_id = ? "
        "ORDER BY created_at, id",
        (conversation_id,),
    ).fetchall()
    return origin, [ConversationLink(r[0], r[1], r[2]) for r in rows]


class HandoffMethods:
    """The `Store`'s methods for Continue and hand-offs (a base of `Store`, which owns
    the connection pool and the clock; kept here so the Store stays small)."""

    _pool: ConnectionPool

    def _now(self) -> str:
        raise NotImplementedError

    def begin_continuation(self, message_id: str) -> MessageRecord:
        """Continue an interrupted answer in place: `streaming` again, marked `continued`."""
        with self._pool.write() as conn:
            return begin_continuation(conn, message_id, self._now())

    def create_handoff(
        self,
        origin: ConversationRecord,
        origin_message_id: str | None,
        messages: Sequence[MessageRecord],
        fold: CompactionState | None,
        pins: Mapping[int, str],
    ) -> ConversationRecord:
        """A new conversation continuing `origin` (same model, prompt and settings, its
        title given), in one transaction: `messages` (seq 0, 1, ...), `fold` as its
        first fold, `pins` (index -> pinned_at), linked back to `origin`."""
        now = self._now()
        record = replace(origin, id=new_id(), created_at=now, updated_at=now)
        with self._pool.write() as conn:
            # The whole hand-off is one transaction: the writer's own transactions are
            # this one's connection.
            writer = ConversationImport(lambda: nullcontext(conn), record, new_id)
            # One path: each message follows the one before (their parents are the
            # origin's messages, which the new conversation does not hold).
            writer.add_messages(replace(m, parent_id=None) for m in messages)
            folds = [CompactionRecord(state=fold, is_current=True)] if fold else []
            marks: Marks = {m.id: (pins[m.seq], None) for m in messages if m.seq in pins}
            created = writer.finish(folds, marks)
            link_origin(conn, created.id, origin.id, origin_message_id)
        return created

    def conversation_links(
        self, conversation_id: str
    ) -> tuple[ConversationLink | None, list[ConversationLink]]:
        """Where the conversation was handed off from, and the ones handed off from it."""
        with self._pool.snapshot() as conn:
            return conversation_links(conn, conversation_id)
