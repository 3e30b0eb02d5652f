"""The JSON format of a conversation export: a public contract.

`"format": "foldline.conversation"`, `"formatVersion": 2`: camelCase keys like the HTTP
API, except inside `parts`, which are the engine's own part values (`kind`, `call_id`,
`is_error`, ...) so that a part round-trips without translation. It is described by the
pydantic models below, which the export builds (`export.py`) and which also validate an
import before anything is written (`import_reader.py`).

Version 2 carries the message tree: every branch's messages, parents first, each with its
`parentId` (null for a first message) and `index` (its depth); the conversation's
`activeLeafId`; each fold's `lastMessageId`; and on a leaf the person left, the fold that
was current there (`leafFoldVersion`). A version 1 file (one path, no parents) imports as
one path.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from foldline.core.json_values import has_lone_surrogate
from foldline.core.messages import Part, Role
from foldline.core.settings import MAX_TOKENS, InvalidSettings, check_conversation_settings
from foldline.core.state import Strategy, Trigger
from foldline.store.records import MessageStatus

FORMAT = "foldline.conversation"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)

MAX_INDEX = 2**31 - 1
"""The largest message index or count an import may claim."""
MAX_VERSION = 2**31 - 1
"""The largest fold version: the store numbers the next fold one above the highest, so
this leaves room for billions more without leaving SQLite's integer range."""
SQLITE_INTEGER = (-(2**63), 2**63 - 1)
"""SQLite's signed 64-bit integers: any number stored anywhere must fit."""

_Index = Field(ge=0, le=MAX_INDEX)
_Tokens = Field(ge=0, le=MAX_TOKENS)


class ExportSchema(BaseModel):
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


def check_timestamp(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from None
    return value


class ExportedConversation(ExportSchema):
    id: str
    title: str
    model: str | None
    system_prompt: str
    settings: dict[str, Any]
    created_at: str
    updated_at: str
    active_leaf_id: str | None = None
    provider: str | None = Field(default=None, max_length=200)
    """The configured provider chosen to serve `model` (absent in older files: the one the
    configuration picks, as for a conversation that never chose)."""

    check_timestamps = field_validator("created_at", "updated_at")(check_timestamp)

    @field_validator("settings")
    @classmethod
    def _check_settings(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            check_conversation_settings(value)
        except InvalidSettings as error:
            raise ValueError(str(error)) from None
        return value


MAX_USAGE_ENTRIES = 32
"""A message's usage is a flat record of a few counts; more entries than this is no usage."""


def _check_usage_numbers(usage: dict[str, Any] | None) -> None:
    """A message's usage holds numbers under short names: finite, and integers within
    SQLite's range. Nothing nested, so nothing a read could choke on."""
    if usage is None:
        return
    if len(usage) > MAX_USAGE_ENTRIES:
        raise ValueError(f"more than {MAX_USAGE_ENTRIES} entries")
    for key, value in usage.items():
        if len(key) > 100 or has_lone_surrogate(key):
            raise ValueError(f"{key[:100]!r} is not a usage name")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{key}: expected a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{key}: {value} is not a finite number")
        if isinstance(value, int) and not SQLITE_INTEGER[0] <= value <= SQLITE_INTEGER[1]:
            raise ValueError(f"{key}: {value} is outside the 64-bit integer range")


class ExportedMessage(ExportSchema):
    id: str
    index: int = _Index
    role: Role
    parts: list[Part] = Field(strict=False)
    status: MessageStatus
    usage: dict[str, Any] | None
    token_count: int | None = _Tokens
    error: str | None
    created_at: str
    updated_at: str
    pinned_at: str | None = None
    parent_id: str | None = None
    leaf_fold_version: int | None = Field(default=None, ge=0, le=MAX_VERSION)
    continued: bool = False
    """An answer cut off and then continued in place (absent in older files: false)."""

    check_timestamps = field_validator("created_at", "updated_at")(check_timestamp)

    @field_validator("usage")
    @classmethod
    def _check_usage(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        _check_usage_numbers(value)
        return value

    @field_validator("pinned_at")
    @classmethod
    def _check_pinned_at(cls, value: str | None) -> str | None:
        return None if value is None else check_timestamp(value)


class ExportedRange(ExportSchema):
    from_index: int = _Index
    to_index: int = _Index
    message_count: int = _Index


class ExportedSaidWords(ExportSchema):
    """One of the person's messages a fold keeps after its summary."""

    index: int = _Index
    text: str
    condensed: bool = False


class ExportedFold(ExportSchema):
    version: int = Field(ge=1, le=MAX_VERSION)
    parent_version: int = Field(ge=0, le=MAX_VERSION)
    current: bool
    compacted_at: str
    summary_message: str
    api_start_index: int = _Index
    summarized_range: ExportedRange
    strategy: Strategy
    trigger: Trigger
    tokens_before: int = _Tokens
    tokens_after: int = _Tokens
    model: str | None
    degraded: bool
    carried_details: list[str] = Field(default_factory=list)
    person_words: list[ExportedSaidWords] = Field(default_factory=list)
    details_total: int = Field(default=0, ge=0, le=MAX_INDEX)
    details_kept: int = Field(default=0, ge=0, le=MAX_INDEX)
    details_appended: int = Field(default=0, ge=0, le=MAX_INDEX)
    last_message_id: str | None = None


class ExportedModelCall(ExportSchema):
    """One model call's usage and cost (chat answers and summarizer calls)."""

    turn: int = _Index
    purpose: Literal["chat", "summary"]
    message_id: str | None
    fold_version: int | None = Field(default=None, ge=1, le=MAX_VERSION)
    provider: str
    model: str
    input_tokens: int = _Tokens
    output_tokens: int = _Tokens
    cache_read_tokens: int = _Tokens
    cache_creation_tokens: int = _Tokens
    cost: float | None = Field(allow_inf_nan=False)
    saved: float | None = Field(allow_inf_nan=False)
    created_at: str
    estimated: bool = False
    """Counted by Foldline: the provider reported no usage for this call."""

    check_timestamps = field_validator("created_at")(check_timestamp)
