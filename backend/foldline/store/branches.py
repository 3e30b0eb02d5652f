"""SQL for the message tree: the active path, branching, switching, siblings.

`messages.on_path` marks the active path (the path to `conversations.active_leaf_id`),
so every read of the display history stays a range read on `(conversation_id, seq)
WHERE on_path = 1`. Moving the active path rewrites the flags of the two segments that
differ, never the shared prefix. The current fold always applies to the active path:
when the path moves, the fold pointer of the leaf left is remembered on that leaf, and
the pointer moves to the fold the new path had when it was left, or else walks back the
fold chain (`core.tree.applicable_fold`).

Functions of a connection, run inside the caller's write transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from foldline.core.messages import Message
from foldline.core.tree import FoldLink, applicable_fold
from foldline.store.attachments import parts_json
from foldline.store.records import (
    MESSAGE_COLUMNS,
    CompactionRecord,
    MessageRecord,
    MessageStatus,
    NotFound,
    dump_json_or_none,
    message_from_row,
)


class NotOnPath(ValueError):
    """The message is not on the active path (an edit or regenerate must be)."""


def tip(conn: sqlite3.Connection, conversation_id: str) -> tuple[str | None, int]:
    """The active leaf's id and the seq a message appended after it gets."""
    row = conn.execute(
        "SELECT c.active_leaf_id, coalesce(m.seq + 1, 0) FROM conversations AS c "
        "LEFT JOIN messages AS m ON m.id = c.active_leaf_id WHERE c.id = ?",
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no conversation with id {conversation_id!r}")
    return row[0], row[1]


def append_after_leaf(
    conn: sqlite3.Connection,
    conversation_id: str,
    messages: Sequence[Message],
    *,
    now: str,
    new_id: Callable[[], str],
    status: MessageStatus = "complete",
    usage: dict[str, Any] | None = None,
    token_count: int | None = None,
) -> list[MessageRecord]:
    """Write `messages` as a chain after the active leaf; the last becomes the leaf."""
    parent_id, first_seq = tip(conn, conversation_id)
    records: list[MessageRecord] = []
    for offset, message in enumerate(messages):
        records.append(
            MessageRecord(
                id=new_id(),
                conversation_id=conversation_id,
                seq=first_seq + offset,
                message=message,
                status=status,
                usage=usage,
                token_count=token_count,
                created_at=now,
                updated_at=now,
                error=None,
                parent_id=records[-1].id if records else parent_id,
            )
        )
    usage_json = dump_json_or_none(usage)
    conn.executemany(
        "INSERT INTO messages (id, conversation_id, seq, role, parts, status, usage, "
        "token_count, created_at, updated_at, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                r.id,
                conversation_id,
                r.seq,
                r.message.role,
                parts_json(conn, r.message, now),
                status,
                usage_json,
                token_count,
                now,
                now,
                r.parent_id,
            )
            for r in records
        ],
    )
    conn.execute(
        "UPDATE conversations SET updated_at = ?, active_leaf_id = ? WHERE id = ?",
        (now, records[-1].id if records else parent_id, conversation_id),
    )
    return records


