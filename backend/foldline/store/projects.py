"""Projects: groups of conversations sharing instructions, files and pinned notes.

A conversation belongs to at most one project (`conversations.project_id`). Deleting a
project never deletes a conversation by itself: `delete_project` moves them to "no
project" in the same transaction, and deleting them too is the caller's explicit,
separate choice. Each function below runs inside the caller's transaction, like
`queries`; `ProjectMethods` opens them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from foldline.core.messages import AttachmentPart
from foldline.store.attachments import file_bytes
from foldline.store.connection import ConnectionPool
from foldline.store.importing import delete_unfinished_project_imports
from foldline.store.records import NotFound, new_id

T = TypeVar("T")


class DuplicateFile(ValueError):
    """The project already holds a file with exactly these bytes."""


@dataclass(frozen=True)
class ProjectRecord:
    id: str
    name: str
    instructions: str
    model: str | None
    settings: dict[str, Any]
    created_at: str
    updated_at: str
    conversation_count: int = 0


@dataclass(frozen=True)
class ProjectFileRecord:
    """A project file's metadata; `text` (what the model reads) and `content` (the bytes
    as uploaded) are filled only when asked for."""

    id: str
    project_id: str
    name: str
    media_type: str
    size: int
    sha256: str
    pages: int | None
    created_at: str
    text: str | None = None
    content: bytes | None = None


@dataclass(frozen=True)
class ProjectNoteRecord:
    id: str
    project_id: str
    title: str
    text: str
    created_at: str
    updated_at: str


_PROJECT_COLUMNS = (
    "p.id, p.name, p.instructions, p.model, p.settings, p.created_at, p.updated_at, "
    "(SELECT count(*) FROM conversations AS c WHERE c.project_id = p.id AND c.importing = 0)"
)
_FILE_COLUMNS = "id, project_id, name, media_type, size, sha256, pages, created_at"
_NOTE_COLUMNS = "id, project_id, title, text, created_at, updated_at"


def _project(row: Sequence[Any]) -> ProjectRecord:
    return ProjectRecord(
        id=row[0],
        name=row[1],
        instructions=row[2],
        model=row[3],
        settings=json.loads(row[4]),
        created_at=row[5],
        updated_at=row[6],
        conversation_count=row[7],
    )


def _file_columns(*, text: bool, content: bool) -> str:
    return _FILE_COLUMNS + (", text" if text else ", NULL") + (", content" if content else ", NULL")


def _file(row: Sequence[Any]) -> ProjectFileRecord:
    return ProjectFileRecord(*row)


def _note(row: Sequence[Any]) -> ProjectNoteRecord:
    return ProjectNoteRecord(*row)


def get_project(conn: sqlite3.Connection, project_id: str) -> ProjectRecord:
    row = conn.execute(
        f"SELECT {_PROJECT_COLUMNS} FROM projects AS p WHERE p.id = ? AND p.importing = 0",
        (project_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no project with id {project_id!r}")
    return _project(row)


def insert_project(conn: sqlite3.Connection, record: ProjectRecord) -> None:
    conn.execute(
        "INSERT INTO projects (id, name, instructions, model, settings, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            record.id,
            record.name,
            record.instructions,
            record.model,
            json.dumps(record.settings, separators=(",", ":")),
            record.created_at,
            record.updated_at,
        ),
    )


def insert_file(
    conn: sqlite3.Connection, project_id: str, part: AttachmentPart, now: str
) -> ProjectFileRecord:
    """Store a checked upload (`foldline.uploads.read_project_file`): its bytes, its
    metadata and the text the model reads."""
    same = conn.execute(
        "SELECT name FROM project_files WHERE project_id = ? AND sha256 = ?",
        (project_id, part.sha256),
    ).fetchone()
    if same is not None:
        raise DuplicateFile(f"This project already holds the same file, named {same[0]!r}.")
    content = file_bytes(part.data_base64 or "")
    record = ProjectFileRecord(
        new_id(),
        project_id,
        part.name,
        part.media_type,
        len(content),
        part.sha256 or "",
        part.pages,
        now,
        text=part.text or "",
    )
    conn.execute(
        f"INSERT INTO project_files ({_FILE_COLUMNS}, text, content) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*(getattr(record, f) for f in _FILE_COLUMNS.split(", ")), record.text, content),
    )
    return record


def insert_note(
    conn: sqlite3.Connection, project_id: str, title: str, text: str, now: str
) -> ProjectNoteRecord:
    record = ProjectNoteRecord(new_id(), project_id, title, text, now, now)
    conn.execute(
        f"INSERT INTO project_notes ({_NOTE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        tuple(getattr(record, f) for f in _NOTE_COLUMNS.split(", ")),
    )
    return record


def _touch(conn: sqlite3.Connection, project_id: str, now: str) -> None:
    cursor = conn.execute("UPDATE projects SET updated_at = ? WHERE id = ?", (now, project_id))
    if cursor.rowcount == 0:
        raise NotFound(f"no project with id {project_id!r}")


class ProjectMethods:
    """The `Store`'s methods for projects (a base of `Store`, which owns the connection
    pool and the clock; kept here so the Store stays small)."""

    _pool: ConnectionPool

    def _now(self) -> str:
        raise NotImplementedError

    def create_project(
        self,
        *,
        name: str,
        instructions: str = "",
        model: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> ProjectRecord:
        now = self._now()
        record = ProjectRecord(new_id(), name, instructions, model, dict(settings or {}), now, now)
        with self._pool.write() as conn:
            insert_project(conn, record)
        return record

    def get_project(self, project_id: str) -> ProjectRecord:
        return get_project(self._pool.get().conn, project_id)

    def in_write_transaction(self, write: Callable[[sqlite3.Connection, str], T]) -> T:
        """Run `write(conn, now)` in one write transaction (an import's project rows)."""
        with self._pool.write() as conn:
            return write(conn, self._now())

    def list_projects(self) -> list[ProjectRecord]:
        """By name (case-insensitive), then oldest first."""
        rows = (
            self._pool.get()
            .conn.execute(
                f"SELECT {_PROJECT_COLUMNS} FROM projects AS p WHERE p.importing = 0 "
                "ORDER BY p.name COLLATE NOCASE, p.created_at"
            )
            .fetchall()
        )
        return [_project(row) for row in rows]

    def update_project(
        self,
        project_id: str,
        *,
        name: str | None = None,
        instructions: str | None = None,
        model: str | None = None,
        clear_model: bool = False,
        settings: dict[str, Any] | None = None,
    ) -> ProjectRecord:
        """Change the given fields (None = leave as is); `clear_model` sets the default
        model back to the app's; `settings` replaces the whole dict."""
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if instructions is not None:
            changes["instructions"] = instructions
        if model is not None or clear_model:
            changes["model"] = model
        if settings is not None:
            changes["settings"] = json.dumps(settings, separators=(",", ":"))
        changes["updated_at"] = self._now()
        assignments = ", ".join(f"{column} = ?" for column in changes)
        with self._pool.write() as conn:
            cursor = conn.execute(
                f"UPDATE projects SET {assignments} WHERE id = ?", (*changes.values(), project_id)
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no project with id {project_id!r}")
            return get_project(conn, project_id)

    def project_conversation_ids(self, project_id: str) -> list[str]:
        rows = (
            self._pool.get()
            .conn.execute("SELECT id FROM conversations WHERE project_id = ?", (project_id,))
            .fetchall()
        )
        return [row[0] for row in rows]

    def discard_project_import(self, project_id: str) -> None:
        """Delete a project import that failed: the hidden project and everything it
        wrote."""
        delete_unfinished_project_imports(self._pool.write, project_id)

    def delete_project(self, project_id: str) -> int:
        """Delete the project with its files and notes; its conversations move to "no
        project" in the same transaction (nothing of them is lost). Returns how many
        moved."""
        with self._pool.write() as conn:
            get_project(conn, project_id)
            moved = conn.execute(
                "UPDATE conversations SET project_id = NULL WHERE project_id = ?", (project_id,)
            ).rowcount
            conn.execute("DELETE FROM project_files WHERE project_id = ?", (project_id,))
            conn.execute("DELETE FROM project_notes WHERE project_id = ?", (project_id,))
            conn.execute("DELETE FROM projects WHERE id = ?", (project_id,))
        return moved

    def move_conversation(self, conversation_id: str, project_id: str | None) -> None:
        """Put the conversation in `project_id` (None = no project). Its messages, folds
        and pins are untouched; only what is sent with them changes."""
        with self._pool.write() as conn:
            if project_id is not None:
                get_project(conn, project_id)
            # Filing a conversation away is not news in it: `updated_at` (the sidebar's
            # order) stays where its last message put it.
            cursor = conn.execute(
                "UPDATE conversations SET project_id = ? WHERE id = ?",
                (project_id, conversation_id),
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no conversation with id {conversation_id!r}")

    # -- files -----------------------------------------------------------------------

    def add_project_file(self, project_id: str, part: AttachmentPart) -> ProjectFileRecord:
        """Store a checked upload; DuplicateFile when the project holds the same bytes."""
        now = self._now()
        with self._pool.write() as conn:
            _touch(conn, project_id, now)
            return insert_file(conn, project_id, part, now)

    def list_project_files(
        self, project_id: str, *, text: bool = False, content: bool = False
    ) -> list[ProjectFileRecord]:
        """Oldest first; with `text`, what the model reads of each; with `content`, each
        file's bytes."""
        columns = _file_columns(text=text, content=content)
        rows = (
            self._pool.get()
            .conn.execute(
                f"SELECT {columns} FROM project_files WHERE project_id = ? ORDER BY created_at, id",
                (project_id,),
            )
            .fetchall()
        )
        return [_file(row) for row in rows]

    def get_project_file(self, project_id: str, file_id: str) -> ProjectFileRecord:
        row = (
            self._pool.get()
            .conn.execute(
                f"SELECT {_file_columns(text=False, content=True)} FROM project_files "
                "WHERE id = ? AND project_id = ?",
                (file_id, project_id),
            )
            .fetchone()
        )
        if row is None:
            raise NotFound(f"no file {file_id!r} in this project")
        return _file(row)

    def delete_project_file(self, project_id: str, file_id: str) -> None:
        with self._pool.write() as conn:
            cursor = conn.execute(
                "DELETE FROM project_files WHERE id = ? AND project_id = ?", (file_id, project_id)
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no file {file_id!r} in this project")
            _touch(conn, project_id, self._now())

    # -- pinned notes ----------------------------------------------------------------

    def add_project_note(self, project_id: str, title: str, text: str) -> ProjectNoteRecord:
        now = self._now()
        with self._pool.write() as conn:
            _touch(conn, project_id, now)
            return insert_note(conn, project_id, title, text, now)

    def list_project_notes(self, project_id: str) -> list[ProjectNoteRecord]:
        rows = (
            self._pool.get()
            .conn.execute(
                f"SELECT {_NOTE_COLUMNS} FROM project_notes WHERE project_id = ? "
                "ORDER BY created_at, id",
                (project_id,),
            )
            .fetchall()
        )
        return [_note(row) for row in rows]

    def update_project_note(
        self, project_id: str, note_id: str, *, title: str | None, text: str | None
    ) -> ProjectNoteRecord:
        now = self._now()
        with self._pool.write() as conn:
            row = conn.execute(
                "UPDATE project_notes SET title = coalesce(?, title), text = coalesce(?, text), "
                f"updated_at = ? WHERE id = ? AND project_id = ? RETURNING {_NOTE_COLUMNS}",
                (title, text, now, note_id, project_id),
            ).fetchone()
            if row is None:
                raise NotFound(f"no note {note_id!r} in this project")
            _touch(conn, project_id, now)
            return _note(row)

    def delete_project_note(self, project_id: str, note_id: str) -> None:
        with self._pool.write() as conn:
            cursor = conn.execute(
                "DELETE FROM project_notes WHERE id = ? AND project_id = ?", (note_id, project_id)
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no note {note_id!r} in this project")
            _touch(conn, project_id, self._now())
