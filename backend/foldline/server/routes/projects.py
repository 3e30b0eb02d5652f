"""Projects: conversations grouped, with instructions, files and pinned notes that every
conversation of the project sends the model (see `core.projects`)."""

from __future__ import annotations

import asyncio
import re
import tempfile
from typing import IO, Annotated, Literal

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from foldline.api.schemas_projects import (
    ProjectCreate,
    ProjectDeleted,
    ProjectFileCreate,
    ProjectFileOut,
    ProjectList,
    ProjectNoteCreate,
    ProjectNoteOut,
    ProjectNotePatch,
    ProjectOut,
    ProjectPatch,
    ProjectSearchHit,
    ProjectSearchOut,
)
from foldline.chat.projects import over_cap_message
from foldline.core.attachments import PDF_TYPE, AttachmentRefused
from foldline.server.big_bodies import OffLoopJsonRoute
from foldline.server.deps import ChatDep, DataDirDep, StoreDep
from foldline.server.errors import ApiError
from foldline.server.routes.conversations import conversation_list, delete_conversation
from foldline.server.routes.transfer import (
    SPOOL_IN_MEMORY,
    export_chunks,
    file_name,
    read_body,
)
from foldline.store import Store
from foldline.store.json_stream import InvalidJson
from foldline.store.project_export import import_project, write_project_export
from foldline.store.projects import ProjectFileRecord, ProjectNoteRecord, ProjectRecord
from foldline.store.search import search_terms
from foldline.uploads import IncomingFile, read_project_file

router = APIRouter(
    prefix="/api/projects",
    tags=["projects"],
    # A project's file carries up to 48 MB of JSON.
    route_class=OffLoopJsonRoute,
)

OVER_CAP: dict[int | str, dict] = {
    422: {"description": "The project's shared context would exceed its cap."},
}


def file_out(record: ProjectFileRecord) -> ProjectFileOut:
    return ProjectFileOut(
        id=record.id,
        name=record.name,
        media_type=record.media_type,
        size=record.size,
        sha256=record.sha256,
        pages=record.pages,
        created_at=record.created_at,
    )


