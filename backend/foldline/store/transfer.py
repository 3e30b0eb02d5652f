"""Whole conversations out and in: one read snapshot for an export, and an import
written under new ids, hidden until complete (see `importing.py`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from foldline.store import lookups, queries
from foldline.store.connection import ConnectionPool
from foldline.store.importing import ConversationImport
from foldline.store.records import (
    MESSAGE_COLUMNS,
    ON_PATH_FILTER,
    PATH_MESSAGE_COLUMNS,
    PATH_MESSAGES,
    CompactionRecord,
    ConversationRead,
    ConversationRecord,
    MessageRecord,
    message_from_row,
    new_id,
)


class TransferMethods:
    """The `Store`'s methods that read a whole conversation for an export and write one
    from an import (a base of `Store`, which owns the connection pool and the clock; kept
    here so the Store stays small)."""

    _pool: ConnectionPool

    def _now(self) -> str:
        raise NotImplementedError

    def read_conversation(
        self, conversation_id: str
    ) -> tuple[ConversationRecord, list[MessageRecord], list[CompactionRecord]]:
        """The whole conversation from one read snapshot (for export)."""
        with self.reading_conversation(conversation_id) as (conversation, messages, folds, _):
            return conversation, list(messages), folds

    @contextmanager
    def reading_conversation(
        self, conversation_id: str, *, every_branch: bool = False
    ) -> Iterator[ConversationRead]:
        """The conversation, its messages one at a time (the active path in display
        order; with `every_branch`, every message, parents first), its folds and the
        messages' marks (id -> (pinned_at, leaf_fold_version), for the marked ones), all
        from one read snapshot: an export of any size reads in constant memory."""
        with self._pool.snapshot() as conn:
            conversation = queries.get_conversation(conn, conversation_id)
            compactions = queries.list_compactions(conn, conversation_id)
            marks = lookups.message_marks(conn, conversation_id)
            cursor = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY seq, pk"
                if every_branch
                else f"SELECT {PATH_MESSAGE_COLUMNS} FROM {PATH_MESSAGES} "
                f"WHERE {ON_PATH_FILTER} ORDER BY m.seq",
                (conversation_id,),
            )
            yield conversation, (message_from_row(row) for row in cursor), compactions, marks

    @contextmanager
    def import_conversation(
        self,
        conversation: ConversationRecord,
        project: Callable[[sqlite3.Connection, str], str] | None = None,
    ) -> Iterator[ConversationImport]:
        """A new conversation (new ids): messages are added in batches, each its own
        transaction, then `finish` writes the folds and makes the conversation visible;
        until then no read shows it. An exception inside deletes what was written.
        Titles, settings, timestamps, statuses and fold versions are kept as given.
        `project(conn, now)` gives the project it joins (created first, in a transaction
        of its own, when the file brings one that is not here)."""
        if project is not None:
            with self._pool.write() as conn:
                conversation = replace(conversation, project_id=project(conn, self._now()))
        writer = ConversationImport(self._pool.write, replace(conversation, id=new_id()), new_id)
        try:
            yield writer
        except BaseException:
            writer.discard()
            raise

    def restore_conversation(
        self,
        conversation: ConversationRecord,
        messages: Sequence[MessageRecord],
        compactions: Sequence[CompactionRecord],
    ) -> ConversationRecord:
        """Write a whole conversation under new ids in one transaction (see
        `import_conversation`); `messages` in display order with `seq` 0, 1, 2..."""
        with self.import_conversation(conversation) as writer:
            writer.add_messages(messages)
            return writer.finish(compactions)
