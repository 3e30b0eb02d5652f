"""What the store hands out: immutable records, the errors it raises, and row decoding.

Records wrap the engine's pure values (`Message`, `CompactionState`) with the identity
the store owns (ids, sequence numbers, timestamps, status). They are frozen so a caller
can keep one across threads without copying.
"""

from __future__ import annotations

import errno
import json
import re
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import TypeAdapter

from foldline.core.json_values import json_problem, storable_tool_call, without_lone_surrogates
from foldline.core.messages import AttachmentPart, Message, Part, TextPart
from foldline.core.state import CompactionState, SaidWords, SummarizedRange
from foldline.store.decoded_messages import DecodedMessages

MessageStatus = Literal["complete", "streaming", "interrupted", "error"]
MESSAGE_STATUSES: frozenset[str] = frozenset(get_args(MessageStatus))

# One adapter for the parts column: validating a tuple of parts directly avoids wrapping
# the JSON in a fake message object on every read.
PARTS_ADAPTER: TypeAdapter[tuple[Part, ...]] = TypeAdapter(tuple[Part, ...])
SAID_WORDS_ADAPTER: TypeAdapter[tuple[SaidWords, ...]] = TypeAdapter(tuple[SaidWords, ...])
"""The person's words kept by a fold, as stored in `compactions.person_words`."""


class UnstorableValue(ValueError):
    """A free-form value (settings, usage) that could not be stored and read back; the
    message names the field and the reason."""


def stored_json(value: Any, what: str) -> str:
    """`value` as the JSON text of its column, after checking that it is a value every
    later read can serve (`json_problem`) and that the text reads back as the same value.
    Raises `UnstorableValue` otherwise, before anything is written."""
    problem = json_problem(value)
    if problem:
        raise UnstorableValue(f"{what}: {problem}")
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    if json.loads(text) != value:
        raise UnstorableValue(f"{what}: does not read back as written")
    return text


READ_DEPTH = 128
"""Reads accept deeper values than writes (`MAX_DEPTH`): a row an older version wrote a
little deeper still serves (the serializer stops at 255), rather than being set aside."""


def readable_json(text: str | None) -> tuple[Any, bool]:
    """A stored free-form JSON column read back: (value, True), or (None, False) when the
    row holds something no answer could carry (stored by an older version, or edited by
    hand); the caller then serves it as absent with a notice instead of failing."""
    if text is None:
        return None, True
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, False
    if _PLAIN.match(text) and text.count("[") + text.count("{") <= READ_DEPTH:
        # The common row, read on every message load: without a surrogate escape or a
        # non-finite constant, and with too few brackets to nest too deep, the walk
        # below cannot find anything.
        return value, True
    return (value, True) if not json_problem(value, max_depth=READ_DEPTH) else (None, False)


_PLAIN = re.compile(r"(?![\s\S]*(?:\\u[dD][89a-fA-F]|Infinity|NaN))")
"""Matches (at the start) a JSON text holding no surrogate escape and no `Infinity` or
`NaN` (which Python's encoder writes for non-finite floats)."""


class NotFound(LookupError):
    """An unknown conversation or message id; the message names which one."""


CORRUPTION_CODES = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})


