"""Export a conversation to JSON (lossless, in the format of `export_format.py`) or
Markdown (readable); `import_reader.py` reads the JSON back.

Round trip: `export_json(import_json(export_json(c)))` equals `export_json(c)` except for
the conversation's and the messages' ids, which are new on import. One deliberate change:
a message exported while it was `streaming` is imported as `interrupted`, because nothing
will ever finish writing it.

The export is written message by message from one read snapshot, so a conversation of
any length moves out in flat memory.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any

from foldline.store.export_format import (
    FORMAT,
    FORMAT_VERSION,
    ExportedConversation,
    ExportedFold,
    ExportedMessage,
    ExportedModelCall,
    ExportedRange,
    ExportedSaidWords,
)
from foldline.store.markdown import export_markdown
from foldline.store.project_json import project_json
from foldline.store.records import (
    PARTS_ADAPTER,
    CompactionRecord,
    ConversationRecord,
    MessageRecord,
)

if TYPE_CHECKING:
    from foldline.store.store import Store

__all__ = ["export_json", "export_markdown", "json_bytes", "write_export"]


def _message_json(
    record: MessageRecord, pinned_at: str | None, leaf_fold_version: int | None
) -> ExportedMessage:
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
        parent_id=record.parent_id,
        leaf_fold_version=leaf_fold_version,
        continued=record.continued,
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
        person_words=[
            ExportedSaidWords(index=w.index, text=w.text, condensed=w.condensed)
            for w in state.person_words
        ],
        details_total=state.details_total,
        details_kept=state.details_kept,
        details_appended=state.details_appended,
        last_message_id=record.last_message_id,
    )


def _conversation_json(conversation: ConversationRecord) -> dict[str, Any]:
    # Built without validation: settings stored by an older version that did not check
    # them must still export (the import then names the bad knob).
    return ExportedConversation.model_construct(
        id=conversation.id,
        title=conversation.title,
        model=conversation.model,
        system_prompt=conversation.system_prompt,
        settings=conversation.settings,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        active_leaf_id=conversation.active_leaf_id,
        provider=conversation.provider,
    ).model_dump(mode="json", by_alias=True)


def _message_dict(record: MessageRecord, marks: tuple[str | None, int | None]) -> dict[str, Any]:
    exported = _message_json(record, *marks).model_dump(mode="json", by_alias=True)
    # Parts keep the engine's field names; None-valued optional fields are left out, as
    # in the database.
    exported["parts"] = PARTS_ADAPTER.dump_python(
        record.message.parts, mode="json", exclude_none=True
    )
    return exported


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON, as every export (a conversation's, a project's) is written."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _finite_costs(call: dict[str, Any]) -> dict[str, Any]:
    """A call's fields with a cost that is not a finite number (stored by an older
    version that imported `1e400`) written as unknown: JSON has no infinity, and the
    export must import again."""
    for key in ("cost", "saved"):
        value = call.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            call = {**call, key: None}
    return call


def write_export(
    store: Store, conversation_id: str, out: IO[bytes], *, with_project: bool = True
) -> None:
    """Write the JSON export to `out`, one message at a time, from one read snapshot:
    every branch, parents before children. A conversation in a project carries the
    project (settings, files, notes) unless `with_project` is False (a project export
    holds it once)."""
    with store.reading_conversation(conversation_id, every_branch=True) as (
        conversation,
        messages,
        compactions,
        marks,
    ):
        out.write(b'{"format":' + json_bytes(FORMAT))
        out.write(b',"formatVersion":' + json_bytes(FORMAT_VERSION))
        if with_project and conversation.project_id:
            project_id = conversation.project_id
            shared = project_json(
                store.get_project(project_id),
                store.list_project_files(project_id, content=True),
                store.list_project_notes(project_id),
            )
            out.write(b',"project":' + json_bytes(shared))
        out.write(b',"conversation":' + json_bytes(_conversation_json(conversation)))
        out.write(b',"messages":[')
        for position, record in enumerate(messages):
            # The export carries every file's bytes (in its part, base64), so an import
            # elsewhere restores them exactly.
            [message] = store.hydrate([record.message])
            if message is not record.message:
                record = replace(record, message=message)
            out.write(
                (b"," if position else b"")
                + json_bytes(_message_dict(record, marks.get(record.id, (None, None))))
            )
        folds = [_fold_json(c).model_dump(mode="json", by_alias=True) for c in compactions]
        out.write(b'],"compactions":' + json_bytes(folds))
        calls = [
            ExportedModelCall(**_finite_costs(vars(call))).model_dump(mode="json", by_alias=True)
            for call in store.list_calls(conversation_id)
        ]
        out.write(b',"modelCalls":' + json_bytes(calls) + b"}")


def export_json(store: Store, conversation_id: str) -> dict[str, Any]:
    """Everything about the conversation, losslessly, as JSON-ready Python values."""
    buffer = io.BytesIO()
    write_export(store, conversation_id, buffer)
    return json.loads(buffer.getvalue())
