"""Folds: the current fold, every version, and committing or undoing one.

A fold is checked against the version it was planned on, so two folds are never
interleaved: `commit_fold` writes nothing and raises `ConcurrentFold` when another fold or
an undo happened since. Nothing is ever deleted: an undone version stays stored (see
`redo.py` for bringing it back).
"""

from __future__ import annotations

from collections.abc import Mapping

from foldline.core.messages import Message
from foldline.core.state import CompactionState
from foldline.store import branches, queries
from foldline.store.connection import ConnectionPool
from foldline.store.records import (
    COMPACTION_INSERT,
    CompactionRecord,
    ConcurrentFold,
    NotFound,
    compaction_values,
)


class FoldMethods:
    """The `Store`'s methods for folds (a base of `Store`, which owns the connection pool
    and the clock; kept here so the Store stays small)."""

    _pool: ConnectionPool

    def _now(self) -> str:
        raise NotImplementedError

    def current_compaction(self, conversation_id: str) -> CompactionState | None:
        return queries.current_compaction(self._pool.get().conn, conversation_id)

    def list_compactions(
        self, conversation_id: str, *, active_path_only: bool = False
    ) -> list[CompactionRecord]:
        """Every fold version, oldest first, with which one is current; with
        `active_path_only`, only the folds that apply to the active path."""
        with self._pool.snapshot() as conn:
            records = queries.list_compactions(conn, conversation_id)
            if active_path_only:
                return branches.applying_to_path(conn, conversation_id, records)
            return records

    def commit_fold(
        self,
        conversation_id: str,
        state: CompactionState,
        *,
        expected_version: int,
        pruned: Mapping[str, Message] | None = None,
    ) -> CompactionState:
        """Make `state` the current fold, in one transaction, and return it as stored.

        `expected_version` is the version current when the fold was planned (0 = none);
        if another fold or an undo happened since, nothing is written and ConcurrentFold
        is raised so the caller recomputes. Messages appended meanwhile do not conflict:
        the fold covers only earlier ones. `pruned` (message id -> replacement, e.g. tool
        outputs marked `compacted_at`) is written in the same transaction.

        The stored version is one more than the highest version ever stored for the
        conversation. That equals `state.version` unless a fold was undone: undone versions
        are kept, so their numbers are not reused, and the returned state says which
        number this fold got.
        """
        with self._pool.write() as conn:
            current_version = queries.fold_version(conn, conversation_id)
            if current_version != expected_version:
                raise ConcurrentFold(conversation_id, expected_version, current_version)
            count = queries.next_seq(conn, conversation_id)
            if not 0 <= state.api_start_index <= count:
                raise ValueError(
                    f"api_start_index {state.api_start_index} is outside the history "
                    f"of {count} messages"
                )
            current = queries.current_compaction(conn, conversation_id)
            if current is not None and state.api_start_index < current.api_start_index:
                raise ValueError(
                    f"a fold cannot move api_start_index back from "
                    f"{current.api_start_index} to {state.api_start_index}; undo instead"
                )
            version = conn.execute(
                "SELECT coalesce(max(version), 0) + 1 FROM compactions WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()[0]
            last_id = branches.last_folded_id(conn, conversation_id, state.api_start_index)
            conn.execute(
                COMPACTION_INSERT,
                compaction_values(conversation_id, state, version, current_version, last_id),
            )
            conn.execute(
                "UPDATE conversations SET fold_version = ?, updated_at = ? WHERE id = ?",
                (version, self._now(), conversation_id),
            )
            queries.replace_messages(conn, conversation_id, pruned or {}, self._now())
        return state if state.version == version else state.model_copy(update={"version": version})

    def commit_prune(self, conversation_id: str, replacements: Mapping[str, Message]) -> None:
        """Replace several messages (pruning marks) in one transaction, all or none."""
        with self._pool.write() as conn:
            queries.replace_messages(conn, conversation_id, replacements, self._now())

    def undo_fold(self, conversation_id: str, version: int) -> CompactionState | None:
        """Make the fold that preceded `version` current again (None = no fold).

        `version` must be the current one, so an undo clicked on a stale screen cannot
        undo a newer fold (ConcurrentFold). Nothing is deleted: the undone version stays
        in `list_compactions`.
        """
        with self._pool.write() as conn:
            current_version = queries.fold_version(conn, conversation_id)
            row = conn.execute(
                "SELECT parent_version FROM compactions WHERE conversation_id = ? AND version = ?",
                (conversation_id, version),
            ).fetchone()
            if row is None:
                raise NotFound(f"conversation {conversation_id!r} has no fold version {version}")
            if current_version != version:
                raise ConcurrentFold(conversation_id, version, current_version)
            # Walked back to the first fold of the chain that applies to the active path:
            # the parent itself, unless it lies on another branch (a forged or damaged
            # chain), which must never be current here.
            branches.repoint_fold(conn, conversation_id, row[0])
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?",
                (self._now(), conversation_id),
            )
            return queries.current_compaction(conn, conversation_id)
