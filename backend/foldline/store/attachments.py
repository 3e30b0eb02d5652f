"""Attachment bytes: stored once by sha256, left out of message rows, put back when the
model's view (or an export) needs them.

A message row keeps each attachment part's name and metadata and its `sha256`; the
bytes live in the `attachments` table. `parts_json` is how every write of a message
stores its parts (the bytes first, then the light JSON), so no write path can drop a
file's bytes; `hydrate` fills `data_base64` back in for the messages the model reads.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import sqlite3
from collections.abc import Iterable, Sequence

from foldline.core import base64_slices
from foldline.core.messages import AttachmentPart, Message
from foldline.store.records import ON_PATH_FILTER, PATH_MESSAGES, NotFound, dump_parts


def _stored_parts(message: Message) -> list[AttachmentPart]:
    return [
        part
        for part in message.parts
        if isinstance(part, AttachmentPart) and part.sha256 and part.data_base64
    ]


def file_bytes(text: str) -> bytes:
    """The bytes of a file's base64, a slice at a time (every upload path hands over
    strict base64); anything looser is decoded as before, in one call."""
    try:
        return base64_slices.decode(text)
    except (binascii.Error, ValueError):
        return base64.b64decode(text)


def parts_json(conn: sqlite3.Connection, message: Message, now: str) -> str:
    """The message's parts as stored: the bytes of its files saved (once), the JSON
    without them."""
    for part in _stored_parts(message):
        data = file_bytes(part.data_base64 or "")
        if hashlib.sha256(data).hexdigest() != part.sha256:
            # An edited export could pair other bytes with a known hash; since identical
            # files are stored once, that would change the file in every conversation.
            raise ValueError(f"attachment {part.name}: its bytes do not match its sha256")
        conn.execute(
            "INSERT OR IGNORE INTO attachments (sha256, media_type, size, data, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (part.sha256, part.media_type, len(data), data, now),
        )
    return dump_parts(message)


def hydrate(conn: sqlite3.Connection, messages: Sequence[Message]) -> list[Message]:
    """The messages with every attachment's bytes filled in (one query for all of them).
    A message without stored attachments is returned as the same object."""
    wanted = {
        part.sha256
        for message in messages
        for part in message.parts
        if isinstance(part, AttachmentPart) and part.sha256 and not part.data_base64
    }
    if not wanted:
        return list(messages)
    data = dict(_load(conn, wanted))
    out: list[Message] = []
    for message in messages:
        if not any(isinstance(p, AttachmentPart) and p.sha256 in data for p in message.parts):
            out.append(message)
            continue
        parts = tuple(
            part.model_copy(update={"data_base64": data[part.sha256]})
            if isinstance(part, AttachmentPart) and part.sha256 in data and not part.data_base64
            else part
            for part in message.parts
        )
        out.append(message.model_copy(update={"parts": parts}))
    return out


def _load(conn: sqlite3.Connection, hashes: Iterable[str]) -> Iterable[tuple[str, str]]:
    hashes = list(hashes)
    for start in range(0, len(hashes), 500):
        chunk = hashes[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for sha256, blob in conn.execute(
            f"SELECT sha256, data FROM attachments WHERE sha256 IN ({marks})", chunk
        ):
            yield sha256, base64_slices.encode(blob)


def attachment_bytes(conn: sqlite3.Connection, sha256: str) -> tuple[str, bytes]:
    """(media type, bytes) of a stored file; NotFound when no message stored it."""
    row = conn.execute(
        "SELECT media_type, data FROM attachments WHERE sha256 = ?", (sha256,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no attachment {sha256!r}")
    return row[0], bytes(row[1])


def conversation_holds(conn: sqlite3.Connection, conversation_id: str, sha256: str) -> bool:
    """Whether a message of the conversation (any branch) refers to these bytes: a file
    is served only in the conversation it was attached to."""
    row = conn.execute(
        "SELECT 1 FROM messages AS m, json_each(m.parts) AS part "
        "WHERE m.conversation_id = ? AND json_extract(part.value, '$.sha256') = ? LIMIT 1",
        (conversation_id, sha256),
    ).fetchone()
    return row is not None


def folded_file_names(
    conn: sqlite3.Connection, conversation_id: str, from_index: int, to_index: int
) -> list[str]:
    """The names of the person's files in the active path's messages `[from, to)`."""
    rows = conn.execute(
        f"SELECT json_extract(part.value, '$.name') FROM {PATH_MESSAGES}, "
        "json_each(m.parts) AS part "
        f"WHERE {ON_PATH_FILTER} AND m.seq >= ? AND m.seq < ? "
        "AND m.role = 'user' AND json_extract(part.value, '$.kind') = 'attachment' "
        "ORDER BY m.seq, part.key",
        (conversation_id, from_index, to_index),
    ).fetchall()
    return [row[0] for row in rows]


_FILE_HASHES = (
    "SELECT DISTINCT json_extract(part.value, '$.sha256') FROM messages AS m, "
    "json_each(m.parts) AS part WHERE json_extract(part.value, '$.kind') = 'attachment' "
    "AND json_extract(part.value, '$.sha256') IS NOT NULL"
)


def conversation_files(conn: sqlite3.Connection, conversation_id: str) -> set[str]:
    """The sha256s of the files a conversation's messages (every branch) hold."""
    rows = conn.execute(_FILE_HASHES + " AND m.conversation_id = ?", (conversation_id,))
    return {row[0] for row in rows}


def drop_unreferenced(conn: sqlite3.Connection, candidates: set[str]) -> None:
    """Delete the bytes of `candidates` that no message holds any more (after a
    conversation was deleted). One scan of the messages, only when there are candidates."""
    if not candidates:
        return
    held = {row[0] for row in conn.execute(_FILE_HASHES)}
    for sha256 in candidates - held:
        conn.execute("DELETE FROM attachments WHERE sha256 = ?", (sha256,))