class CorruptDatabase(Exception):
    """The database file is damaged; the message names it and the way forward."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            f"the database {path} is damaged ({detail}). Nothing was changed. Run "
            f"`foldline doctor --data-dir {path.parent}` to check it, keep a copy and "
            "salvage what can be read into a new file."
        )
        self.path = path


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """True for a damaged file (not for a locked, read-only or full one)."""
    return getattr(error, "sqlite_errorname", "") in CORRUPTION_CODES


DISK_FULL_MESSAGE = (
    "The disk is full: Foldline could not save this change, and nothing of it was "
    "written. Free some space, then try again; everything saved before is intact."
)


def is_disk_full(error: BaseException) -> bool:
    """SQLite's "database or disk is full", or the system's "no space left on device".
    Every write is one transaction, so a full disk loses the change, never half of it."""
    if isinstance(error, sqlite3.OperationalError):
        return getattr(error, "sqlite_errorname", "") == "SQLITE_FULL"
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


class ConcurrentFold(Exception):
    """The fold changed since the caller read it (optimistic version check failed).

    The caller reloads the window, recomputes its fold and tries again; two folds are
    never interleaved.
    """

    def __init__(self, conversation_id: str, expected_version: int, actual_version: int):
        super().__init__(
            f"conversation {conversation_id}: the fold was planned on version "
            f"{expected_version} but version {actual_version} is current now"
        )
        self.conversation_id = conversation_id
        self.expected_version = expected_version
        self.actual_version = actual_version


@dataclass(frozen=True)
class ConversationRecord:
    id: str
    title: str
    model: str | None
    system_prompt: str
    settings: dict[str, Any]
    created_at: str
    updated_at: str
    message_count: int
    """Messages on the active path (the display history's length)."""
    active_leaf_id: str | None = None
    """The last message of the active path (None: no message yet)."""
    project_id: str | None = None
    """The project the conversation belongs to (None: no project)."""
    settings_unreadable: bool = False
    """The stored settings could not be read back (see `readable_json`): `settings` is
    then empty, and `foldline doctor` resets the row."""
    has_other_versions: bool = False
    """Some message is off the active path (an edit or a regeneration made versions):
    the conversation holds more than `message_count` messages."""
    provider: str | None = None
    """The configured provider serving `model` (None: the one the configuration picks)."""


@dataclass(frozen=True)
class MessageRecord:
    id: str
    conversation_id: str
    seq: int
    message: Message
    status: MessageStatus
    usage: dict[str, Any] | None
    token_count: int | None
    created_at: str
    updated_at: str
    error: str | None
    continued: bool = False
    """Continue extended this answer in place after a stop or an error."""
    parent_id: str | None = None
    """The message this one follows in the tree (None for a first message)."""


@dataclass(frozen=True)
class SearchHit:
    """Where a search matched in one conversation: a message on any branch."""

    seq: int
    snippet: str
    message_id: str
    on_active_path: bool
    """False when the message is on a branch the person is not on now."""
    match_count: int = 1
    """How many messages of the conversation match (every branch)."""


@dataclass(frozen=True)
class PinRecord:
    """A pinned message: its id, display index, content and when it was pinned."""

    message_id: str
    seq: int
    message: Message
    pinned_at: str


@dataclass(frozen=True)
class CompactionRecord:
    state: CompactionState
    is_current: bool
    parent_version: int = 0
    """The version that was current when this one was committed (0 = no fold); undoing
    this version makes that one current again."""
    last_message_id: str | None = None
    """The last message the fold summarized: it applies to the paths through it."""


def new_id() -> str:
    """A stable public id (32 hex digits) for a conversation or a message."""
    return uuid.uuid4().hex


def utc_timestamp(moment: datetime) -> str:
    """ISO-8601 in UTC with microseconds and a `Z`: fixed width, so text order is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dump_parts(message: Message) -> str:
    # None-valued optional fields are left out: they are the defaults, so reading them
    # back gives an equal message, and the row is smaller. A stored file's bytes (an
    # attachment with a sha256) live in the `attachments` table, not in the row; write
    # through `attachments.parts_json`, which saves them first.
    parts = tuple(
        part.model_copy(update={"data_base64": None})
        if isinstance(part, AttachmentPart) and part.sha256
        else part
        for part in message.parts
    )
    return PARTS_ADAPTER.dump_json(parts, exclude_none=True).decode()


UNREADABLE_PARTS = (
    "[This message could not be read back from the database; `foldline doctor` repairs it.]"
)


DECODED_MESSAGES = DecodedMessages()
"""The process's one cache of decoded messages (keyed by their stored text: see
`decoded_messages`); every row decoded by `load_message` goes through it."""


def load_message(role: str, parts_json: str) -> Message:
    return DECODED_MESSAGES.get(role, parts_json, lambda: decode_message(role, parts_json))


def decode_message(role: str, parts_json: str) -> Message:
    """A message from its stored role and parts text, decoded afresh."""
    try:
        parts = PARTS_ADAPTER.validate_json(parts_json)
    except ValueError:
        parts = _mended_parts(parts_json)
    return Message(role=role, parts=parts)  # type: ignore[arg-type]


def _mended_parts(parts_json: str) -> tuple[Part, ...]:
    """The parts of a row the fast parser refused (tool arguments nested past its limit,
    stored by an older version), with each unreadable tool input replaced the way ingest
    replaces it now; a row that still cannot be read becomes one text part saying so."""
    try:
        # Through text once more so that lone surrogates (escaped in the row) are mended.
        text = json.dumps(json.loads(parts_json), ensure_ascii=False)
        raw = json.loads(without_lone_surrogates(text))
    except (ValueError, RecursionError):
        raw = None
    if isinstance(raw, list):
        mended = [
            {**part, "input": storable_tool_call("", "", part["input"]).input}
            if isinstance(part, dict) and isinstance(part.get("input"), dict)
            else part
            for part in raw
        ]
        try:
            return PARTS_ADAPTER.validate_python(mended)
        except (ValueError, RecursionError):
            pass
    return (TextPart(text=UNREADABLE_PARTS),)


def dump_json_or_none(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


# The column lists are spelled out once so that every SELECT and every decoder agree on
# the order; `row[i]` indexing is much faster than building dicts on hot paths.
CONVERSATION_COLUMNS = (
    "c.id, c.title, c.model, c.system_prompt, c.settings, c.created_at, c.updated_at, "
    "(SELECT coalesce(max(l.path_last) + 1, 0) FROM lanes AS l "
    "WHERE l.conversation_id = c.id AND l.path_last IS NOT NULL), c.active_leaf_id, c.project_id, "
    # A second lane means an edit or a regeneration made another version somewhere.
    "(SELECT count(*) > 1 FROM lanes AS o WHERE o.conversation_id = c.id), c.provider"
)

# The active path as a join: every lane on it (few rows) and, through the index of
# messages by (lane, seq), its messages up to where the path leaves the lane. Select
# with `PATH_MESSAGE_COLUMNS` and filter with `l.conversation_id = ? AND l.path_last IS
# NOT NULL` (the partial index `lanes_on_path`) and bounds on `m.seq`.
PATH_MESSAGES = "lanes AS l JOIN messages AS m ON m.lane = l.lane AND m.seq <= l.path_last"
ON_PATH_FILTER = "l.conversation_id = ? AND l.path_last IS NOT NULL"


def on_path_sql(alias: str) -> str:
    """An SQL expression true (1) when the message row `alias` is on the active path."""
    return (
        f"({alias}.seq <= coalesce((SELECT l.path_last FROM lanes AS l "
        f"WHERE l.lane = {alias}.lane), -1))"
    )


# Unqualified, so the same list serves SELECTs and `UPDATE ... RETURNING`.
MESSAGE_COLUMNS = (
    "id, conversation_id, seq, role, parts, status, usage, token_count, created_at, "
    "updated_at, error, continued, parent_id"
)
PATH_MESSAGE_COLUMNS = ", ".join(f"m.{column.strip()}" for column in MESSAGE_COLUMNS.split(","))
"""`MESSAGE_COLUMNS` of the row `m` (the path's join has columns of the same names)."""

COMPACTION_COLUMNS = (
    "k.version, k.compacted_at, k.summary_message, k.api_start_index, k.from_index, "
    "k.to_index, k.message_count, k.strategy, k.trigger, k.tokens_before, k.tokens_after, "
    "k.model, k.degraded, k.parent_version, k.carried_details, k.details_total, "
    "k.details_kept, k.details_appended, k.last_message_id, k.person_words, "
    "k.summary_input_tokens, k.saving_turns"
)


def conversation_from_row(row: sqlite3.Row | tuple[Any, ...]) -> ConversationRecord:
    settings, readable = readable_json(row[4])
    readable = readable and isinstance(settings, dict)
    return ConversationRecord(
        id=row[0],
        title=row[1],
        model=row[2],
        system_prompt=row[3],
        settings=settings if readable else {},
        created_at=row[5],
        updated_at=row[6],
        message_count=row[7],
        active_leaf_id=row[8],
        project_id=row[9],
        settings_unreadable=not readable,
        has_other_versions=bool(row[10]),
        provider=row[11],
    )


def _readable_usage(text: str | None) -> dict[str, Any] | None:
    value, readable = readable_json(text)
    return value if readable and isinstance(value, dict) else None


def message_from_row(row: sqlite3.Row | tuple[Any, ...]) -> MessageRecord:
    return MessageRecord(
        id=row[0],
        conversation_id=row[1],
        seq=row[2],
        message=load_message(row[3], row[4]),
        status=row[5],
        usage=_readable_usage(row[6]),
        token_count=row[7],
        created_at=row[8],
        updated_at=row[9],
        error=row[10],
        continued=bool(row[11]),
        parent_id=row[12],
    )


def compaction_from_row(row: sqlite3.Row | tuple[Any, ...]) -> CompactionState:
    return CompactionState(
        version=row[0],
        compacted_at=row[1],
        summary_message=row[2],
        api_start_index=row[3],
        summarized_range=SummarizedRange(from_index=row[4], to_index=row[5], message_count=row[6]),
        strategy=row[7],
        trigger=row[8],
        tokens_before=row[9],
        tokens_after=row[10],
        model=row[11],
        degraded=bool(row[12]),
        carried_details=tuple(json.loads(row[14])),
        details_total=row[15],
        details_kept=row[16],
        details_appended=row[17],
        person_words=SAID_WORDS_ADAPTER.validate_json(row[19]),
        summary_input_tokens=row[20],
        saving_turns=row[21],
    )


def compaction_values(
    conversation_id: str,
    state: CompactionState,
    version: int,
    parent_version: int,
    last_message_id: str | None,
) -> tuple[Any, ...]:
    """Parameters for `INSERT INTO compactions` in the order of `COMPACTION_INSERT`."""
    return (
        conversation_id,
        version,
        parent_version,
        state.compacted_at,
        state.summary_message,
        state.api_start_index,
        state.summarized_range.from_index,
        state.summarized_range.to_index,
        state.summarized_range.message_count,
        state.strategy,
        state.trigger,
        state.tokens_before,
        state.tokens_after,
        state.model,
        int(state.degraded),
        json.dumps(list(state.carried_details), ensure_ascii=False),
        state.details_total,
        state.details_kept,
        state.details_appended,
        last_message_id,
        SAID_WORDS_ADAPTER.dump_json(state.person_words).decode(),
        state.summary_input_tokens,
        state.saving_turns,
    )


COMPACTION_INSERT = (
    "INSERT INTO compactions (conversation_id, version, parent_version, compacted_at, "
    "summary_message, api_start_index, from_index, to_index, message_count, strategy, "
    "trigger, tokens_before, tokens_after, model, degraded, carried_details, details_total, "
    "details_kept, details_appended, last_message_id, person_words, summary_input_tokens, "
    "saving_turns) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


Marks = dict[str, tuple[str | None, int | None]]
"""Per marked message id: (pinned_at, leaf_fold_version), what an export carries besides
the message itself (only the pinned messages and the leaves the person left)."""

ConversationRead = tuple[ConversationRecord, Iterator[MessageRecord], list[CompactionRecord], Marks]
"""A conversation's row, its messages one at a time, its folds and its marks."""
