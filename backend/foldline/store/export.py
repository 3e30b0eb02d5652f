"""Export a conversation to JSON (lossless) or Markdown (readable), and import the JSON.

The JSON format is a public contract (`"format": "foldline.conversation"`,
`"formatVersion": 1`): camelCase keys like the HTTP API, except inside `parts`, which are
the engine's own part values (`kind`, `call_id`, `is_error`, ...) so that a part
round-trips without translation. It is described by the pydantic models below, which
also validate an import before anything is written.

Round trip: `export_json(import_json(export_json(c)))` equals `export_json(c)` except for
the conversation's and the messages' ids, which are new on import. One deliberate change:
a message exported while it was `streaming` is imported as `interrupted`, because nothing
will ever finish writing it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from foldline.core.messages import Message, Part, Role
from foldline.core.state import CompactionState, Strategy, SummarizedRange, Trigger
from foldline.store.markdown import export_markdown
from foldline.store.records import (
    PARTS_ADAPTER,
    CompactionRecord,
    ConversationRecord,
    MessageRecord,
    MessageStatus,
)

if TYPE_CHECKING:
    from foldline.store.store import Store

__all__ = ["FORMAT", "FORMAT_VERSION", "export_json", "export_markdown", "import_json"]

FORMAT = "foldline.conversation"
FORMAT_VERSION = 1


class _Schema(BaseModel):
    # Strict and closed: an import with a misspelt or mistyped field is refused with its
    # path rather than half-understood.
    # Input is read by its camelCase aliases only; the export code builds instances by
    # field name.
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
    )


def _check_timestamp(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from None
    return value


class ExportedConversation(_Schema):
    id: str
    title: str
    model: str | None
    system_prompt: str
    settings: dict[str, Any]
    created_at: str
    updated_at: str

    check_timestamps = field_validator("created_at", "updated_at")(_check_timestamp)


class ExportedMessage(_Schema):
    id: str
    index: int = Field(ge=0)
    role: Role
    parts: list[Part] = Field(strict=False)
    status: MessageStatus
    usage: dict[str, Any] | None
    token_count: int | None
    error: str | None
    created_at: str
    updated_at: str
    pinned_at: str | None = None

    check_timestamps = field_validator("created_at", "updated_at")(_check_timestamp)

    @field_validator("pinned_at")
    @classmethod
    def _check_pinned_at(cls, value: str | None) -> str | None:
        return None if value is None else _check_timestamp(value)


class ExportedRange(_Schema):
    from_index: int = Field(ge=0)
    to_index: int = Field(ge=0)
    message_count: int = Field(ge=0)


class ExportedFold(_Schema):
    version: int = Field(ge=1)
    parent_version: int = Field(ge=0)
    current: bool
    compacted_at: str
    summary_message: str
    api_start_index: int = Field(ge=0)
    summarized_range: ExportedRange
    strategy: Strategy
    trigger: Trigger
    tokens_before: int
    tokens_after: int
    model: str | None
    degraded: bool
    carried_details: list[str] = Field(default_factory=list)
    details_total: int = Field(default=0, ge=0)
    details_kept: int = Field(default=0, ge=0)
    details_appended: int = Field(default=0, ge=0)


class ExportedDocument(_Schema):
    format: Literal["foldline.conversation"]
    format_version: Literal[1]
    conversation: ExportedConversation
    messages: list[ExportedMessage]
    compactions: list[ExportedFold]


def _message_json(record: MessageRecord, pinned_at: str | None) -> ExportedMessage:
    return ExportedMessage(
        id=record.id,
        index=record.seq,
        role=record.message.role,
        parts=list(record.message.parts),
        status=record.status,
        usage=record.usage,
        token_count=record.token_count,
        error=record.error,
        created_at=record.created_at,
        updated_at=record.updated_at,
        pinned_at=pinned_at,
    )


def _fold_json(record: CompactionRecord) -> ExportedFold:
    state = record.state
    return ExportedFold(
        version=state.version,
        parent_version=record.parent_version,
        current=record.is_current,
        compacted_at=state.compacted_at,
        summary_message=state.summary_message,
        api_start_index=state.api_start_index,
        summarized_range=ExportedRange(
            from_index=state.summarized_range.from_index,
            to_index=state.summarized_range.to_index,
            message_count=state.summarized_range.message_count,
        ),
        strategy=state.strategy,
        trigger=state.trigger,
        tokens_before=state.tokens_before,
        tokens_after=state.tokens_after,
        model=state.model,
        degraded=state.degraded,
        carried_details=list(state.carried_details),
        details_total=state.details_total,
        details_kept=state.details_kept,
        details_appended=state.details_appended,
    )


def export_json(store: Store, conversation_id: str) -> dict[str, Any]:
    """Everything about the conversation, losslessly, as JSON-ready Python values."""
    conversation, messages, compactions = store.read_conversation(conversation_id)
    pins = {pin.seq: pin.pinned_at for pin in store.list_pins(conversation_id)}
    document = ExportedDocument(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        conversation=ExportedConversation(
            id=conversation.id,
            title=conversation.title,
            model=conversation.model,
            system_prompt=conversation.system_prompt,
            settings=conversation.settings,
            created_at=conversation.created_at,
            updated_at=conversation.updated_at,
        ),
        messages=[_message_json(m, pins.get(m.seq)) for m in messages],
        compactions=[_fold_json(c) for c in compactions],
    )
    dumped = document.model_dump(mode="json", by_alias=True)
    # Parts keep the engine's field names; None-valued optional fields are left out, as
    # in the database.
    for exported, record in zip(dumped["messages"], messages, strict=True):
        exported["parts"] = PARTS_ADAPTER.dump_python(
            record.message.parts, mode="json", exclude_none=True
        )
    return dumped


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors()[:5]:
        where = ".".join(str(step) for step in item["loc"]) or "(document)"
        lines.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)


def _check_consistency(document: ExportedDocument) -> None:
    """What the field types cannot say: indices, version links, a single current fold."""
    count = len(document.messages)
    for position, message in enumerate(document.messages):
        if message.index != position:
            raise ValueError(
                f"messages[{position}].index is {message.index}; messages must be listed "
                f"in display order with index 0, 1, 2..."
            )
    versions: set[int] = set()
    for position, fold in enumerate(document.compactions):
        where = f"compactions[{position}]"
        if fold.version in versions:
            raise ValueError(f"{where}: version {fold.version} appears twice")
        if fold.parent_version != 0 and fold.parent_version not in versions:
            raise ValueError(
                f"{where}: parentVersion {fold.parent_version} must be 0 or an earlier "
                f"version listed before it"
            )
        if fold.api_start_index > count:
            raise ValueError(
                f"{where}: apiStartIndex {fold.api_start_index} is past the {count} messages"
            )
        _check_timestamp(fold.compacted_at)
        versions.add(fold.version)
    current = [fold.version for fold in document.compactions if fold.current]
    if len(current) > 1:
        raise ValueError(f"several fold versions are marked current: {current}")


def _parse(data: object) -> ExportedDocument:
    if not isinstance(data, dict):
        raise ValueError("a Foldline export is a JSON object")
    if data.get("format") != FORMAT:
        raise ValueError(f'not a Foldline conversation export ("format" must be "{FORMAT}")')
    if data.get("formatVersion") != FORMAT_VERSION:
        raise ValueError(
            f"unsupported formatVersion {data.get('formatVersion')!r}; "
            f"this version of Foldline reads {FORMAT_VERSION}"
        )
    try:
        document = ExportedDocument.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as error:
        raise ValueError(f"invalid Foldline export: {_describe(error)}") from None
    _check_consistency(document)
    return document


def import_json(store: Store, data: dict[str, Any]) -> ConversationRecord:
    """Create a new conversation (new ids) from an export; nothing is written if invalid.

    Raises ValueError naming the first problems found (field path and reason).
    """
    document = _parse(data)
    exported = document.conversation
    conversation = ConversationRecord(
        id=exported.id,
        title=exported.title,
        model=exported.model,
        system_prompt=exported.system_prompt,
        settings=exported.settings,
        created_at=exported.created_at,
        updated_at=exported.updated_at,
        message_count=len(document.messages),
    )
    messages = [
        MessageRecord(
            id=m.id,
            conversation_id=exported.id,
            seq=m.index,
            message=Message(role=m.role, parts=tuple(m.parts)),
            status="interrupted" if m.status == "streaming" else m.status,
            usage=m.usage,
            token_count=m.token_count,
            created_at=m.created_at,
            updated_at=m.updated_at,
            error=m.error,
        )
        for m in document.messages
    ]
    compactions = [
        CompactionRecord(
            state=CompactionState(
                version=f.version,
                compacted_at=f.compacted_at,
                summary_message=f.summary_message,
                api_start_index=f.api_start_index,
                summarized_range=SummarizedRange(
                    from_index=f.summarized_range.from_index,
                    to_index=f.summarized_range.to_index,
                    message_count=f.summarized_range.message_count,
                ),
                strategy=f.strategy,
                trigger=f.trigger,
                tokens_before=f.tokens_before,
                tokens_after=f.tokens_after,
                model=f.model,
                degraded=f.degraded,
                carried_details=tuple(f.carried_details),
                details_total=f.details_total,
                details_kept=f.details_kept,
                details_appended=f.details_appended,
            ),
            is_current=f.current,
            parent_version=f.parent_version,
        )
        for f in document.compactions
    ]
    record = store.restore_conversation(conversation, messages, compactions)
    pins = {m.index: m.pinned_at for m in document.messages if m.pinned_at is not None}
    if pins:
        store.restore_pins(record.id, pins)
    return record
