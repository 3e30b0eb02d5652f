"""Export and import of a whole project: its settings, files, notes and conversations.

A project export is `{"format": "foldline.project", "formatVersion": 1, "project": {...},
"conversations": [...]}`: the `project` object of `project_json.py`, then each
conversation as a complete conversation export (see `export.py`).

A project import creates a new project (under the exported id when it is free here, so
conversations exported from it alone later join it) and imports every conversation
into it, one at a time, each read as a stream. The project and its conversations stay
hidden (`projects.importing`) until the last conversation is written, then appear
together. When any part of the document is invalid, what was already written is deleted
again; an import cut short by a crash is deleted when the store opens next, so nothing
half-imported remains.
"""

from __future__ import annotations

import sqlite3
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from foldline.store.export import json_bytes, write_export
from foldline.store.import_reader import import_stream
from foldline.store.importing import finish_project_import
from foldline.store.json_stream import JsonReader
from foldline.store.project_json import (
    ExportedProject,
    project_json,
    read_project,
    write_project,
)
from foldline.store.records import new_id

if TYPE_CHECKING:
    from foldline.store.store import Store

PROJECT_FORMAT = "foldline.project"
PROJECT_FORMAT_VERSION = 1


def write_project_export(store: Store, project_id: str, out: IO[bytes]) -> None:
    """The project export: its settings, files and notes, then each conversation's full
    export (written one at a time, each from its own read snapshot)."""
    project = store.get_project(project_id)
    files = store.list_project_files(project_id, content=True)
    shared = project_json(project, files, store.list_project_notes(project_id))
    out.write(b'{"format":' + json_bytes(PROJECT_FORMAT))
    out.write(b',"formatVersion":' + json_bytes(PROJECT_FORMAT_VERSION))
    out.write(b',"project":' + json_bytes(shared))
    out.write(b',"conversations":[')
    for position, conversation_id in enumerate(store.project_conversation_ids(project_id)):
        out.write(b"," if position else b"")
        write_export(store, conversation_id, out, with_project=False)
    out.write(b"]}")


def _new_project(conn: sqlite3.Connection, now: str, *, exported: ExportedProject) -> str:
    """Write the exported project: under its own id when that is free here, else a new one."""
    taken = conn.execute("SELECT 1 FROM projects WHERE id = ?", (exported.id,)).fetchone()
    project_id = new_id() if taken else exported.id
    write_project(conn, exported, project_id, now)
    # Hidden, with every conversation written into it, until the import completes.
    conn.execute("UPDATE projects SET importing = 1 WHERE id = ?", (project_id,))
    return project_id


def _fail(message: str) -> ValueError:
    return ValueError(f"invalid Foldline project export: {message}")


def _check_header(key: str, value: Any) -> None:
    """`format` and `formatVersion`: a project export in the version this one reads."""
    if key == "format" and value != PROJECT_FORMAT:
        raise ValueError(f'not a Foldline project export ("format" must be "{PROJECT_FORMAT}")')
    if key == "formatVersion" and (type(value) is not int or value != PROJECT_FORMAT_VERSION):
        raise ValueError(f"unsupported project formatVersion {value!r}; this version reads 1")


def _import_conversations(
    store: Store, reader: JsonReader, project_id: str | None, created: list[str]
) -> None:
    """The `conversations` list into the project; each id is added to `created` as soon
    as it is written (so a later failure deletes it)."""
    if project_id is None:
        raise _fail("project must come before conversations")
    if reader.peek() != "[":
        raise _fail("conversations must be a list")
    # Each conversation is read from the document as a stream, like a conversation export
    # of its own: memory stays flat whatever its length.
    for position in reader.array_positions():
        try:
            record = import_stream(store, reader, project_id=project_id)
        except ValueError as error:
            raise _fail(f"conversations.{position}: {error}") from None
        created.append(record.id)


def import_project(store: Store, stream: IO[bytes]) -> tuple[str, list[str]]:
    """Create the project and its conversations: (project id, conversation ids).
    ValueError naming the field for an invalid document; then nothing stays written."""
    reader = JsonReader(stream)
    if reader.peek() != "{":
        raise ValueError("a Foldline project export is a JSON object")
    project_id: str | None = None
    created: list[str] = []
    seen: set[str] = set()
    try:
        for key in reader.object_keys():
            if key in seen:
                raise _fail(f"{key} appears twice")
            seen.add(key)
            if key not in ("format", "formatVersion") and {"format", "formatVersion"} - seen:
                raise ValueError("not a Foldline project export (format must come first)")
            if key == "conversations":
                _import_conversations(store, reader, project_id, created)
                continue
            if key == "project":
                exported = read_project(reader)
                project_id = store.in_write_transaction(partial(_new_project, exported=exported))
                continue
            value = reader.value()
            if key in ("format", "formatVersion"):
                _check_header(key, value)
            else:
                raise _fail(f"{key}: extra inputs are not permitted")
        reader.end()
        if project_id is None or "conversations" not in seen:
            raise _fail("missing project or conversations")
        shown = project_id
        store.in_write_transaction(lambda conn, _now: finish_project_import(conn, shown))
    except BaseException:
        # Everything written is still hidden; a crash here leaves it for the next start.
        if project_id is not None:
            store.discard_project_import(project_id)
        raise
    return project_id, created
