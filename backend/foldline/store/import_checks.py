"""Checks of an imported conversation that need the message tree as written.

An import is checked before it is committed; most checks read the document as it
streams by, but whether a fold's last message lies on the same branch as its parent
fold's needs the parent links of messages that may be hundreds of thousands apart in the
file. They are read back here from the import's own uncommitted rows (the same
connection, in the transaction that completes it), so the check costs no memory per
message.
"""

from __future__ import annotations

import sqlite3

from foldline.store.branches import fold_links


def fold_off_its_parents_branch(conn: sqlite3.Connection, conversation_id: str) -> str:
    """A sentence naming the first fold whose last message does not descend from (or
    equal) its parent fold's last message, or "" when every chain stays on one branch.

    A child fold summarizes the history its parent summarized and more of the same path;
    one on another branch would, once its child is undone, leave a summary of branch A
    current on branch B."""
    links = fold_links(conn, conversation_id)
    for link in sorted(links.values(), key=lambda link: link.version):
        parent = links.get(link.parent_version)
        if parent is None or parent.last_message_id is None:
            continue
        row = conn.execute(
            "WITH RECURSIVE up(id, parent_id, seq) AS ("
            "  SELECT id, parent_id, seq FROM messages WHERE id = ?1"
            "  UNION ALL SELECT m.id, m.parent_id, m.seq FROM messages AS m"
            "  JOIN up ON m.id = up.parent_id"
            "  WHERE up.seq > (SELECT seq FROM messages WHERE id = ?2)"
            ") SELECT 1 FROM up WHERE id = ?2",
            (link.last_message_id, parent.last_message_id),
        ).fetchone()
        if row is None:
            return (
                f"fold v{link.version} lies on another branch than its parent fold "
                f"v{parent.version} (its last message does not follow the parent's)"
            )
    return ""
