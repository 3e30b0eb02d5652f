"""The projects API's bodies (`/api/projects`), in camelCase like every other API type."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from foldline.api.schemas import (
    MAX_SYSTEM_PROMPT_CHARS,
    ApiModel,
    ConversationOut,
    RequestModel,
    _checked_settings,
)

MAX_PROJECT_NAME_CHARS = 200
MAX_NOTE_CHARS = 200_000
MAX_FILE_BASE64_CHARS = 32 * 1024 * 1024 * 4 // 3 + 4
"""A project file's largest upload: the 32 MB of files a message may carry, in base64.
The rules per kind (2 MB of text, 100 PDF pages) are `foldline.uploads`'s, and the cap on
what a project sends stops far below this for most models."""

Name = Annotated[str, Field(min_length=1, max_length=MAX_PROJECT_NAME_CHARS)]
Model = Annotated[str, Field(min_length=1, max_length=200)]
Instructions = Annotated[str, Field(max_length=MAX_SYSTEM_PROMPT_CHARS)]


class ProjectFileOut(ApiModel):
    id: str
    name: str
    media_type: str
    size: int
    """Bytes."""
    sha256: str
    pages: int | None = None
    """A PDF's page count (null for a text file)."""
    created_at: str


class ProjectNoteOut(ApiModel):
    id: str
    title: str
    text: str
    created_at: str
    updated_at: str


class ProjectOut(ApiModel):
    id: str
    name: str
    instructions: str
    """Sent before the system prompt of each of its conversations."""
    model: str | None
    """The default model of its conversations that choose none (null: the app's)."""
    settings: dict[str, Any]
    """`compaction` holds overrides under each conversation's own, as on a conversation."""
    created_at: str
    updated_at: str
    conversation_count: int
    files: list[ProjectFileOut] = Field(default_factory=list)
    """Filled by `GET /api/projects/{id}` (empty in the list)."""
    notes: list[ProjectNoteOut] = Field(default_factory=list)
    """Filled by `GET /api/projects/{id}` (empty in the list)."""


class ProjectList(ApiModel):
    items: list[ProjectOut]


class ProjectCreate(RequestModel):
    name: Name
    instructions: Instructions = ""
    model: Model | None = None
    settings: dict[str, Any] | None = None

    check_settings = field_validator("settings")(_checked_settings)


class ProjectPatch(RequestModel):
    """Fields left out are unchanged; `model: null` sets the default back to the app's."""

    name: Name | None = None
    instructions: Instructions | None = None
    model: Model | None = None
    settings: dict[str, Any] | None = None

    check_settings = field_validator("settings")(_checked_settings)


class ProjectDeleted(ApiModel):
    moved: int
    """Conversations moved to "no project"."""
    deleted: int
    """Conversations deleted with the project (only when asked for and confirmed)."""


class ProjectFileCreate(RequestModel):
    name: Annotated[str, Field(min_length=1, max_length=255)]
    media_type: Annotated[str, Field(max_length=255)] = "text/plain"
    data: Annotated[str, Field(max_length=MAX_FILE_BASE64_CHARS)]
    """The file's bytes, base64."""


class ProjectNoteCreate(RequestModel):
    title: Annotated[str, Field(min_length=1, max_length=MAX_PROJECT_NAME_CHARS)]
    text: Annotated[str, Field(min_length=1, max_length=MAX_NOTE_CHARS)]


class ProjectNotePatch(RequestModel):
    title: Annotated[str, Field(min_length=1, max_length=MAX_PROJECT_NAME_CHARS)] | None = None
    text: Annotated[str, Field(min_length=1, max_length=MAX_NOTE_CHARS)] | None = None


class ProjectSearchHit(ApiModel):
    kind: Literal["file", "note"]
    id: str
    name: str
    snippet: str


class ProjectSearchOut(ApiModel):
    """`GET /api/projects/{id}/search?q=`: the project's matching conversations (as in
    `GET /api/conversations?q=`) and its files and notes that contain every term."""

    conversations: list[ConversationOut]
    shared: list[ProjectSearchHit]