def note_out(record: ProjectNoteRecord) -> ProjectNoteOut:
    return ProjectNoteOut(
        id=record.id,
        title=record.title,
        text=record.text,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def project_out(record: ProjectRecord, store: Store | None = None) -> ProjectOut:
    out = ProjectOut(
        id=record.id,
        name=record.name,
        instructions=record.instructions,
        model=record.model,
        settings=dict(record.settings),
        created_at=record.created_at,
        updated_at=record.updated_at,
        conversation_count=record.conversation_count,
    )
    if store is not None:
        out.files = [file_out(f) for f in store.list_project_files(record.id)]
        out.notes = [note_out(n) for n in store.list_project_notes(record.id)]
    return out


def _check_cap(chat: ChatDep, project_id: str) -> None:
    """422 when the project's shared context is over its cap for its default model."""
    tokens, cap, model = chat.project_size(project_id)
    if tokens > cap:
        name = chat.store.get_project(project_id).name
        raise ApiError(422, "project_over_cap", over_cap_message(name, tokens, cap, model))


@router.get("", response_model=ProjectList)
def list_projects(store: StoreDep) -> ProjectList:
    """Every project, by name, with how many conversations each holds."""
    return ProjectList(items=[project_out(p) for p in store.list_projects()])


@router.post("", response_model=ProjectOut, status_code=status.HTTP_201_CREATED)
def create_project(body: ProjectCreate, store: StoreDep, chat: ChatDep) -> ProjectOut:
    record = store.create_project(
        name=body.name.strip() or body.name,
        instructions=body.instructions,
        model=body.model,
        settings=body.settings,
    )
    try:
        _check_cap(chat, record.id)
    except ApiError:
        store.delete_project(record.id)
        raise
    return project_out(record, store)


@router.get("/{project_id}", response_model=ProjectOut)
def get_project(project_id: str, store: StoreDep) -> ProjectOut:
    """The project with its files (metadata only) and its pinned notes."""
    return project_out(store.get_project(project_id), store)


@router.patch("/{project_id}", response_model=ProjectOut, responses=OVER_CAP)
def patch_project(
    project_id: str, body: ProjectPatch, store: StoreDep, chat: ChatDep
) -> ProjectOut:
    """Rename, or change the instructions, default model or settings. New instructions
    that would take the shared context over its cap are refused (422), nothing changed."""
    before = store.get_project(project_id)
    record = store.update_project(
        project_id,
        name=body.name,
        instructions=body.instructions,
        model=body.model,
        clear_model="model" in body.model_fields_set and body.model is None,
        settings=body.settings,
    )
    if body.instructions is not None:
        try:
            _check_cap(chat, project_id)
        except ApiError:
            store.update_project(project_id, instructions=before.instructions)
            raise
    return project_out(record, store)


@router.delete(
    "/{project_id}",
    response_model=ProjectDeleted,
    responses={409: {"description": "The confirmed count is not the project's count."}},
)
async def delete_project(
    project_id: str,
    store: StoreDep,
    chat: ChatDep,
    conversations: Annotated[Literal["move", "delete"], Query()] = "move",
    confirm_count: Annotated[int | None, Query(alias="confirmCount", ge=0)] = None,
) -> ProjectDeleted:
    """Delete the project, its files and notes. Its conversations move to "no project"
    (`conversations=move`, the default), or are deleted too with `conversations=delete`,
    which needs `confirmCount` equal to how many the project holds now (the number the
    person confirmed): any other count is a 409 and nothing is deleted."""
    # On the event loop, where a conversation's running turn is stopped; the store is
    # read and written in worker threads.
    await asyncio.to_thread(store.get_project, project_id)
    ids = await asyncio.to_thread(store.project_conversation_ids, project_id)
    deleted = 0
    if conversations == "delete":
        if confirm_count != len(ids):
            raise ApiError(
                409,
                "confirmation_needed",
                f"This project holds {len(ids)} conversation(s); deleting them needs "
                f"confirmCount={len(ids)} (the number the person confirmed). Nothing was "
                "deleted.",
            )
        for conversation_id in ids:
            await delete_conversation(conversation_id, store, chat)
            deleted += 1
    moved = await asyncio.to_thread(store.delete_project, project_id)
    return ProjectDeleted(moved=moved, deleted=deleted)


# --- files ---------------------------------------------------------------------------


@router.post(
    "/{project_id}/files",
    response_model=ProjectFileOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        409: {"description": "The project already holds the same file."},
        422: {
            "description": "Refused by the rules of a message's files (the detail names "
            "the file and the rule), an image, or over the project's cap."
        },
    },
)
def add_file(
    project_id: str, body: ProjectFileCreate, store: StoreDep, chat: ChatDep
) -> ProjectFileOut:
    """Add a file (base64 in `data`), checked as a message's files are (magic numbers,
    the providers' limits): a text file is sent as its text, a PDF as its extracted text
    (page by page), with its name, to the model in every conversation of the project.
    Images are refused: the files ride in the system prompt, which holds only text.
    Refused too when it would take the shared context over its cap; nothing is kept."""
    store.get_project(project_id)
    try:
        part = read_project_file(IncomingFile(body.name, body.media_type, body.data))
    except AttachmentRefused as error:
        raise ApiError(422, "attachment_refused", str(error)) from None
    try:
        record = store.add_project_file(project_id, part)
    except ValueError as error:  # DuplicateFile
        raise ApiError(409, "duplicate_file", str(error)) from None
    try:
        _check_cap(chat, project_id)
    except ApiError:
        store.delete_project_file(project_id, record.id)
        raise
    return file_out(record)