def fold_links(conn: sqlite3.Connection, conversation_id: str) -> dict[int, FoldLink]:
    """Every fold version of the conversation as the pointer walk sees it (a few rows)."""
    rows = conn.execute(
        "SELECT version, parent_version, last_message_id FROM compactions "
        "WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchall()
    return {row[0]: FoldLink(row[0], row[1], row[2]) for row in rows}


def on_path_ids(
    conn: sqlite3.Connection, conversation_id: str, ids: Iterable[str | None]
) -> set[str]:
    """Which of `ids` are on the active path."""
    wanted = [i for i in ids if i is not None]
    if not wanted:
        return set()
    marks = ", ".join("?" for _ in wanted)
    rows = conn.execute(
        # Named: SQLite would otherwise read the whole path to find a few ids.
        f"SELECT id FROM messages INDEXED BY messages_by_id "
        f"WHERE conversation_id = ? AND on_path = 1 AND id IN ({marks})",
        (conversation_id, *wanted),
    ).fetchall()
    return {row[0] for row in rows}


def repoint_fold(conn: sqlite3.Connection, conversation_id: str, start: int) -> int:
    """Make the deepest fold of `start`'s chain that applies to the active path current."""
    links = fold_links(conn, conversation_id)
    on_path = on_path_ids(conn, conversation_id, (link.last_message_id for link in links.values()))
    version = applicable_fold(start, links, on_path)
    conn.execute(
        "UPDATE conversations SET fold_version = ? WHERE id = ?", (version, conversation_id)
    )
    return version


def applying_to_path(
    conn: sqlite3.Connection, conversation_id: str, records: list[CompactionRecord]
) -> list[CompactionRecord]:
    """The folds among `records` that apply to the active path."""
    on_path = on_path_ids(conn, conversation_id, (r.last_message_id for r in records))
    return [r for r in records if r.last_message_id is None or r.last_message_id in on_path]


def _leave_leaf(conn: sqlite3.Connection, conversation_id: str, now: str) -> int:
    """Remember the current fold on the active leaf being left, and when it was left (its
    `updated_at`, so a switch back to its branch finds it); returns that fold."""
    row = conn.execute(
        "SELECT active_leaf_id, fold_version FROM conversations WHERE id = ?",
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no conversation with id {conversation_id!r}")
    leaf, version = row
    if leaf is not None:
        conn.execute(
            "UPDATE messages SET leaf_fold_version = ?, updated_at = ? WHERE id = ?",
            (version, now, leaf),
        )
    return version


def message_on_path(
    conn: sqlite3.Connection, conversation_id: str, message_id: str
) -> MessageRecord:
    """A message of the active path; NotFound / NotOnPath otherwise."""
    row = conn.execute(
        f"SELECT {MESSAGE_COLUMNS}, on_path FROM messages WHERE id = ? AND conversation_id = ?",
        (message_id, conversation_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"no message {message_id!r} in conversation {conversation_id!r}")
    if not row[-1]:
        raise NotOnPath(f"message {message_id!r} is not on the active path; switch to it first")
    return message_from_row(row)


def cut_path(
    conn: sqlite3.Connection, conversation_id: str, parent_id: str | None, now: str
) -> None:
    """End the active path at `parent_id` (None: before the first message), so the next
    message appended starts a new branch there. The leaf left keeps its fold pointer;
    the pointer moves back to the deepest fold that still applies."""
    seq = -1 if parent_id is None else message_on_path(conn, conversation_id, parent_id).seq
    pointer = _leave_leaf(conn, conversation_id, now)
    conn.execute(
        "UPDATE messages SET on_path = 0 WHERE conversation_id = ? AND on_path = 1 AND seq > ?",
        (conversation_id, seq),
    )
    conn.execute(
        "UPDATE conversations SET active_leaf_id = ?, updated_at = ? WHERE id = ?",
        (parent_id, now, conversation_id),
    )
    repoint_fold(conn, conversation_id, pointer)


def latest_leaf(conn: sqlite3.Connection, conversation_id: str, message_id: str) -> str:
    """The leaf in the subtree of `message_id` the person was on last: the one most
    recently written or left (`updated_at`), so a switch returns where that branch was
    left, not to its newest version (NotFound if the message is not in this conversation)."""
    row = conn.execute(
        "WITH RECURSIVE subtree(id, pk, updated_at) AS ("
        "  SELECT id, pk, updated_at FROM messages WHERE id = ? AND conversation_id = ?"
        "  UNION ALL SELECT m.id, m.pk, m.updated_at FROM messages AS m"
        "  JOIN subtree ON m.parent_id = subtree.id"
        ") SELECT subtree.id FROM subtree WHERE NOT EXISTS ("
        "  SELECT 1 FROM messages AS child WHERE child.parent_id = subtree.id"
        ") ORDER BY subtree.updated_at DESC, subtree.pk DESC LIMIT 1",
        (message_id, conversation_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"no message {message_id!r} in conversation {conversation_id!r}")
    return row[0]


_SEGMENT = (
    "WITH RECURSIVE up(id, parent_id, seq, on_path) AS ("
    "  SELECT id, parent_id, seq, on_path FROM messages WHERE id = ?"
    "  UNION ALL SELECT m.id, m.parent_id, m.seq, m.on_path FROM messages AS m"
    "  JOIN up ON m.id = up.parent_id WHERE up.on_path = 0"
    ")"
)
"""The messages from a leaf up to the first one on the active path (or a first message)."""


def switch_to(conn: sqlite3.Connection, conversation_id: str, message_id: str, now: str) -> str:
    """Make the leaf last used under `message_id` the active leaf; returns its id.

    Only the differing segments are rewritten: the new branch from where it leaves the
    active path, and the old path's rows from that depth on. The fold pointer becomes
    the one remembered on the new leaf (walked back if it no longer applies), else the
    current one walked back.
    """
    leaf = latest_leaf(conn, conversation_id, message_id)
    current, _ = tip(conn, conversation_id)
    if leaf == current:
        return leaf
    pointer = _leave_leaf(conn, conversation_id, now)
    # The new branch leaves the active path below its first message off the path (a
    # leaf on the path could only be its tip, handled above), so the old path's rows
    # from that depth on leave it, then the branch's rows join it. Clearing first keeps
    # the unique index of the path's depths valid at every step.
    depth = conn.execute(f"{_SEGMENT} SELECT min(seq) FROM up WHERE on_path = 0", (leaf,))
    conn.execute(
        "UPDATE messages SET on_path = 0 WHERE conversation_id = ? AND on_path = 1 AND seq >= ?",
        (conversation_id, depth.fetchone()[0]),
    )
    conn.execute(
        f"{_SEGMENT} UPDATE messages SET on_path = 1 "
        "WHERE id IN (SELECT id FROM up WHERE on_path = 0)",
        (leaf,),
    )
    remembered = conn.execute(
        "SELECT leaf_fold_version FROM messages WHERE id = ?", (leaf,)
    ).fetchone()[0]
    conn.execute(
        "UPDATE conversations SET active_leaf_id = ?, updated_at = ? WHERE id = ?",
        (leaf, now, conversation_id),
    )
    repoint_fold(conn, conversation_id, pointer if remembered is None else remembered)
    return leaf


def sibling_ids(
    conn: sqlite3.Connection, conversation_id: str, message_ids: Iterable[str]
) -> dict[str, list[str]]:
    """For each message: its id and its siblings' (same parent), oldest first."""
    wanted = list(message_ids)
    if not wanted:
        return {}
    marks = ", ".join("?" for _ in wanted)
    rows = conn.execute(
        # `m` by id, named: SQLite would otherwise read the conversation's every message.
        "SELECT m.id, s.id FROM messages AS m INDEXED BY messages_by_id JOIN messages AS s "
        "  ON s.conversation_id = m.conversation_id AND s.seq = m.seq "
        "  AND s.parent_id IS m.parent_id "
        f"WHERE m.conversation_id = ? AND m.id IN ({marks}) "
        "ORDER BY m.id, s.created_at, s.pk",
        (conversation_id, *wanted),
    ).fetchall()
    siblings: dict[str, list[str]] = {}
    for message_id, sibling in rows:
        siblings.setdefault(message_id, []).append(sibling)
    return siblings


def last_folded_id(
    conn: sqlite3.Connection, conversation_id: str, api_start_index: int
) -> str | None:
    """The active path's message just before `api_start_index`: a fold's last message."""
    if api_start_index <= 0:
        return None
    row = conn.execute(
        "SELECT id FROM messages WHERE conversation_id = ? AND on_path = 1 AND seq = ?",
        (conversation_id, api_start_index - 1),
    ).fetchone()
    return None if row is None else row[0]


def branch_starts(conn: sqlite3.Connection, conversation_id: str) -> list[MessageRecord]:
    """The first message of every branch that leaves the active path (a sibling of one of
    its messages), by depth: where the other branches diverge."""
    rows = conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM messages AS m "
        "WHERE m.conversation_id = ? AND m.on_path = 0 AND (m.parent_id IS NULL OR EXISTS ("
        "  SELECT 1 FROM messages AS p WHERE p.id = m.parent_id AND p.on_path = 1)) "
        "ORDER BY m.seq, m.pk",
        (conversation_id,),
    ).fetchall()
    return [message_from_row(row) for row in rows]
