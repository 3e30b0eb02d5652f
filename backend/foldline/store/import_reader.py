"""Import a conversation's JSON export (the format of `export_format.py`) as a new
conversation, with new ids.

The import reads one message at a time (`json_stream`) and writes them in batches inside
one transaction, so a conversation of any length moves in flat memory. Every number is
range-checked and the folds are checked against the history they describe before
anything is committed: a crafted file is refused with the field's name, never stored to
break the conversation later.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from foldline.core.json_values import MAX_DEPTH, MAX_TOOL_INPUT_CHARS, json_problem
from foldline.core.messages import Message
from foldline.core.state import CompactionState, SaidWords, SummarizedRange
from foldline.store.export_format import (
    FORMAT,
    READABLE_VERSIONS,
    ExportedConversation,
    ExportedFold,
    ExportedMessage,
    ExportedModelCall,
    ExportSchema,
    check_timestamp,
)
from foldline.store.import_files import checked_parts
from foldline.store.json_stream import JsonReader
from foldline.store.project_json import ExportedProject, join_or_create, read_project
from foldline.store.records import CompactionRecord, ConversationRecord, Marks, MessageRecord
from foldline.store.usage import ModelCall

if TYPE_CHECKING:
    from foldline.store.importing import ConversationImport
    from foldline.store.store import Store

MESSAGE_BATCH = 500
"""Messages written per statement during an import."""


def _describe(error: ValidationError, where: str) -> str:
    lines = []
    for item in error.errors()[:5]:
        path = ".".join(str(step) for step in (*where.split("."), *item["loc"]) if step != "")
        lines.append(f"{path or '(document)'}: {item['msg']}")
    more = error.error_count() - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return "invalid Foldline export: " + "; ".join(lines)


def _validated(schema: type[ExportSchema], data: Any, where: str) -> Any:
    try:
        return schema.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as error:
        raise ValueError(_describe(error, where)) from None


def _check_folds(folds: list[ExportedFold], count: int, version: int) -> None:
    """What the field types cannot say: each fold agrees with the history it describes
    (a range inside it, in order, ending where the model's view starts), comes after its
    parent, names its last message when it folded any (version 2: which branch it
    belongs to), and at most one is current."""
    by_version: dict[int, ExportedFold] = {}
    for position, fold in enumerate(folds):
        where = f"compactions[{position}]"
        span = fold.summarized_range
        if version >= 2 and fold.last_message_id is None and fold.api_start_index > 0:
            # Without it a fold would apply to every branch, even one it never folded.
            # (A hand-off's first fold starts at 0: it folded nothing here, and does
            # apply to every branch.)
            raise ValueError(
                f"{where}: lastMessageId is required in formatVersion 2 when apiStartIndex > 0"
            )
        if fold.version in by_version:
            raise ValueError(f"{where}: version {fold.version} appears twice")
        parent = by_version.get(fold.parent_version)
        if fold.parent_version != 0 and parent is None:
            raise ValueError(
                f"{where}: parentVersion {fold.parent_version} must be 0 or an earlier "
                f"version listed before it"
            )
        if fold.api_start_index > count:
            raise ValueError(
                f"{where}: apiStartIndex {fold.api_start_index} is past the {count} messages"
            )
        if not span.from_index <= span.to_index <= count:
            raise ValueError(
                f"{where}.summarizedRange: fromIndex {span.from_index} and toIndex "
                f"{span.to_index} must be in order and within the {count} messages"
            )
        if span.message_count != span.to_index - span.from_index:
            raise ValueError(
                f"{where}.summarizedRange.messageCount: {span.message_count} is not "
                f"toIndex - fromIndex ({span.to_index - span.from_index})"
            )
        if fold.api_start_index != span.to_index:
            raise ValueError(
                f"{where}: apiStartIndex {fold.api_start_index} must equal "
                f"summarizedRange.toIndex {span.to_index} (the view starts where the fold ends)"
            )
        if parent is not None and (
            fold.version <= parent.version or fold.api_start_index < parent.api_start_index
        ):
            raise ValueError(
                f"{where}: a child fold (version {fold.version}) must come after its parent "
                f"(version {parent.version}) in number and in the history"
            )
        check_timestamp(fold.compacted_at)
        by_version[fold.version] = fold
    current = [fold.version for fold in folds if fold.current]
    if len(current) > 1:
        raise ValueError(f"several fold versions are marked current: {current}")


def _message_record(message: ExportedMessage, conversation_id: str) -> MessageRecord:
    return MessageRecord(
        id=message.id,
        conversation_id=conversation_id,
        seq=message.index,
        message=Message(role=message.role, parts=tuple(message.parts)),
        status="interrupted" if message.status == "streaming" else message.status,
        usage=message.usage,
        token_count=message.token_count,
        created_at=message.created_at,
        updated_at=message.updated_at,
        error=message.error,
        parent_id=message.parent_id,
        continued=message.continued,
    )


def _fold_record(fold: ExportedFold) -> CompactionRecord:
    span = fold.summarized_range
    return CompactionRecord(
        state=CompactionState(
            version=fold.version,
            compacted_at=fold.compacted_at,
            summary_message=fold.summary_message,
            api_start_index=fold.api_start_index,
            summarized_range=SummarizedRange(
                from_index=span.from_index,
                to_index=span.to_index,
                message_count=span.message_count,
            ),
            strategy=fold.strategy,
            trigger=fold.trigger,
            tokens_before=fold.tokens_before,
            tokens_after=fold.tokens_after,
            model=fold.model,
            degraded=fold.degraded,
            carried_details=tuple(fold.carried_details),
            person_words=tuple(
                SaidWords(index=w.index, text=w.text, condensed=w.condensed)
                for w in fold.person_words
            ),
            details_total=fold.details_total,
            details_kept=fold.details_kept,
            details_appended=fold.details_appended,
        ),
        is_current=fold.current,
        parent_version=fold.parent_version,
        last_message_id=fold.last_message_id,
    )


def _messages(
    reader: JsonReader,
    conversation_id: str,
    marks: Marks,
    version: int,
) -> Iterator[MessageRecord]:
    """The messages, validated one at a time; pins and remembered fold pointers are
    collected into `marks` (exported id -> (pinned_at, leaf_fold_version))."""
    for position, item in enumerate(reader.array_items()):
        _check_message_values(item, f"messages[{position}]")
        message = _validated(ExportedMessage, item, f"messages.{position}")
        parts = checked_parts(message.parts, f"messages[{position}]")
        if parts is not message.parts:
            message = message.model_copy(update={"parts": parts})
        if version == 1 and message.index != position:
            raise ValueError(
                f"messages[{position}].index is {message.index}; messages must be listed "
                f"in display order with index 0, 1, 2..."
            )
        if message.pinned_at is not None or message.leaf_fold_version is not None:
            marks[message.id] = (message.pinned_at, message.leaf_fold_version)
        yield _message_record(message, conversation_id)


def _check_values(value: Any, where: str) -> None:
    """Every value of a section can be stored and served (`json_problem`): valid
    Unicode, finite numbers, nothing nested past what a tool call's arguments may be (a
    message nests them three levels down)."""
    problem = json_problem(value, max_depth=MAX_DEPTH + 3)
    if problem:
        raise ValueError(f"invalid Foldline export: {where}: the value {problem}")


MAX_PART_CHARS = 4 << 20
"""The longest text or tool output an imported message may hold (what the model reads of
it is counted, and a 50-million-character string took minutes): several times the
longest answer a model writes or message a person sends. A tool's full output, kept
beside its truncated one and never counted, may be as long as the reader allows."""


def _check_size(value: Any, where: str) -> None:
    """A conversation's row or one fold: its strings (the system prompt, a summary) are
    read by the model on every turn, so they are held to what one message may hold."""
    problem = json_problem(value, max_depth=MAX_DEPTH + 3, max_chars=MAX_PART_CHARS)
    if problem:
        raise ValueError(f"invalid Foldline export: {where}: the value {problem}")


def _check_message_values(item: Any, where: str) -> None:
    """What a message's types cannot say: every value can be stored and served
    (`json_problem`: tool arguments nested at most `MAX_DEPTH` deep, no lone surrogate,
    finite numbers), and what the model reads is of a length it can count."""
    _check_values(item, where)
    parts = item.get("parts") if isinstance(item, dict) else None
    for number, part in enumerate(parts if isinstance(parts, list) else ()):
        if not isinstance(part, dict):
            continue
        for key in ("text", "output"):
            value = part.get(key)
            if isinstance(value, str) and len(value) > MAX_PART_CHARS:
                raise ValueError(
                    f"invalid Foldline export: {where}.parts[{number}].{key}: longer than "
                    f"{MAX_PART_CHARS:,} characters"
                )
        arguments = part.get("input")
        problem = json_problem(arguments, max_chars=MAX_TOOL_INPUT_CHARS)
        if isinstance(arguments, dict) and problem:
            raise ValueError(f"invalid Foldline export: {where}.parts[{number}].input: {problem}")


def _batches(records: Iterable[MessageRecord]) -> Iterator[list[MessageRecord]]:
    batch: list[MessageRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) == MESSAGE_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


_KEYS = ("format", "formatVersion", "conversation", "messages", "compactions")
_OPTIONAL_KEYS = ("modelCalls", "project")
"""`modelCalls` is absent from exports made before usage was stored; `project` from
conversations in no project."""


def _check_key(key: str, seen: dict[str, Any]) -> None:
    """A top-level key of an export: known, once, and in the order Foldline writes."""
    if key not in _KEYS and key not in _OPTIONAL_KEYS:
        raise ValueError(f"invalid Foldline export: {key}: extra inputs are not permitted")
    if key in seen:
        raise ValueError(f"invalid Foldline export: {key} appears twice")
    if key in ("conversation", "messages") and set(seen) < {"format", "formatVersion"}:
        missing = {"format", "formatVersion"} - set(seen)
        raise ValueError(
            f"not a Foldline conversation export ({', '.join(sorted(missing))} must "
            f"come before {key})"
        )


def _check_header(key: str, value: Any) -> None:
    """`format` and `formatVersion`: this format, in a version this Foldline reads."""
    if key == "format" and value != FORMAT:
        raise ValueError(f'not a Foldline conversation export ("format" must be "{FORMAT}")')
    if key == "formatVersion" and (type(value) is not int or value not in READABLE_VERSIONS):
        raise ValueError(
            f"unsupported formatVersion {value!r}; this version of Foldline reads "
            f"{' and '.join(map(str, READABLE_VERSIONS))}"
        )


def _conversation_record(value: Any) -> tuple[ConversationRecord, str | None]:
    """The exported `conversation` as a record to import, and its active leaf's id."""
    _check_size(value, "conversation")
    exported = _validated(ExportedConversation, value, "conversation")
    record = ConversationRecord(
        id=exported.id,
        title=exported.title,
        model=exported.model,
        system_prompt=exported.system_prompt,
        settings=exported.settings,
        created_at=exported.created_at,
        updated_at=exported.updated_at,
        message_count=0,
        provider=exported.provider,
    )
    return record, exported.active_leaf_id


