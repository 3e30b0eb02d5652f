"""Writing an imported conversation in batches, each its own short write transaction.

An import can hold hundreds of thousands of messages; they arrive one by one from a
streaming parser and are written in batches, so memory does not grow with the history.
Each batch is one transaction, so other conversations' writes (a streamed answer, a
fold) get the database between two batches instead of waiting for the whole import
(about 20 s at 100,000 messages). Until `finish` commits, the conversation is marked
`importing` and no read shows it; an import that fails half-way (invalid data further
on, a full disk) deletes what it wrote, and one cut by a crash is deleted when the store
opens next (`delete_unfinished_imports`). A hand-off writes through the same class
inside one transaction of its own (`Transaction` returning the caller's connection).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace

from foldline.store import attachments, branches, import_checks, queries
from foldline.store.attachments import parts_json
from foldline.store.records import (
    COMPACTION_INSERT,
    MESSAGE_STATUSES,
    PATH_MESSAGES,
    CompactionRecord,
    ConversationRecord,
    Marks,
    MessageRecord,
    compaction_values,
    dump_json_or_none,
)

_MESSAGE_INSERT = (
    "INSERT INTO messages (id, conversation_id, seq, role, parts, status, usage, "
    "token_count, error, created_at, updated_at, parent_id, continued) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]
"""Opens a write transaction (`ConnectionPool.write`) and yields its connection."""

CHUNK = 100
"""Messages written per transaction: a few tens of milliseconds of holding the lock."""
DELETE_BATCH = 500
"""Messages deleted per transaction when an unfinished import is removed."""


def delete_unfinished_imports(transaction: Transaction, conversation_id: str | None = None) -> int:
    """Delete the conversations still marked `importing` (the one named, or all), a batch
    of messages per transaction; returns how many conversations were deleted."""
    with transaction() as conn:
        rows = conn.execute(
            "SELECT id FROM conversations WHERE importing = 1 AND (?1 IS NULL OR id = ?1)",
            (conversation_id,),
        ).fetchall()
    for (cid,) in rows:
        with transaction() as conn:
            files = attachments.conversation_files(conn, cid)
        while True:
            with transaction() as conn:
                deleted = conn.execute(
                    "DELETE FROM messages WHERE pk IN (SELECT pk FROM messages "
                    "WHERE conversation_id = ? LIMIT ?)",
                    (cid, DELETE_BATCH),
                ).rowcount
            if deleted < DELETE_BATCH:
                break
        with transaction() as conn:
            conn.execute("DELETE FROM lanes WHERE conversation_id = ?", (cid,))
            conn.execute("DELETE FROM compactions WHERE conversation_id = ?", (cid,))
            conn.execute("DELETE FROM model_calls WHERE conversation_id = ?", (cid,))
            conn.execute("DELETE FROM conversations WHERE id = ?", (cid,))
            # Files saved by the import's batches that nothing else holds go with it.
            attachments.drop_unreferenced(conn, files)
    return len(rows)


def delete_unfinished_project_imports(
    transaction: Transaction, project_id: str | None = None
) -> int:
    """Delete the projects still marked `importing` (the one named, or all) with their
    files, notes and conversations (all still hidden); returns how many projects."""
    with transaction() as conn:
        rows = conn.execute(
            "SELECT id FROM projects WHERE importing = 1 AND (?1 IS NULL OR id = ?1)",
            (project_id,),
        ).fetchall()
    for (pid,) in rows:
        with transaction() as conn:
            conn.execute("UPDATE conversations SET importing = 1 WHERE project_id = ?", (pid,))
            conversations = conn.execute(
                "SELECT id FROM conversations WHERE project_id = ?", (pid,)
            ).fetchall()
        for (cid,) in conversations:
            delete_unfinished_imports(transaction, cid)
        with transaction() as conn:
            conn.execute("DELETE FROM project_files WHERE project_id = ?", (pid,))
            conn.execute("DELETE FROM project_notes WHERE project_id = ?", (pid,))
            conn.execute("DELETE FROM projects WHERE id = ?", (pid,))
    return len(rows)


def finish_project_import(conn: sqlite3.Connection, project_id: str) -> None:
    """Show the imported project and all its conversations at once."""
    conn.execute(
        "UPDATE conversations SET importing = 0 WHERE project_id = ? AND importing = 1",
        (project_id,),
    )
    conn.execute("UPDATE projects SET importing = 0 WHERE id = ?", (project_id,))


class ConversationImport:
    """The conversation row is written first; messages follow in order, folds last.

    Messages arrive parents first (a tree is listed by depth). Each gets a new id derived
    from its exported id and a salt drawn for this import, so a parent's new id is found
    again without keeping a map of every id in memory. Messages are written without
    their lanes; `finish` builds the lanes and sets the path to the active leaf.
    """

    def __init__(
        self, transaction: Transaction, conversation: ConversationRecord, new_id: Callable[[], str]
    ) -> None:
        self._transaction = transaction
        self._salt = new_id()
        self.record = replace(conversation, message_count=0)
        self.depth = 0
        """One more than the deepest message's index (the history's length on one path)."""
        self._last: tuple[str, int] | None = None
        with transaction() as conn:
            queries.insert_conversation(conn, self.record)
            conn.execute("UPDATE conversations SET importing = 1 WHERE id = ?", (self.record.id,))

    def discard(self) -> None:
        """Delete everything written so far (the import failed)."""
        delete_unfinished_imports(self._transaction, self.record.id)

    @property
    def message_count(self) -> int:
        return self.depth

    def new_id(self, exported_id: str) -> str:
        """The id an exported message id gets in this import."""
        return hashlib.sha256(f"{self._salt}:{exported_id}".encode()).hexdigest()[:32]

    def _seq_of(
        self, conn: sqlite3.Connection, message_id: str, batch: Mapping[str, int]
    ) -> int | None:
        if self._last is not None and self._last[0] == message_id:
            return self._last[1]
        if message_id in batch:
            return batch[message_id]
        row = conn.execute(
            "SELECT seq FROM messages WHERE id = ? AND conversation_id = ?",
            (message_id, self.record.id),
        ).fetchone()
        return None if row is None else row[0]

    def add_messages(self, messages: Iterable[MessageRecord]) -> None:
        """Append messages. Each follows its `parent_id` (an exported id listed before it)
        at the next index; a message without a parent and with an index above 0 follows
        the message before it (a file of one path), one at index 0 starts a tree. One
        write transaction per `CHUNK` messages: their rows and their lanes."""
        batch = list(messages)
        for begin in range(0, len(batch), CHUNK):
            with self._transaction() as conn:
                self._add(conn, batch[begin : begin + CHUNK])
                branches.build_lanes(conn, self.record.id)

    def _add(self, conn: sqlite3.Connection, messages: Iterable[MessageRecord]) -> None:
        rows = []
        batch: dict[str, int] = {}
        for message in messages:
            if message.status not in MESSAGE_STATUSES:
                raise ValueError(f"unknown message status {message.status!r}")
            parent: str | None = None
            parent_seq: int | None = -1
            if message.parent_id is not None:
                parent = self.new_id(message.parent_id)
                parent_seq = self._seq_of(conn, parent, batch)
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
                    parts_json(conn, message.message, message.updated_at),
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
            conn.executemany(_MESSAGE_INSERT, rows)
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
        None = the last message written). One write transaction, which makes the
        conversation visible."""
        with self._transaction() as conn:
            return self._finish(conn, compactions, marks, active_leaf)

    def _finish(
        self,
        conn: sqlite3.Connection,
        compactions: Sequence[CompactionRecord],
        marks: Marks | None,
        active_leaf: str | None,
    ) -> ConversationRecord:
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
            if self._seq_of(conn, leaf, {}) is None:
                raise ValueError(f"the active leaf {active_leaf!r} is not a listed message")
        branches.set_path(conn, self.record.id, leaf)
        conn.execute(
            "UPDATE conversations SET active_leaf_id = ? WHERE id = ?", (leaf, self.record.id)
        )
        folds = []
        for c in compactions:
            last = None if c.last_message_id is None else self.new_id(c.last_message_id)
            if last is not None and self._seq_of(conn, last, {}) != c.state.api_start_index - 1:
                raise ValueError(
                    f"fold v{c.state.version}: its last message {c.last_message_id!r} must be "
                    f"a listed message at index {c.state.api_start_index - 1}"
                )
            folds.append(
                compaction_values(self.record.id, c.state, c.state.version, c.parent_version, last)
            )
        conn.executemany(COMPACTION_INSERT, folds)
        # A file of one path names no last messages: each fold's is the active path's
        # message just before its boundary.
        conn.execute(
            f"UPDATE compactions SET last_message_id = (SELECT m.id FROM {PATH_MESSAGES} "
            "WHERE l.conversation_id = compactions.conversation_id AND l.path_last IS NOT NULL "
            "AND m.seq = compactions.api_start_index - 1) "
            "WHERE conversation_id = ? AND last_message_id IS NULL",
            (self.record.id,),
        )
        conn.executemany(
            "UPDATE messages SET pinned_at = ?, leaf_fold_version = ? WHERE id = ?",
            [(pin, pointer, self.new_id(old)) for old, (pin, pointer) in (marks or {}).items()],
        )
        # The current fold must apply to the active path: walked back if it does not.
        branches.repoint_fold(conn, self.record.id, current[0] if current else 0)
        problem = import_checks.fold_off_its_parents_branch(conn, self.record.id)
        if problem:
            raise ValueError(f"invalid Foldline export: compactions: {problem}")
        # A conversation of a project still being imported stays hidden with its project
        # (`finish_project_import` shows them together).
        conn.execute(
            "UPDATE conversations SET importing = 0 WHERE id = ? AND NOT EXISTS (SELECT 1 "
            "FROM projects AS p WHERE p.id = conversations.project_id AND p.importing = 1)",
            (self.record.id,),
        )
        self.record = replace(
            self.record,
            message_count=queries.next_seq(conn, self.record.id),
            active_leaf_id=leaf,
        )
        return self.record
