"""Writing an imported conversation in batches, inside one write transaction.

An import can hold hundreds of thousands of messages; they arrive one by one from a
streaming parser and are written in batches, so memory does not grow with the history.
Everything happens in the transaction `Store.import_conversation` opens: an import that
fails half-way (invalid data further on, a full disk) rolls back and leaves nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from foldline.store import branches, queries
from foldline.store.attachments import parts_json
from foldline.store.records import (
    COMPACTION_INSERT,
    MESSAGE_STATUSES,
    CompactionRecord,
    ConversationRecord,
    Marks,
    MessageRecord,
    compaction_values,
    dump_json_or_none,
)

_MESSAGE_INSERT = (
    "INSERT INTO messages (id, conversation_id, seq, role, parts, status, usage, "
    "token_count, error, created_at, updated_at, parent_id, continued, on_path) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
)


class ConversationImport:
    """The conversation row is written first; messages follow in order, folds last.

    Messages arrive parents first (a tree is listed by depth). Each gets a new id derived
    from its exported id and a salt drawn for this import, so a parent's new id is found
    again without keeping a map of every id in memory. Every message is written off the
    active path; `finish` marks the path to the active leaf.
    """

    def __init__(
        self, conn: sqlite3.Connection, conversation: ConversationRecord, new_id: Callable[[], str]
    ) -> None:
        self._conn = conn
        self._salt = new_id()
        self.record = replace(conversation, message_count=0)
        self.depth = 0
        """One more than the deepest message's index (the history's length on one path)."""
        self._last: tuple[str, int] | None = None
        queries.insert_conversation(conn, self.record)

    @property
    def message_count(self) -> int:
        return self.depth

    def new_id(self, exported_id: str) -> str:
        """The id an exported message id gets in this import."""
        return hashlib.sha256(f"{self._salt}:{exported_id}".encode()).hexdigest()[:32]

    def _seq_of(self, message_id: str, batch: Mapping[str, int]) -> int | None:
        if self._last is not None and self._last[0] == message_id:
            return self._last[1]
        if message_id in batch:
            return batch[message_id]
        row = self._conn.execute(
            "SELECT seq FROM messages WHERE id = ? AND conversation_id = ?",
            (message_id, self.record.id),
        ).fetchone()
        return None if row is None else row[0]

    def add_messages(self, messages: Iterable[MessageRecord]) -> None:
        """Append messages. Each follows its `parent_id` (an exported id listed before it)
        at the next index; a message without a parent and with an index above 0 follows
        the message before it (a file of one path), one at index 0 starts a tree."""
        rows = []
        batch: dict[str, int] = {}
        for message in messages:
            if message.status not in MESSAGE_STATUSES:
                raise ValueError(f"unknown message status {message.status!r}")
            parent: str | None = None
            parent_seq: int | None = -1
            if message.parent_id is not None:
                parent = self.new_id(message.parent_id)
                parent_seq = self._seq_of(parent, batch)
                if parent_seq is None:
                    raise ValueError(
                        f"message {message.id!r}: its parent {message.parent_id!r} must be "
                        "listed before it"
                    )
            elif message.seq > 0 and self._last is not None:
                parent, parent_seq = self._last
            if message.seq != parent_seq + 1:
                raise ValueError(
                    f"message {message.id!r} has index {message.seq}; after its parent it "
                    f"must be {parent_seq + 1}"
                )
            message_id = self.new_id(message.id)
            if message_id in batch:
                raise ValueError(f"message id {message.id!r} appears twice")
            rows.append(
                (
                    message_id,
                    self.record.id,
                    message.seq,
                    message.message.role,
                    parts_json(self._conn, message.message, message.updated_at),
                    message.status,
                    dump_json_or_none(message.usage),
                    message.token_count,
                    message.error,
                    message.created_at,
                    message.updated_at,
                    parent,
                    int(message.continued),
                )
            )
            batch[message_id] = message.seq
            self._last = (message_id, message.seq)
            self.depth = max(self.depth, message.seq + 1)
        try:
            self._conn.executemany(_MESSAGE_INSERT, rows)
        except sqlite3.IntegrityError:
            raise ValueError("a message id appears twice") from None

    def finish(
        self,
        compactions: Sequence[CompactionRecord],
        marks: Marks | None = None,
        active_leaf: str | None = None,
    ) -> ConversationRecord:
        """Write the folds (at most one current, each inside the messages written), the
        pins and remembered fold pointers (`marks`: exported id -> (pinned_at,
        leaf_fold_version)), and the active path: to `active_leaf` (an exported id;
        None = the last message written)."""
        count = self.depth
        versions = {c.state.version for c in compactions}
        for compaction in compactions:
            if not 0 <= compaction.state.api_start_index <= count:
                raise ValueError(f"fold v{compaction.state.version} starts past the messages")
            if compaction.parent_version and compaction.parent_version not in versions:
                raise ValueError(f"fold v{compaction.state.version} has an unknown parent")
        current = [c.state.version for c in compactions if c.is_current]
        if len(current) > 1:
            raise ValueError("at most one fold version can be current")
        if active_leaf is None:
            leaf = self._last[0] if self._last else None
        else:
            leaf = self.new_id(active_leaf)
            if self._seq_of(leaf, {}) is None:
                raise ValueError(f"the active leaf {active_leaf!r} is not a listed message")
        self._conn.execute(
            "WITH RECURSIVE up(id, parent_id) AS ("
            "  SELECT id, parent_id FROM messages WHERE id = ?"
            "  UNION ALL SELECT m.id, m.parent_id FROM messages AS m JOIN up ON m.id = up.parent_id"
            ") UPDATE messages SET on_path = 1 WHERE id IN (SELECT id FROM up)",
            (leaf,),
        )
        self._conn.execute(
            "UPDATE conversations SET active_leaf_id = ? WHERE id = ?", (leaf, self.record.id)
        )
        folds = []
        for c in compactions:
            last = None if c.last_message_id is None else self.new_id(c.last_message_id)
            if last is not None and self._seq_of(last, {}) != c.state.api_start_index - 1:
                raise ValueError(
                    f"fold v{c.state.version}: its last message {c.last_message_id!r} must be "
                    f"a listed message at index {c.state.api_start_index - 1}"
                )
            folds.append(
                compaction_values(self.record.id, c.state, c.state.version, c.parent_version, last)
            )
        self._conn.executemany(COMPACTION_INSERT, folds)
        # A file of one path names no last messages: each fold's is the active path's
        # message just before its boundary.
        self._conn.execute(
            "UPDATE compactions SET last_message_id = (SELECT m.id FROM messages AS m "
            "WHERE m.conversation_id = compactions.conversation_id AND m.on_path = 1 "
            "AND m.seq = compactions.api_start_index - 1) "
            "WHERE conversation_id = ? AND last_message_id IS NULL",
            (self.record.id,),
        )
        self._conn.executemany(
            "UPDATE messages SET pinned_at = ?, leaf_fold_version = ? WHERE id = ?",
            [(pin, pointer, self.new_id(old)) for old, (pin, pointer) in (marks or {}).items()],
        )
        # The current fold must apply to the active path: walked back if it does not.
        branches.repoint_fold(self._conn, self.record.id, current[0] if current else 0)
        self.record = replace(
            self.record,
            message_count=queries.next_seq(self._conn, self.record.id),
            active_leaf_id=leaf,
        )
        return self.record
