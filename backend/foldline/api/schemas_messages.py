"""The API's shapes of messages: their parts as the UI reads them, a page of them, and
what a send, an edit or a version switch takes."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, Self

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from foldline.api.schemas import MAX_CONTENT_CHARS, ApiModel, RequestModel
from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from foldline.core.messages import Part as CorePart

# --- messages ----------------------------------------------------------------------


class TextPartOut(ApiModel):
    kind: Literal["text"] = "text"
    text: str


class ReasoningPartOut(ApiModel):
    """The model's reasoning before an answer or a call: the full thinking (Anthropic) or
    the provider's summary of it (OpenAI). The encrypted forms the provider needs back
    stay in the store and in exports; they mean nothing to a reader."""

    kind: Literal["reasoning"] = "reasoning"
    text: str
    signature: str | None = None
    redacted: bool = False
    """The provider encrypted this reasoning (Anthropic redacted_thinking): no text."""


class ToolCallPartOut(ApiModel):
    kind: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    input: dict[str, Any]


class ToolResultPartOut(ApiModel):
    kind: Literal["tool-result"] = "tool-result"
    call_id: str
    name: str
    output: str
    is_error: bool
    compacted_at: str | None
    truncated: bool
    """True when `output` was cut at ingest and the original is kept (see `fullOutput`)."""
    full_output: str | None = None
    """Only present when asked for (`?full=true` or the `/full` route): it can be large."""

    @model_serializer(mode="wrap")
    def _omit_absent_full_output(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Absent, not null: null would claim there is no full output when it was just
        # not asked for.
        data = handler(self)
        if self.full_output is None:
            data.pop("fullOutput", None)
            data.pop("full_output", None)
        return data


class AttachmentPartOut(ApiModel):
    """A file. A person's file (one with a `sha256`) carries only its metadata: its bytes
    come from `GET /api/conversations/{id}/attachments/{sha256}`, so pages stay light.
    A tool's attachment (no sha256) carries its text or bytes inline, as before."""

    kind: Literal["attachment"] = "attachment"
    name: str
    media_type: str
    text: str | None = None
    data_base64: str | None = None
    sha256: str | None = None
    size: int | None = None
    """Bytes."""
    width: int | None = None
    """An image's pixels."""
    height: int | None = None
    pages: int | None = None
    """A PDF's page count."""
    tokens: int | None = None
    """What the file costs in the model's request (Model view only; null elsewhere)."""


PartOut = Annotated[
    TextPartOut | ReasoningPartOut | ToolCallPartOut | ToolResultPartOut | AttachmentPartOut,
    Field(discriminator="kind"),
]


def part_out(part: CorePart, *, include_full: bool = False) -> PartOut:
    """An engine part as its API shape; a tool result's full output only when asked."""
    if isinstance(part, TextPart):
        return TextPartOut(text=part.text)
    if isinstance(part, ReasoningPart):
        return ReasoningPartOut(
            text=part.text, signature=part.signature, redacted=part.redacted is not None
        )
    if isinstance(part, ToolCallPart):
        return ToolCallPartOut(id=part.id, name=part.name, input=dict(part.input))
    if isinstance(part, ToolResultPart):
        return ToolResultPartOut(
            call_id=part.call_id,
            name=part.name,
            output=part.output,
            is_error=part.is_error,
            compacted_at=part.compacted_at,
            truncated=part.full_output is not None,
            full_output=part.full_output if include_full else None,
        )
    if isinstance(part, AttachmentPart):
        stored = part.sha256 is not None
        return AttachmentPartOut(
            name=part.name,
            media_type=part.media_type,
            text=None if stored else part.text,
            data_base64=None if stored else part.data_base64,
            sha256=part.sha256,
            size=part.size,
            width=part.width,
            height=part.height,
            pages=part.pages,
        )
    raise TypeError(f"unknown part type {type(part).__name__}")