def _safe_name(name: str) -> str:
    """An ASCII file name for Content-Disposition (the name is user text)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:120] or "file.txt"


@router.get("/{project_id}/files/{file_id}")
def download_file(project_id: str, file_id: str, store: StoreDep) -> Response:
    """The file's bytes as uploaded (a PDF as a PDF, a text file as text/plain so that
    nothing in it runs in the browser)."""
    record = store.get_project_file(project_id, file_id)
    return Response(
        record.content or b"",
        media_type=PDF_TYPE if record.media_type == PDF_TYPE else "text/plain; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{_safe_name(record.name)}"'},
    )


@router.delete(
    "/{project_id}/files/{file_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response
)
def delete_file(project_id: str, file_id: str, store: StoreDep) -> Response:
    store.delete_project_file(project_id, file_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# --- pinned notes --------------------------------------------------------------------


@router.post(
    "/{project_id}/notes",
    response_model=ProjectNoteOut,
    status_code=status.HTTP_201_CREATED,
    responses=OVER_CAP,
)
def add_note(
    project_id: str, body: ProjectNoteCreate, store: StoreDep, chat: ChatDep
) -> ProjectNoteOut:
    """Pin a note to the project: sent verbatim after its files in every conversation."""
    record = store.add_project_note(project_id, body.title, body.text)
    try:
        _check_cap(chat, project_id)
    except ApiError:
        store.delete_project_note(project_id, record.id)
        raise
    return note_out(record)


@router.patch("/{project_id}/notes/{note_id}", response_model=ProjectNoteOut, responses=OVER_CAP)
def patch_note(
    project_id: str, note_id: str, body: ProjectNotePatch, store: StoreDep, chat: ChatDep
) -> ProjectNoteOut:
    before = next((n for n in store.list_project_notes(project_id) if n.id == note_id), None)
    record = store.update_project_note(project_id, note_id, title=body.title, text=body.text)
    try:
        _check_cap(chat, project_id)
    except ApiError:
        assert before is not None
        store.update_project_note(project_id, note_id, title=before.title, text=before.text)
        raise
    return note_out(record)


@router.delete(
    "/{project_id}/notes/{note_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response
)
def delete_note(project_id: str, note_id: str, store: StoreDep) -> Response:
    store.delete_project_note(project_id, note_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# --- search --------------------------------------------------------------------------


def _snippet(text: str, term: str) -> str:
    at = text.lower().find(term.lower())
    start = max(at - 60, 0)
    return ("…" if start else "") + text[start : start + 160].replace("\n", " ")


@router.get("/{project_id}/search", response_model=ProjectSearchOut)
def search_project(
    project_id: str,
    store: StoreDep,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> ProjectSearchOut:
    """Search within a project: its conversations (titles and messages, as the list's
    `q`) and its files and notes containing every term."""
    store.get_project(project_id)
    found = conversation_list(store, q, limit, project_id)
    terms = [t.strip('"') for t in search_terms(q)] or [q.strip()]
    shared: list[ProjectSearchHit] = []
    for f in store.list_project_files(project_id, text=True):
        text = f"{f.name}\n{f.text or ''}"
        if all(term.lower() in text.lower() for term in terms):
            snippet = _snippet(text, terms[0])
            shared.append(ProjectSearchHit(kind="file", id=f.id, name=f.name, snippet=snippet))
    for n in store.list_project_notes(project_id):
        text = f"{n.title}\n{n.text}"
        if all(term.lower() in text.lower() for term in terms):
            snippet = _snippet(text, terms[0])
            shared.append(ProjectSearchHit(kind="note", id=n.id, name=n.title, snippet=snippet))
    return ProjectSearchOut(conversations=found.items, shared=shared)


# --- export and import ---------------------------------------------------------------


@router.get(
    "/{project_id}/export",
    responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
)
def export_project(project_id: str, store: StoreDep, data_dir: DataDirDep) -> Response:
    """The project (`format: foldline.project`): its settings, files and notes, and every
    conversation of it as a full conversation export."""
    record = store.get_project(project_id)
    return StreamingResponse(
        export_chunks(lambda out: write_project_export(store, project_id, out), data_dir),
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="{file_name(record.name, "json")}"'},
    )


def _import_from(store: Store, body: IO[bytes]) -> ProjectOut:
    body.seek(0)
    try:
        project_id, _conversations = import_project(store, body)
    except InvalidJson as error:
        raise ApiError(
            400, "invalid_json", f"The request body is not valid JSON: {error}"
        ) from None
    except ValueError as error:
        raise ApiError(422, "invalid_import", str(error)) from error
    return project_out(store.get_project(project_id), store)


@router.post(
    "/import",
    response_model=ProjectOut,
    status_code=status.HTTP_201_CREATED,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
)
async def import_project_route(
    request: Request, store: StoreDep, data_dir: DataDirDep
) -> ProjectOut:
    """A project export as a new project with its files, notes and conversations (the
    exported id is kept when it is free here). Nothing is kept of an invalid one."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, dir=str(data_dir)) as body:
        await read_body(request, body)
        return await run_in_threadpool(_import_from, store, body)
