"""Writing an imported conversation in batches, inside one write transaction.

An import can hold hundreds of thousands of messages; they arrive one by one from a
streaming parser and are written in batches, so memory does not grow with the history.
Everything happens in the transaction `Store.import_conversation` opens: an import that
fails half-way (invalid data further on, a full disk) rolls back and leaves nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from foldline.store import queries
from foldline.store.records import (
    COMPACTION_INSERT,
    MESSAGE_STATUSES,
    CompactionRecord,
    ConversationRecord,
    MessageRecord,
    compaction_values,
    dump_json_or_none,
    dump_parts,
)

_MESSAGE_INSERT = (
    "INSERT INTO messages (id, conversation_id, seq, role, parts, status, usage, "
    "token_count, error, created_at, updated_at, parent_id) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class ConversationImport:
    """The conversation row is written first; messages follow in order, folds last."""

    def __init__(
        self, conn: sqlite3.Connection, conversation: ConversationRecord, new_id: Callable[[], str]
    ) -> None:
        self._conn = conn
        self._new_id = new_id
        self.record = replace(conversation, message_count=0)
        self._last_id: str | None = None
        queries.insert_conversation(conn, self.record)

    @property
    def message_count(self) -> int:
        return self.record.message_count

    def add_messages(self, messages: Iterable[MessageRecord]) -> None:
        """Append messages; their `seq` must continue 0, 1, 2... from the ones before."""
        rows = []
        count = self.record.message_count
        for message in messages:
            if message.seq != count:
                raise ValueError(f"message {count} has seq {message.seq}; expected {count}")
            if message.status not in MESSAGE_STATUSES:
                raise ValueError(f"unknown message status {message.status!r}")
            message_id = self._new_id()
            rows.append(
                (
                    message_id,
                    self.record.id,
                    message.seq,
                    message.message.role,
                    dump_parts(message.message),
                    message.status,
                    dump_json_or_none(message.usage),
                    message.token_count,
                    message.error,
                    message.created_at,
                    message.updated_at,
                    self._last_id,
                )
            )
            self._last_id = message_id
            count += 1
        self._conn.executemany(_MESSAGE_INSERT, rows)
        self.record = replace(self.record, message_count=count)

    def finish(
        self, compactions: Sequence[CompactionRecord], pins: Mapping[int, str] | None = None
    ) -> ConversationRecord:
        """Write the folds (at most one current, each inside the messages written) and
        the pins (display index -> when it was pinned)."""
        count = self.record.message_count
        versions = {c.state.version for c in compactions}
        for compaction in compactions:
            if not 0 <= compaction.state.api_start_index <= count:
                raise ValueError(f"fold v{compaction.state.version} starts past the messages")
            if compaction.parent_version and compaction.parent_version not in versions:
                raise ValueError(f"fold v{compaction.state.version} has an unknown parent")
        current = [c.state.version for c in compactions if c.is_current]
        if len(current) > 1:
            raise ValueError("at most one fold version can be current")
        self._conn.executemany(
            COMPACTION_INSERT,
            [
                compaction_values(self.record.id, c.state, c.state.version, c.parent_version, None)
                for c in compactions
            ],
        )
        self._conn.executemany(
            "UPDATE messages SET pinned_at = ? WHERE conversation_id = ? AND seq = ?",
            [(pinned_at, self.record.id, seq) for seq, pinned_at in (pins or {}).items()],
        )
        self._conn.execute(
            "UPDATE conversations SET fold_version = ?, active_leaf_id = ? WHERE id = ?",
            (current[0] if current else 0, self._last_id, self.record.id),
        )
        # Imported as one path: each fold's last message is the one before its boundary.
        self._conn.execute(
            "UPDATE compactions SET last_message_id = (SELECT m.id FROM messages AS m "
            "WHERE m.conversation_id = compactions.conversation_id AND m.on_path = 1 "
            "AND m.seq = compactions.api_start_index - 1) WHERE conversation_id = ?",
            (self.record.id,),
        )
        return self.record