class StoredMessage(Protocol):
    """What `MessageOut` reads of a store `MessageRecord` (the store is a higher layer)."""

    @property
    def seq(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def message(self) -> Message: ...
    @property
    def status(self) -> Literal["complete", "streaming", "interrupted", "error"]: ...
    @property
    def created_at(self) -> str: ...
    @property
    def updated_at(self) -> str: ...
    @property
    def usage(self) -> dict[str, Any] | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def continued(self) -> bool: ...
    @property
    def parent_id(self) -> str | None: ...


class MessageOut(ApiModel):
    index: int
    """The display index (the store's `seq`), 0-based and dense."""
    id: str
    role: Literal["user", "assistant", "tool"]
    parts: list[PartOut]
    status: Literal["complete", "streaming", "interrupted", "error"]
    in_context: bool
    """True when the model still sees this message verbatim (`index >= apiStartIndex`)."""
    created_at: str
    updated_at: str
    usage: dict[str, Any] | None
    """The answer's model call as reported (Foldline writes a `usage` event's fields);
    free-form because an imported history keeps whatever its export held."""
    error: str | None
    continued: bool = False
    """Continue extended this answer in place after a stop or an error."""
    parent_id: str | None = None
    """The message this one follows in the tree (null for a first message)."""
    sibling_ids: list[str] = []
    """This message's id and its siblings' (other versions: same parent), oldest first;
    just its own id when there are none."""

    @classmethod
    def from_record(
        cls,
        record: StoredMessage,
        api_start_index: int,
        *,
        include_full: bool = False,
        sibling_ids: list[str] | None = None,
    ) -> MessageOut:
        """A stored message; a tool result's full output only when `include_full`;
        `sibling_ids` as the store gives them (just its own id when not given)."""
        return cls(
            index=record.seq,
            id=record.id,
            role=record.message.role,
            parts=[part_out(p, include_full=include_full) for p in record.message.parts],
            status=record.status,
            in_context=record.seq >= api_start_index,
            created_at=record.created_at,
            updated_at=record.updated_at,
            usage=record.usage,
            error=record.error,
            continued=record.continued,
            parent_id=record.parent_id,
            sibling_ids=sibling_ids or [record.id],
        )


class MessagePage(ApiModel):
    """One page of the display history, oldest first."""

    items: list[MessageOut]
    total: int
    """Messages in the whole history."""
    offset: int
    limit: int
    api_start_index: int
    """The current fold's boundary: messages before it are display-only."""


class FullPartOut(ApiModel):
    message_id: str
    part_index: int
    kind: str
    output: str
    """The full, untruncated tool output (equal to the shown output when never truncated)."""
    truncated: bool


MAX_ATTACHMENTS = 20
"""Files per message: Anthropic lowers its per-image pixel limit once a request holds
more than 20 images, so one message stays within the plain limits."""


class AttachmentIn(RequestModel):
    """A file sent with a message: checked (type, magic bytes, the model, the providers'
    limits) before anything is stored."""

    name: Annotated[str, Field(min_length=1, max_length=255)]
    media_type: Annotated[str, Field(max_length=100)]
    """As the client declares it (`image/png`, `application/pdf`, `text/markdown` ...);
    the bytes must match it. Text files may say `application/octet-stream` or ""."""
    data_base64: str
    """The bytes, base64 (standard alphabet, padded)."""


class SendMessage(RequestModel):
    content: Annotated[str, Field(max_length=MAX_CONTENT_CHARS)] = ""
    """The text; may be empty when files are attached."""
    attachments: Annotated[list[AttachmentIn], Field(max_length=MAX_ATTACHMENTS)] = []

    @model_validator(mode="after")
    def _not_empty(self) -> Self:
        if not self.content and not self.attachments and not self.kept_files():
            raise ValueError("a message needs text or files")
        return self

    def kept_files(self) -> list[str]:
        """Stored files the message keeps (an edit's); a new message has none."""
        return []


class EditMessage(SendMessage):
    keep_attachments: Annotated[list[str], Field(max_length=MAX_ATTACHMENTS)] = []
    """sha256s of the edited message's files that the new version keeps (not sent again)."""

    def kept_files(self) -> list[str]:
        return self.keep_attachments


class ActiveLeaf(RequestModel):
    message_id: Annotated[str, Field(min_length=1, max_length=100)]
    """Any message: the active leaf becomes the leaf last used in its subtree."""


class EditPreview(ApiModel):
    """What editing a message would do to the model's view."""

    folded: bool
    """True when the message is folded now: the new branch sees the earlier context again."""
    folds_kept: int
    """Folds of the current stack that still apply to the new branch."""
    folds_dropped: int
    """Folds of the current stack that summarize the edited message or later ones."""
    view_tokens: int
    """Tokens of the new branch's view before the edited message is added."""
    context_window: int
