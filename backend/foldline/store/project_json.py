"""The `project` object of an export: a project's settings, files and notes.

It is what a project export carries (see `project_export.py`), and also what a
conversation export carries when the conversation belongs to a project, so that a
conversation imported on its own keeps everything the model saw with it: if no project
with that id exists here, the project is created from it (under the same id, so later
imports of its other conversations join it); if one does, the conversation joins it.
Files travel as base64 and are checked like an upload (the rules of a message's files;
a PDF's text is read again from its bytes).
"""

from __future__ import annotations

import sqlite3
from typing import Any, TypeVar

from pydantic import Field, PrivateAttr, ValidationError, field_validator

from foldline.core import base64_slices
from foldline.core.attachments import AttachmentRefused
from foldline.core.json_values import MAX_DEPTH, json_problem
from foldline.core.messages import AttachmentPart
from foldline.core.settings import InvalidSettings, check_conversation_settings
from foldline.store import projects
from foldline.store.export_format import ExportSchema, check_timestamp
from foldline.store.json_stream import JsonReader
from foldline.store.projects import ProjectFileRecord, ProjectNoteRecord, ProjectRecord
from foldline.store.records import NotFound, new_id
from foldline.uploads import IncomingFile, read_project_file

T = TypeVar("T", bound=ExportSchema)


class ExportedFile(ExportSchema):
    name: str = Field(min_length=1, max_length=255)
    media_type: str = Field(max_length=255)
    created_at: str
    data: str
    """base64 of the file's bytes."""

    check_timestamps = field_validator("created_at")(check_timestamp)


class ExportedNote(ExportSchema):
    title: str = Field(min_length=1)
    text: str = Field(min_length=1)
    created_at: str
    updated_at: str

    check_timestamps = field_validator("created_at", "updated_at")(check_timestamp)


