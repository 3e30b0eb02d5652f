"""The store: conversations, their full display history, every fold, calibration.

Everything the person ever saw is kept. The model's view is loaded from the current fold
and the rows from its `apiStartIndex` only, so its cost does not grow with the history.
Writes that belong together (a fold and the pruning marks it carries, a conversation and
its children on delete) are one transaction; a fold is checked against the version it
was planned on, so two folds are never interleaved.

Thread safety: a `Store` may be shared by any number of threads; each thread uses its own
SQLite connection (see `connection.py`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from foldline.core.calibration import Calibration, counting_calibration
from foldline.core.messages import Message
from foldline.core.state import CompactionState
from foldline.paths import make_private_files
from foldline.store import attachments, branches, handoffs, lookups, projects, queries, usage
from foldline.store.connection import ConnectionPool
from foldline.store.counts import CountMethods, restore_count_triggers, with_files
from foldline.store.folds import FoldMethods
from foldline.store.handoffs import HandoffMethods
from foldline.store.importing import (
    delete_unfinished_imports,
    delete_unfinished_project_imports,
)
from foldline.store.migrations import migrations
from foldline.store.projects import ProjectMethods
from foldline.store.recall import RecallMethods, missing_recall_triggers, rebuild_recall_index
from foldline.store.records import (
    CONVERSATION_COLUMNS,
    MESSAGE_COLUMNS,
    MESSAGE_STATUSES,
    ON_PATH_FILTER,
    PATH_MESSAGE_COLUMNS,
    PATH_MESSAGES,
    ConversationRecord,
    CorruptDatabase,
    MessageRecord,
    MessageStatus,
    NotFound,
    PinRecord,
    SearchHit,
    conversation_from_row,
    dump_json_or_none,
    is_corruption,
    message_from_row,
    new_id,
    stored_json,
    utc_timestamp,
)
from foldline.store.redo import FoldRedoMethods
from foldline.store.schema import missing_search_triggers, rebuild_search_index
from foldline.store.search import fts_query, like_pattern, search_terms
from foldline.store.transfer import TransferMethods

RECOVERED_ERROR = "The app stopped before this answer was finished; the text so far is kept."


def _check_status(status: str) -> None:
    if status not in MESSAGE_STATUSES:
        raise ValueError(f"unknown message status {status!r}; expected one of {MESSAGE_STATUSES}")


class KeepProvider:
    """The default of `Store.update_conversation(provider=)`: leave the provider as is
    (None is a value there: it clears the choice)."""


KEEP_PROVIDER = KeepProvider()


class Store(
    HandoffMethods,
    ProjectMethods,
    CountMethods,
    FoldMethods,
    FoldRedoMethods,
    TransferMethods,
    RecallMethods,
):
    """SQLite persistence for Foldline (one database file).

    Opening runs the pending migrations and then startup recovery: a message left
    `streaming` can only mean the process that was writing it died, so it becomes
    `interrupted` with its partial text kept. Open one `Store` per file per process and
    share it between threads; a second process streaming into the same file at the same
    moment would see its live message marked interrupted (pass `recover=False` for
    read-only tools).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], datetime] | None = None,
        recover: bool = True,
    ) -> None:
        self.path = Path(path)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._pool = ConnectionPool(self.path)
        try:
            self._migrate()
        except sqlite3.DatabaseError as error:
            self._pool.close()
            if is_corruption(error):
                raise CorruptDatabase(self.path, str(error)) from None
            raise
        make_private_files(self.path)
        self.recovered_message_ids: tuple[str, ...] = self._recover() if recover else ()
        """Ids of the messages startup recovery marked interrupted (for logs and tests)."""

    def _now(self) -> str:
        return utc_timestamp(self._clock())

    def _migrate(self) -> None:
        db = self._pool.get()
        # Migrating inside one IMMEDIATE transaction makes two processes opening a fresh
        # file at once take turns: the second sees the first one's migrations as applied.
        # (Migrations.apply nests its own per-migration transactions as savepoints.)
        with self._pool.write():
            migrations.apply(db)
            if missing_search_triggers(db):
                rebuild_search_index(db)
            if missing_recall_triggers(db):
                rebuild_recall_index(db)
            restore_count_triggers(db.conn)

    def _recover(self) -> tuple[str, ...]:
        # An import cut by a crash is hidden; what it wrote goes now.
        delete_unfinished_imports(self._pool.write)
        delete_unfinished_project_imports(self._pool.write)
        with self._pool.write() as conn:
            rows = conn.execute(
                "UPDATE messages SET status = 'interrupted', error = coalesce(error, ?), "
                "updated_at = ? WHERE status = 'streaming' RETURNING id",
                (RECOVERED_ERROR, self._now()),
            ).fetchall()
        return tuple(row[0] for row in rows)

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- conversations -------------------------------------------------------------------

    def create_conversation(
        self,
        *,
        title: str = "New conversation",
        model: str | None = None,
        system_prompt: str = "",
        settings: dict[str, Any] | None = None,
        project_id: str | None = None,
        provider: str | None = None,
    ) -> ConversationRecord:
        now = self._now()
        record = ConversationRecord(
            id=new_id(),
            title=title,
            model=model,
            provider=provider,
            system_prompt=system_prompt,
            settings=dict(settings or {}),
            created_at=now,
            updated_at=now,
            message_count=0,
            project_id=project_id,
        )
        with self._pool.write() as conn:
            if project_id is not None:
                projects.get_project(conn, project_id)
            queries.insert_conversation(conn, record)
        return record

    def get_conversation(self, conversation_id: str) -> ConversationRecord:
        return queries.get_conversation(self._pool.get().conn, conversation_id)

    def list_conversations(
        self,
        q: str | None = None,
        limit: int = 200,
        *,
        project_id: str | None = None,
        no_project: bool = False,
    ) -> list[ConversationRecord]:
        """Newest (`updated_at`) first. With `q`: conversations whose title contains every
        term (case-insensitive), or with a message matching the full-text query. With
        `project_id`: only that project's; with `no_project`: only those in none."""
        match = fts_query(q) if q else None
        conn = self._pool.get().conn
        # A conversation an import is still writing is shown nowhere until complete.
        where, params = ["c.importing = 0"], []
        if project_id is not None:
            where.append("c.project_id = ?")
            params.append(project_id)
        elif no_project:
            where.append("c.project_id IS NULL")
        if match is not None:
            terms = search_terms(q or "")
            title_test = " AND ".join("c.title LIKE ? ESCAPE '\\'" for _ in terms)
            where.append(
                f"(({title_test}) OR c.id IN ("
                "  SELECT messages.conversation_id FROM messages_fts "
                "  JOIN messages ON messages.pk = messages_fts.rowid "
                "  WHERE messages_fts MATCH ?))"
            )
            params.extend([*[like_pattern(term) for term in terms], match])
        condition = f"WHERE {' AND '.join(where)} "
        rows = conn.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations AS c {condition}"
            "ORDER BY c.updated_at DESC, c.created_at DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [conversation_from_row(row) for row in rows]

    def search_hit(self, conversation_id: str, q: str) -> SearchHit | None:
        """The newest message of the conversation matching `q` (see `lookups`)."""
        return lookups.search_hit(self._pool.get().conn, conversation_id, q)

    def find_in_conversation(
        self, conversation_id: str, q: str, *, every_branch: bool = False
    ) -> list[SearchHit]:
        """Every message matching `q`, in display order (the find bar; see `lookups`)."""
        return lookups.find_in_conversation(self._pool.get().conn, conversation_id, q, every_branch)

    def update_conversation(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        settings: dict[str, Any] | None = None,
        provider: str | KeepProvider | None = KEEP_PROVIDER,
    ) -> ConversationRecord:
        """Change the given fields (None = leave as is); `settings` replaces the whole dict.
        `provider` is set only when given (None then clears it: the configuration picks)."""
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = title
        if model is not None:
            changes["model"] = model
        if not isinstance(provider, KeepProvider):
            changes["provider"] = provider
        if system_prompt is not None:
            changes["system_prompt"] = system_prompt
        if settings is not None:
            changes["settings"] = stored_json(settings, "settings")
        changes["updated_at"] = self._now()
        assignments = ", ".join(f"{column} = ?" for column in changes)
        with self._pool.write() as conn:
            cursor = conn.execute(
                f"UPDATE conversations SET {assignments} WHERE id = ?",
                (*changes.values(), conversation_id),
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no conversation with id {conversation_id!r}")
            return queries.get_conversation(conn, conversation_id)

    def replace_title(self, conversation_id: str, expected: str, title: str) -> bool:
        """Set `title` only if the title is still `expected` (False: it changed meanwhile,
        a rename by the person wins over a title made in the background)."""
        with self._pool.write() as conn:
            cursor = conn.execute(
                "UPDATE conversations SET title = ? WHERE id = ? AND title = ?",
                (title, conversation_id, expected),
            )
            return cursor.rowcount == 1

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete the conversation with its messages and every fold version, and the bytes
        of its files that no other conversation holds."""
        with self._pool.write() as conn:
            handoffs.unlink_handoffs(conn, conversation_id)
            files = attachments.conversation_files(conn, conversation_id)
            conn.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation_id,))
            conn.execute("DELETE FROM lanes WHERE conversation_id = ?", (conversation_id,))
            attachments.drop_unreferenced(conn, files)
            conn.execute("DELETE FROM compactions WHERE conversation_id = ?", (conversation_id,))
            conn.execute("DELETE FROM model_calls WHERE conversation_id = ?", (conversation_id,))
            cursor = conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            if cursor.rowcount == 0:
                raise NotFound(f"no conversation with id {conversation_id!r}")

    # -- messages ------------------------------------------------------------------------

    def append_message(
        self,
        conversation_id: str,
        message: Message,
        *,
        status: MessageStatus = "complete",
        usage: dict[str, Any] | None = None,
        token_count: int | None = None,
    ) -> MessageRecord:
        """Add a message at the end of the display history (`seq` = the next index)."""
        return self.append_messages(
            conversation_id, [message], status=status, usage=usage, token_count=token_count
        )[0]

    def append_messages(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        status: MessageStatus = "complete",
        usage: dict[str, Any] | None = None,
        token_count: int | None = None,
    ) -> list[MessageRecord]:
        """Add several messages after the active leaf in one transaction (all or none),
        in order; the last one becomes the active leaf."""
        _check_status(status)
        with self._pool.write() as conn:
            return branches.append_after_leaf(
                conn,
                conversation_id,
                messages,
                now=self._now(),
                new_id=new_id,
                status=status,
                usage=usage,
                token_count=token_count,
            )

    # -- the message tree ----------------------------------------------------------------

    def branch(
        self, conversation_id: str, parent_id: str | None, message: Message | None = None
    ) -> MessageRecord | None:
        """End the active path at `parent_id` (a message on it; None = before the first
        message) and append `message` there as a new branch, in one transaction. Without
        a message the path just ends there, for an answer to be written next (regenerate).
        The fold pointer moves back to the deepest fold that applies to the new path."""
        with self._pool.write() as conn:
            now = self._now()
            branches.cut_path(conn, conversation_id, parent_id, now)
            if message is None:
                return None
            return branches.append_after_leaf(
                conn, conversation_id, [message], now=now, new_id=new_id
            )[0]

    def switch_branch(self, conversation_id: str, message_id: str) -> ConversationRecord:
        """Make the leaf last used (written or left) under `message_id` the active leaf."""
        with self._pool.write() as conn:
            branches.switch_to(conn, conversation_id, message_id, self._now())
            return queries.get_conversation(conn, conversation_id)

    def sibling_ids(self, conversation_id: str, message_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each message's id and its siblings' (same parent), oldest first."""
        return branches.sibling_ids(self._pool.get().conn, conversation_id, message_ids)

    def branch_starts(self, conversation_id: str) -> list[MessageRecord]:
        """The first message of each branch that leaves the active path, by depth."""
        return branches.branch_starts(self._pool.get().conn, conversation_id)

    def message_on_path(self, conversation_id: str, message_id: str) -> MessageRecord:
        """A message of the active path (NotFound; `branches.NotOnPath` off the path)."""
        return branches.message_on_path(self._pool.get().conn, conversation_id, message_id)

    def update_message(
        self,
        message_id: str,
        *,
        message: Message | None = None,
        status: MessageStatus | None = None,
        usage: dict[str, Any] | None = None,
        token_count: int | None = None,
        error: str | None = None,
    ) -> MessageRecord:
        """Change the given fields (None = leave as is), e.g. one flush of a streamed answer.

        One statement, so it commits on its own; it does not touch the conversation's
        `updated_at` (the append did), which keeps a streamed flush to a single row write.
        """
        changes: dict[str, Any] = {}
        conn = self._pool.get().conn
        if message is not None:
            changes["role"] = message.role
            changes["parts"] = attachments.parts_json(conn, message, self._now())
        if status is not None:
            _check_status(status)
            changes["status"] = status
        if usage is not None:
            changes["usage"] = dump_json_or_none(usage)
        if token_count is not None:
            changes["token_count"] = token_count
        if error is not None:
            changes["error"] = error
        changes["updated_at"] = self._now()
        assignments = ", ".join(f"{column} = ?" for column in changes)
        rows = conn.execute(
            f"UPDATE messages SET {assignments} WHERE id = ? RETURNING {MESSAGE_COLUMNS}",
            (*changes.values(), message_id),
        ).fetchall()
        if not rows:
            raise NotFound(f"no message with id {message_id!r}")
        return message_from_row(rows[0])

    def get_message(self, message_id: str) -> MessageRecord:
        row = (
            self._pool.get()
            .conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,))
            .fetchone()
        )
        if row is None:
            raise NotFound(f"no message with id {message_id!r}")
        return message_from_row(row)

    def list_messages(
        self, conversation_id: str, *, offset: int = 0, limit: int = 100
    ) -> list[MessageRecord]:
        """A page of the display history: the messages with `offset <= seq < offset+limit`."""
        if offset < 0 or limit < 0:
            raise ValueError("offset and limit must not be negative")
        with self._pool.snapshot() as conn:
            rows = conn.execute(
                f"SELECT {PATH_MESSAGE_COLUMNS} FROM {PATH_MESSAGES} "
                f"WHERE {ON_PATH_FILTER} AND m.seq >= ? AND m.seq < ? ORDER BY m.seq",
                (conversation_id, offset, offset + limit),
            ).fetchall()
            if not rows:
                queries.get_conversation(conn, conversation_id)
        return [message_from_row(row) for row in rows]

    def message_count(self, conversation_id: str) -> int:
        return queries.next_seq(self._pool.get().conn, conversation_id)

    def load_window(
        self, conversation_id: str
    ) -> tuple[CompactionState | None, list[MessageRecord]]:
        """The current fold and the rows the model sees (`seq >= api_start_index`).

        Both come from one read snapshot, so a fold committed meanwhile cannot pair a new
        state with old rows. Reads only the window: cost independent of history length.
        """
        with self._pool.snapshot() as conn:
            state = queries.current_compaction(conn, conversation_id)
            start = state.api_start_index if state else 0
            rows = conn.execute(
                f"SELECT {PATH_MESSAGE_COLUMNS} FROM {PATH_MESSAGES} "
                f"WHERE {ON_PATH_FILTER} AND m.seq >= ? ORDER BY m.seq",
                (conversation_id, start),
            ).fetchall()
            # The model reads its files: their bytes are put back into its window.
            records = with_files(conn, [message_from_row(row) for row in rows])
        return state, records

    def search_messages(
        self, q: str, conversation_id: str | None = None, limit: int = 50
    ) -> list[MessageRecord]:
        """Messages matching every typed term, newest first (see `lookups`)."""
        return lookups.search_messages(self._pool.get().conn, q, conversation_id, limit)

    # -- pins ----------------------------------------------------------------------------

    def list_pins(self, conversation_id: str) -> list[PinRecord]:
        """The pinned messages of a conversation, in display order, with their files'
        bytes (a pinned message rides verbatim in the model's view)."""
        with self._pool.snapshot() as conn:
            pins = lookups.list_pins(conn, conversation_id)
            messages = attachments.hydrate(conn, [pin.message for pin in pins])
        return [
            pin if pin.message is m else replace(pin, message=m)
            for pin, m in zip(pins, messages, strict=True)
        ]

    def attachment(self, conversation_id: str, sha256: str) -> tuple[str, bytes]:
        """(media type, bytes) of a file attached in this conversation; NotFound when no
        message of it holds the file."""
        with self._pool.snapshot() as conn:
            queries.get_conversation(conn, conversation_id)
            if not attachments.conversation_holds(conn, conversation_id, sha256):
                raise NotFound(f"no attachment {sha256!r} in conversation {conversation_id!r}")
            return attachments.attachment_bytes(conn, sha256)

    def folded_file_names(self, conversation_id: str, from_index: int, to_index: int) -> list[str]:
        """The names of the person's files in the active path's messages `[from, to)`."""
        return attachments.folded_file_names(
            self._pool.get().conn, conversation_id, from_index, to_index
        )

    def hydrate(self, messages: Sequence[Message]) -> list[Message]:
        """The messages with their files' bytes filled in (for a summarizer, an export)."""
        return attachments.hydrate(self._pool.get().conn, messages)

    def set_pinned(self, conversation_id: str, message_id: str, pinned: bool) -> str | None:
        """Pin or unpin a message; returns its `pinned_at` (None when unpinned)."""
        with self._pool.write() as conn:
            return lookups.set_pinned(conn, conversation_id, message_id, pinned, self._now())

    # -- usage and cost ------------------------------------------------------------------

    def record_calls(self, conversation_id: str, calls: Sequence[usage.ModelCall]) -> None:
        """Store finished model calls (their `created_at` is now when left empty)."""
        now = self._now()
        stamped = [c if c.created_at else replace(c, created_at=now) for c in calls]
        with self._pool.write() as conn:
            usage.insert_calls(conn, conversation_id, stamped)

    def usage_totals(self, conversation_id: str) -> tuple[usage.UsageTotals, usage.UsageTotals]:
        """(the whole conversation so far, its latest turn)."""
        with self._pool.snapshot() as conn:
            return (
                usage.conversation_totals(conn, conversation_id),
                usage.last_turn_totals(conn, conversation_id),
            )

    def fold_usage(self, conversation_id: str) -> dict[int, usage.UsageTotals]:
        """What each fold version's summarizer calls used and cost."""
        return usage.fold_totals(self._pool.get().conn, conversation_id)

    def list_calls(self, conversation_id: str) -> list[usage.ModelCall]:
        return usage.list_calls(self._pool.get().conn, conversation_id)

    def last_chat_call(self, conversation_id: str) -> usage.ModelCall | None:
        """The conversation's latest answer's call (None: never)."""
        return usage.last_chat_call(self._pool.get().conn, conversation_id)

    def last_chat_call_at(self, conversation_id: str) -> datetime | None:
        """When the conversation's last answer finished (None: never)."""
        stamp = usage.last_call_at(self._pool.get().conn, conversation_id)
        return datetime.fromisoformat(stamp) if stamp else None

    # -- calibration ---------------------------------------------------------------------

    def get_calibration(self, provider: str, model: str) -> Calibration:
        """The learned ratio for this provider and model (ratio 1.0, 0 samples if none)."""
        return queries.get_calibration(self._pool.get().conn, provider, model)

    def counting_calibration(self, provider: str, model: str) -> Calibration:
        """The ratio to count `model` with: its own once it has samples, else its
        provider's, else a guess that errs high (`core.calibration.counting_calibration`)."""
        with self._pool.snapshot() as conn:
            return counting_calibration(
                queries.get_calibration(conn, provider, model),
                queries.best_provider_calibration(conn, provider),
                queries.highest_learned_ratio(conn),
            )

    def set_calibration(self, provider: str, model: str, calibration: Calibration) -> None:
        with self._pool.write() as conn:
            queries.set_calibration(conn, provider, model, calibration, self._now())
