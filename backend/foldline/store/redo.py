"""Redo: bringing back a fold that was undone, without writing a new summary.

Undo only moves the conversation's fold pointer back to the fold's parent; the undone
fold stays stored. It can be made current again while nothing happened since that
would make its summary wrong or stale: no other fold was committed (the pointer is still
at its parent) and the message it summarized up to is still on the active path at the
same place (no edit or branch switch changed what it covers). Messages added after it
do not matter: it never covered them.
"""

from __future__ import annotations

import sqlite3

from foldline.core.state import CompactionState
from foldline.store import branches, queries
from foldline.store.connection import ConnectionPool
from foldline.store.records import ConcurrentFold, NotFound


class FoldCannotBeRedone(Exception):
    """The undone fold no longer fits the history (HTTP 409): fold again instead."""


def redo_candidate(conn: sqlite3.Connection, conversation_id: str) -> int | None:
    """The newest undone fold that can be made current again, if any."""
    current = queries.fold_version(conn, conversation_id)
    rows = conn.execute(
        "SELECT version, api_start_index, last_message_id FROM compactions "
        "WHERE conversation_id = ? AND parent_version = ? AND version != ? "
        "ORDER BY version DESC",
        (conversation_id, current, current),
    ).fetchall()
    for version, api_start_index, last_message_id in rows:
        if branches.last_folded_id(conn, conversation_id, api_start_index) == last_message_id:
            return version
    return None


class FoldRedoMethods:
    """The `Store`'s redo methods (a base of `Store`, which owns the pool and clock)."""

    _pool: ConnectionPool

    def _now(self) -> str:
        raise NotImplementedError

    def redo_version(self, conversation_id: str) -> int | None:
        """The undone fold Redo would bring back now (None: nothing to redo)."""
        with self._pool.snapshot() as conn:
            return redo_candidate(conn, conversation_id)

    def redo_fold(self, conversation_id: str, version: int) -> CompactionState:
        """Make the undone fold `version` current again and return it.

        NotFound for an unknown version; ConcurrentFold when another fold is current than
        the one it was undone to; FoldCannotBeRedone when the history it summarized
        changed since.
        """
        with self._pool.write() as conn:
            current = queries.fold_version(conn, conversation_id)
            row = conn.execute(
                "SELECT parent_version, api_start_index, last_message_id FROM compactions "
                "WHERE conversation_id = ? AND version = ?",
                (conversation_id, version),
            ).fetchone()
            if row is None:
                raise NotFound(f"conversation {conversation_id!r} has no fold version {version}")
            parent, api_start_index, last_message_id = row
            if version == current or parent != current:
                raise ConcurrentFold(conversation_id, parent, current)
            if branches.last_folded_id(conn, conversation_id, api_start_index) != last_message_id:
                raise FoldCannotBeRedone(
                    f"Fold {version} summarized messages that are no longer on this path."
                )
            conn.execute(
                "UPDATE conversations SET fold_version = ?, updated_at = ? WHERE id = ?",
                (version, self._now(), conversation_id),
            )
            state = queries.current_compaction(conn, conversation_id)
            assert state is not None
            return state