class ExportedProject(ExportSchema):
    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    """Letters, digits, `-` and `_` only: the id goes into URL paths (`a/b` could never
    be opened or deleted)."""
    name: str = Field(min_length=1, max_length=200)
    instructions: str
    model: str | None
    settings: dict[str, Any]
    created_at: str
    updated_at: str
    files: list[ExportedFile] = Field(default_factory=list)
    notes: list[ExportedNote] = Field(default_factory=list)
    _checked_files: list[AttachmentPart] = PrivateAttr(default_factory=list)
    """The files as `read_project_file` checked them (set by `validated_project`, never
    read from the document)."""

    check_timestamps = field_validator("created_at", "updated_at")(check_timestamp)

    @field_validator("settings")
    @classmethod
    def _check_settings(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            check_conversation_settings(value)
        except InvalidSettings as error:
            raise ValueError(str(error)) from None
        return value


def project_json(
    project: ProjectRecord, files: list[ProjectFileRecord], notes: list[ProjectNoteRecord]
) -> dict[str, Any]:
    """The `project` object of an export (files with their content)."""
    return ExportedProject.model_construct(
        id=project.id,
        name=project.name,
        instructions=project.instructions,
        model=project.model,
        settings=project.settings,
        created_at=project.created_at,
        updated_at=project.updated_at,
        files=[
            ExportedFile.model_construct(
                name=f.name,
                media_type=f.media_type,
                created_at=f.created_at,
                data=base64_slices.encode(f.content or b""),
            )
            for f in files
        ],
        notes=[
            ExportedNote.model_construct(
                title=n.title, text=n.text, created_at=n.created_at, updated_at=n.updated_at
            )
            for n in notes
        ],
    ).model_dump(mode="json", by_alias=True)


def validated_project(value: Any, where: str = "project") -> ExportedProject:
    """The exported project, checked (fields, settings, every file by the upload rules) before
    anything is written; ValueError naming the field."""
    try:
        exported = ExportedProject.model_validate(value)
    except ValidationError as error:
        item = error.errors()[0]
        path = ".".join(str(step) for step in (where, *item["loc"]))
        raise ValueError(f"invalid Foldline export: {path}: {item['msg']}") from None
    exported._checked_files = [
        _checked_file(file, f"{where}.files.{position}")
        for position, file in enumerate(exported.files)
    ]
    return exported


def _validated(schema: type[T], value: Any, where: str) -> T:
    problem = json_problem(value, max_depth=MAX_DEPTH + 3)
    if problem:
        raise ValueError(f"invalid Foldline export: {where}: the value {problem}")
    try:
        return schema.model_validate(value)
    except ValidationError as error:
        item = error.errors()[0]
        path = ".".join(str(step) for step in (where, *item["loc"]))
        raise ValueError(f"invalid Foldline export: {path}: {item['msg']}") from None


def _list_start(reader: JsonReader, where: str) -> None:
    if reader.peek() != "[":
        raise ValueError(f"invalid Foldline export: {where}: Input should be a valid list")


def read_project(reader: JsonReader, where: str = "project") -> ExportedProject:
    """The `project` object where `reader` stands, read one piece at a time and checked
    like `validated_project`: each file is read, checked by the upload rules and kept as
    its checked bytes (its base64 text is let go) before the next is read, and each note
    on its own, so the object is never in memory whole (a 30 MB object once took 2 GB)."""
    if reader.peek() != "{":
        raise ValueError(f"invalid Foldline export: {where}: Input should be an object")
    fields: dict[str, Any] = {}
    files: list[ExportedFile] = []
    checked: list[AttachmentPart] = []
    notes: list[ExportedNote] = []
    seen: set[str] = set()
    for key in reader.object_keys():
        if key in seen:
            raise ValueError(f"invalid Foldline export: {where}.{key} appears twice")
        seen.add(key)
        if key == "files":
            _list_start(reader, f"{where}.files")
            for position in reader.array_positions():
                at = f"{where}.files.{position}"
                file = _validated(ExportedFile, reader.value(), at)
                checked.append(_checked_file(file, at))
                files.append(file.model_copy(update={"data": ""}))
        elif key == "notes":
            _list_start(reader, f"{where}.notes")
            for position in reader.array_positions():
                notes.append(_validated(ExportedNote, reader.value(), f"{where}.notes.{position}"))
        else:
            fields[key] = reader.value()
    exported = _validated(ExportedProject, fields, where)
    exported = exported.model_copy(update={"files": files, "notes": notes})
    exported._checked_files = checked
    return exported


def _checked_file(file: ExportedFile, where: str) -> AttachmentPart:
    try:
        return read_project_file(IncomingFile(file.name, file.media_type, file.data))
    except AttachmentRefused as error:
        raise ValueError(f"invalid Foldline export: {where}: {error}") from None


def write_project(
    conn: sqlite3.Connection, exported: ExportedProject, project_id: str, now: str
) -> None:
    """Insert the exported project under `project_id` with its files and notes."""
    projects.insert_project(
        conn,
        projects.ProjectRecord(
            project_id,
            exported.name,
            exported.instructions,
            exported.model,
            exported.settings,
            exported.created_at,
            now,
        ),
    )
    for file, part in zip(exported.files, exported._checked_files, strict=True):
        try:
            projects.insert_file(conn, project_id, part, file.created_at)
        except projects.DuplicateFile:
            continue  # the same bytes twice in one export: kept once
    for note in exported.notes:
        conn.execute(
            "INSERT INTO project_notes (id, project_id, title, text, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (new_id(), project_id, note.title, note.text, note.created_at, note.updated_at),
        )


def join_or_create(conn: sqlite3.Connection, now: str, *, exported: ExportedProject) -> str:
    """For a conversation imported on its own: the project with the exported id when it
    exists here, else that project created from the export."""
    try:
        projects.get_project(conn, exported.id)
    except NotFound:
        write_project(conn, exported, exported.id, now)
    return exported.id