def _model_calls(value: Any) -> list[ExportedModelCall]:
    if not isinstance(value, list):
        raise ValueError("invalid Foldline export: modelCalls must be a list")
    return [
        _validated(ExportedModelCall, item, f"modelCalls.{position}")
        for position, item in enumerate(value)
    ]


def _folds(value: Any) -> list[ExportedFold]:
    if not isinstance(value, list):
        raise ValueError("invalid Foldline export: compactions must be a list")
    for position, item in enumerate(value):
        _check_size(item, f"compactions[{position}]")
    return [
        _validated(ExportedFold, item, f"compactions.{position}")
        for position, item in enumerate(value)
    ]


def _import_messages(
    reader: JsonReader, writer: ConversationImport | None, marks: Marks, version: int
) -> None:
    """The `messages` list, read one message at a time and written in batches."""
    if writer is None:
        raise ValueError("invalid Foldline export: conversation must come before messages")
    if reader.peek() != "[":
        raise ValueError("invalid Foldline export: messages must be a list")
    for batch in _batches(_messages(reader, writer.record.id, marks, version)):
        writer.add_messages(batch)


def import_stream(
    store: Store, stream: IO[bytes] | JsonReader, *, project_id: str | None = None
) -> ConversationRecord:
    """Create a new conversation (new ids) from a JSON export read from `stream`.

    With `project_id`, the conversation goes into that project (a project import) and a
    `project` object in the document is ignored; without, a `project` object (which must
    come before `conversation`) puts it in the project with that id, created from the
    object when there is none here.

    Reads one message at a time and writes them in batches inside one transaction, so
    memory stays flat whatever the length; nothing is committed unless the whole
    document is valid. `format`, `formatVersion` and `conversation` must come before
    `messages` (as Foldline writes them). Raises `InvalidJson` for bytes that are not
    JSON and ValueError naming the field for a document that is not a valid export.
    """
    # A reader is a conversation inside a larger document (a project export): it is read
    # where the reader stands, and what follows it is the caller's.
    whole = not isinstance(stream, JsonReader)
    reader = JsonReader(stream) if whole else stream
    if reader.peek() != "{":
        raise ValueError("a Foldline export is a JSON object")
    seen: dict[str, Any] = {}
    folds: list[ExportedFold] = []
    calls: list[ExportedModelCall] = []
    marks: Marks = {}
    active_leaf: str | None = None
    project: ExportedProject | None = None
    with ExitStack() as transaction:
        writer = None
        for key in reader.object_keys():
            _check_key(key, seen)
            if key == "messages":
                _import_messages(reader, writer, marks, seen["formatVersion"])
                seen[key] = True
                continue
            if key == "project":
                if writer is not None and project_id is None:
                    raise ValueError(
                        "invalid Foldline export: project must come before conversation"
                    )
                # Read a piece at a time (its files can be large); checked, and ignored in
                # a project import (the conversation joins the project being imported).
                exported = read_project(reader)
                project = exported if project_id is None else None
                seen[key] = True
                continue
            value = reader.value()
            _check_values(value, key)
            seen[key] = value
            _check_header(key, value)
            if key == "conversation":
                record, active_leaf = _conversation_record(value)
                join = None
                if project_id is not None:
                    record = replace(record, project_id=project_id)
                elif project is not None:
                    join = partial(join_or_create, exported=project)
                writer = transaction.enter_context(store.import_conversation(record, join))
            if key == "modelCalls":
                calls = _model_calls(value)
            if key == "compactions":
                folds = _folds(value)
        if whole:
            reader.end()
        missing = [key for key in _KEYS if key not in seen]
        if missing or writer is None:
            raise ValueError(f"invalid Foldline export: missing {', '.join(missing)}")
        _check_folds(folds, writer.message_count, seen["formatVersion"])
        record = writer.finish([_fold_record(fold) for fold in folds], marks, active_leaf)
    # Calls keep their tokens, cost and fold; their link to a message (whose id is new)
    # is not kept.
    store.record_calls(
        record.id,
        [ModelCall(**{**call.model_dump(), "message_id": None}) for call in calls],
    )
    return record


def import_json(store: Store, data: Any) -> ConversationRecord:
    """`import_stream` for a document already in memory (tests, small files)."""
    return import_stream(store, io.BytesIO(json.dumps(data).encode("utf-8")))
