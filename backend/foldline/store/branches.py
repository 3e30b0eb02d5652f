"""SQL for the message tree: the active path, branching, switching, siblings.

The tree is stored as *lanes*: chains of messages, each a run of one parent's first
child, its first child, and so on. A message continues its parent's lane when it is the
parent's first child and starts a lane of its own otherwise (an edit, a regenerated
answer: a second child); a lane is named by the `pk` of its first message, and the
`lanes` table records where each one forks from its parent lane. Every path is then a
short list of lane segments, and the active path (the path to
`conversations.active_leaf_id`) is stored as `lanes.path_last`, the last seq of each lane
on it (NULL off it). Reading the history is a range read per lane on the path
(`records.PATH_MESSAGES`); moving the path rewrites one row per lane on the old and the
new path, never a message, so a switch costs the same at the start of a 100,000-message
history as at its end. The current fold always applies to the active path:
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
    ON_PATH_FILTER,
    PATH_MESSAGE_COLUMNS,
    PATH_MESSAGES,
    CompactionRecord,
    MessageRecord,
    MessageStatus,
    NotFound,
    dump_json_or_none,
    message_from_row,
    on_path_sql,
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


def _lane_after(conn: sqlite3.Connection, parent_id: str | None) -> int | None:
    """The lane a child of `parent_id` continues; None when it starts one (a first
    message, or a second child: an edit, a regenerated answer)."""
    if parent_id is None:
        return None
    lane, has_child = conn.execute(
        "SELECT lane, EXISTS (SELECT 1 FROM messages AS c WHERE c.parent_id = p.id) "
        "FROM messages AS p WHERE p.id = ?",
        (parent_id,),
    ).fetchone()
    return None if has_child else lane


def start_lane(
    conn: sqlite3.Connection, conversation_id: str, head_pk: int, parent_id: str | None
) -> None:
    """Make the message `head_pk` the first of a lane forking from its parent's."""
    conn.execute("UPDATE messages SET lane = pk WHERE pk = ?", (head_pk,))
    conn.execute(
        "INSERT INTO lanes (lane, conversation_id, parent_lane, fork_seq, head_seq) "
        "SELECT h.pk, ?, p.lane, p.seq, h.seq FROM messages AS h "
        "LEFT JOIN messages AS p ON p.id = ? WHERE h.pk = ?",
        (conversation_id, parent_id, head_pk),
    )


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
    if not records:
        return records
    lane = _lane_after(conn, parent_id)
    usage_json = dump_json_or_none(usage)
    insert = (
        "INSERT INTO messages (id, conversation_id, seq, role, parts, status, usage, "
        "token_count, created_at, updated_at, parent_id, lane) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )

    def values(r: MessageRecord, lane: int | None) -> tuple[Any, ...]:
        return (
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
            lane,
        )

    head = conn.execute(insert, values(records[0], lane))
    if lane is None:
        assert head.lastrowid is not None
        lane = head.lastrowid
        start_lane(conn, conversation_id, lane, parent_id)
    conn.executemany(insert, [values(r, lane) for r in records[1:]])
    conn.execute("UPDATE lanes SET path_last = ? WHERE lane = ?", (records[-1].seq, lane))
    conn.execute(
        "UPDATE conversations SET updated_at = ?, active_leaf_id = ? WHERE id = ?",
        (now, records[-1].id, conversation_id),
    )
    return records


def build_lanes(conn: sqlite3.Connection, conversation_id: str | None = None) -> None:
    """Give every message of the conversation (None: of every conversation) that has no
    lane yet its lane, and each new lane its `lanes` row, in a few set-wide statements
    (an import's batch, the migration to lanes): the cost grows with the messages
    without a lane, not with the history. A parent's first child (lowest `pk`) continues
    its lane, as it would have when written one by one; the path is left as it was.
    Parents come before their children (earlier batches, or the same one)."""
    scope = "" if conversation_id is None else "AND h.conversation_id = :cid "
    args = {} if conversation_id is None else {"cid": conversation_id}
    # Named: the messages without a lane are the few just written, where the index of a
    # conversation's messages would walk its whole history on every batch of an import.
    heads = conn.execute(
        "UPDATE messages AS h INDEXED BY messages_by_lane SET lane = pk WHERE lane IS NULL "
        f"{scope}AND (parent_id IS NULL OR pk <> "
        "(SELECT min(c.pk) FROM messages AS c WHERE c.parent_id = h.parent_id)) "
        "RETURNING pk",
        args,
    ).fetchall()
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS lane_of (pk INTEGER PRIMARY KEY, lane INTEGER)")
    conn.execute(
        "INSERT INTO temp.lane_of (pk, lane) WITH RECURSIVE chain(pk, id, lane) AS ("
        "  SELECT h.pk, h.id, p.lane FROM messages AS h INDEXED BY messages_by_lane"
        "  JOIN messages AS p ON p.id = h.parent_id"
        f"  WHERE h.lane IS NULL AND p.lane IS NOT NULL {scope}"
        "  UNION ALL SELECT c.pk, c.id, chain.lane FROM chain"
        "  JOIN messages AS c ON c.parent_id = chain.id AND c.lane IS NULL"
        ") SELECT pk, lane FROM chain",
        args,
    )
    conn.execute(
        "UPDATE messages SET lane = t.lane FROM temp.lane_of AS t WHERE t.pk = messages.pk"
    )
    conn.execute("DELETE FROM temp.lane_of")
    conn.executemany(
        "INSERT INTO lanes (lane, conversation_id, parent_lane, fork_seq, head_seq) "
        "SELECT h.pk, h.conversation_id, p.lane, p.seq, h.seq FROM messages AS h "
        "LEFT JOIN messages AS p ON p.id = h.parent_id WHERE h.pk = ?",
        heads,
    )


def rebuild_lanes(conn: sqlite3.Connection) -> None:
    """Every lane and every active path built again from the messages' parents (the
    migration to lanes, a salvaged database)."""
    conn.execute("DELETE FROM lanes")
    conn.execute("UPDATE messages SET lane = NULL WHERE lane IS NOT NULL")
    build_lanes(conn)
    for conversation_id, leaf in conn.execute(
        "SELECT id, active_leaf_id FROM conversations"
    ).fetchall():
        set_path(conn, conversation_id, leaf)


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
        f"SELECT m.id FROM messages AS m INDEXED BY messages_by_id "
        f"WHERE m.conversation_id = ? AND m.id IN ({marks}) AND {on_path_sql('m')}",
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
        f"SELECT {PATH_MESSAGE_COLUMNS}, {on_path_sql('m')} FROM messages AS m "
        "WHERE m.id = ? AND m.conversation_id = ?",
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
    if parent_id is not None:
        message_on_path(conn, conversation_id, parent_id)
    pointer = _leave_leaf(conn, conversation_id, now)
    set_path(conn, conversation_id, parent_id)
    conn.execute(
        "UPDATE conversations SET active_leaf_id = ?, updated_at = ? WHERE id = ?",
        (parent_id, now, conversation_id),
    )
    repoint_fold(conn, conversation_id, pointer)


def set_path(conn: sqlite3.Connection, conversation_id: str, leaf_id: str | None) -> None:
    """Make the path to `leaf_id` (None: no message) the active path: the lanes of the
    old path leave it, then each lane from the leaf's up to the first one gets the last
    seq the path holds of it. One row per lane of either path, whatever their length."""
    conn.execute(
        "UPDATE lanes SET path_last = NULL WHERE conversation_id = ? AND path_last IS NOT NULL",
        (conversation_id,),
    )
    if leaf_id is None:
        return
    row = conn.execute("SELECT lane, seq FROM messages WHERE id = ?", (leaf_id,)).fetchone()
    lane, seq = row if row is not None else (None, None)
    while lane is not None:
        lane, seq = conn.execute(
            "UPDATE lanes SET path_last = ? WHERE lane = ? RETURNING parent_lane, fork_seq",
            (seq, lane),
        ).fetchone()


def latest_leaf(conn: sqlite3.Connection, conversation_id: str, message_id: str) -> str:
    """The leaf in the subtree of `message_id` the person was on last: the one most
    recently written or left (`updated_at`), so a switch returns where that branch was
    left, not to its newest version (NotFound if the message is not in this conversation).

    The leaves are the ends of the lanes in the subtree: the message's own lane and,
    recursively, the lanes forking from those at or below it (the `lanes` rows only)."""
    row = conn.execute(
        "SELECT lane, seq FROM messages WHERE id = ? AND conversation_id = ?",
        (message_id, conversation_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"no message {message_id!r} in conversation {conversation_id!r}")
    leaf = conn.execute(
        "WITH RECURSIVE subtree(lane, from_seq) AS ("
        "  SELECT ?, ?"
        "  UNION ALL SELECT l.lane, l.head_seq FROM lanes AS l"
        "  JOIN subtree ON l.parent_lane = subtree.lane AND l.fork_seq >= subtree.from_seq"
        ") SELECT m.id FROM subtree JOIN messages AS m ON m.pk = ("
        "  SELECT e.pk FROM messages AS e WHERE e.lane = subtree.lane ORDER BY e.seq DESC LIMIT 1"
        ") ORDER BY m.updated_at DESC, m.pk DESC LIMIT 1",
        row,
    ).fetchone()
    return leaf[0]


def switch_to(conn: sqlite3.Connection, conversation_id: str, message_id: str, now: str) -> str:
    """Make the leaf last used under `message_id` the active leaf; returns its id.

    Only the lanes of the two paths are rewritten (`set_path`). The fold pointer becomes
    the one remembered on the new leaf (walked back if it no longer applies), else the
    current one walked back.
    """
    leaf = latest_leaf(conn, conversation_id, message_id)
    current, _ = tip(conn, conversation_id)
    if leaf == current:
        return leaf
    pointer = _leave_leaf(conn, conversation_id, now)
    set_path(conn, conversation_id, leaf)
    remembered = conn.execute(
        "SELECT leaf_fold_version FROM messages WHERE id = ?", (leaf,)
    ).fetchone()[0]
    # Switching versions is reading, not writing: `updated_at` (the sidebar's order)
    # stays where the last message put it.
    conn.execute(
        "UPDATE conversations SET active_leaf_id = ? WHERE id = ?", (leaf, conversation_id)
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
        f"SELECT m.id FROM {PATH_MESSAGES} WHERE {ON_PATH_FILTER} AND m.seq = ?",
        (conversation_id, api_start_index - 1),
    ).fetchone()
    return None if row is None else row[0]


def branch_starts(conn: sqlite3.Connection, conversation_id: str) -> list[MessageRecord]:
    """The first message of every branch that leaves the active path (a sibling of one of
    its messages), by depth: where the other branches diverge. Those are the heads of
    the lanes off the path that fork from it (or start the tree), and the message after
    the path's end in each lane that the path leaves early."""
    rows = conn.execute(
        f"SELECT {PATH_MESSAGE_COLUMNS}, m.pk FROM lanes AS l JOIN messages AS m ON m.pk = l.lane "
        "WHERE l.conversation_id = ?1 AND l.path_last IS NULL AND (l.parent_lane IS NULL "
        "  OR (SELECT p.path_last FROM lanes AS p WHERE p.lane = l.parent_lane) >= l.fork_seq) "
        f"UNION ALL SELECT {PATH_MESSAGE_COLUMNS}, m.pk FROM lanes AS l "
        "JOIN messages AS m ON m.lane = l.lane AND m.seq = l.path_last + 1 "
        "WHERE l.conversation_id = ?1 AND l.path_last IS NOT NULL",
        (conversation_id,),
    ).fetchall()
    rows.sort(key=lambda row: (row[2], row[-1]))
    return [message_from_row(row[:-1]) for row in rows]
