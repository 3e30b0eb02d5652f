"""Conversations: list and search, create, read, rename or change settings, delete."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from foldline.api.schemas import (
    CancelResult,
    CompactionOut,
    ConversationCreate,
    ConversationList,
    ConversationOut,
    ConversationPatch,
    HandoffOut,
    OriginOut,
    PinOut,
    SearchHitOut,
)
from foldline.api.schemas_messages import ActiveLeaf
from foldline.chat.projects import ProjectOverCap
from foldline.chat.service import ChatService
from foldline.chat.titles import DEFAULT_TITLE
from foldline.server.deps import ChatDep, StoreDep
from foldline.server.errors import ApiError
from foldline.server.routes.settings import ConfigSourceDep
from foldline.store import ConversationRecord, PinRecord, Store
from foldline.store.store import KEEP_PROVIDER

router = APIRouter(prefix="/api/conversations", tags=["conversations"])

NO_PROJECT = "none"
"""`?projectId=none`: the conversations in no project."""
UNREADABLE_SETTINGS = (
    "This conversation's stored settings could not be read back and are ignored (the "
    "app's settings apply). Saving new settings replaces them; `foldline doctor` resets "
    "them."
)


def conversation_out(
    record: ConversationRecord,
    compaction: CompactionOut | None = None,
    pins: list[PinOut] | None = None,
) -> ConversationOut:
    """A store `ConversationRecord` as the API's conversation object."""
    return ConversationOut(
        id=record.id,
        title=record.title,
        model=record.model,
        provider=record.provider,
        system_prompt=record.system_prompt,
        settings=dict(record.settings or {}),
        created_at=record.created_at,
        updated_at=record.updated_at,
        message_count=record.message_count,
        has_other_versions=record.has_other_versions,
        compaction=compaction,
        pins=pins or [],
        active_leaf_id=record.active_leaf_id,
        project_id=record.project_id,
        notice=UNREADABLE_SETTINGS if record.settings_unreadable else None,
    )


@router.get("", response_model=ConversationList)
async def list_conversations(
    store: StoreDep,
    q: Annotated[str | None, Query(max_length=500, description="full-text search")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    project_id: Annotated[
        str | None,
        Query(
            alias="projectId",
            max_length=64,
            description='only this project\'s conversations; "none": those in no project',
        ),
    ] = None,
) -> ConversationList:
    # One worker-thread hop: a plain `def` route takes a second one to check the model
    # it returns, and on a busy server each hop waits for the GIL again.
    return await asyncio.to_thread(conversation_list, store, q, limit, project_id)


def conversation_list(
    store: Store, q: str | None, limit: int, project_id: str | None
) -> ConversationList:
    """The sidebar's list (searched with `q`, of one project or of none)."""
    query = q.strip() if q else None
    if project_id not in (None, NO_PROJECT):
        store.get_project(project_id)
    records = store.list_conversations(
        q=query or None,
        limit=limit,
        project_id=None if project_id == NO_PROJECT else project_id,
        no_project=project_id == NO_PROJECT,
    )
    items = [conversation_out(record) for record in records]
    if query:
        for item in items:
            hit = store.search_hit(item.id, query)
            if hit is not None:
                item.search_hit = SearchHitOut(
                    index=hit.seq,
                    snippet=hit.snippet,
                    message_id=hit.message_id,
                    on_active_path=hit.on_active_path,
                    match_count=hit.match_count,
                )
    return ConversationList(items=items, total=len(items))


@router.post("", response_model=ConversationOut, status_code=status.HTTP_201_CREATED)
def create_conversation(
    store: StoreDep, source: ConfigSourceDep, body: ConversationCreate | None = None
) -> ConversationOut:
    body = body or ConversationCreate()
    _check_provider(source, body.model, body.provider)
    record = store.create_conversation(
        title=body.title or DEFAULT_TITLE,
        model=body.model,
        provider=body.provider,
        system_prompt=body.system_prompt or "",
        settings=body.settings or {},
        project_id=body.project_id,
    )
    return conversation_out(record)


@router.get("/{conversation_id}", response_model=ConversationOut)
async def read_conversation(
    conversation_id: str, store: StoreDep, chat: ChatDep
) -> ConversationOut:
    # One worker-thread hop: a plain `def` route takes a second one to check the model
    # it returns, and while a large file is read each hop waits for the GIL again.
    return await asyncio.to_thread(get_conversation, conversation_id, store, chat)


def get_conversation(conversation_id: str, store: Store, chat: ChatService) -> ConversationOut:
    """A conversation as its page opens it (the reads run in a worker thread)."""
    # Read before the store: a change landing meanwhile leaves the page a revision behind,
    # so it re-reads once more rather than miss the change.
    revision = chat.watch.revision_of(conversation_id)
    record = store.get_conversation(conversation_id)
    state = store.current_compaction(conversation_id)
    pins = [pin_out(pin) for pin in store.list_pins(conversation_id)]
    out = conversation_out(record, CompactionOut.from_state(state) if state else None, pins)
    origin, handoffs = store.conversation_links(conversation_id)
    if origin is not None:
        out.origin = OriginOut(
            conversation_id=origin.conversation_id,
            title=origin.title,
            message_id=origin.message_id,
        )
    out.handoffs = [
        HandoffOut(conversation_id=h.conversation_id, title=h.title, created_at=h.created_at)
        for h in handoffs
    ]
    out.revision = revision
    return out


PIN_EXCERPT_CHARS = 120


def pin_out(pin: PinRecord) -> PinOut:
    flat = " ".join(pin.message.text.split())
    excerpt = flat if len(flat) <= PIN_EXCERPT_CHARS else flat[: PIN_EXCERPT_CHARS - 1] + "…"
    return PinOut(
        message_id=pin.message_id,
        index=pin.seq,
        role=pin.message.role,
        pinned_at=pin.pinned_at,
        excerpt=excerpt,
    )


@router.patch("/{conversation_id}", response_model=ConversationOut)
def patch_conversation(
    conversation_id: str,
    body: ConversationPatch,
    store: StoreDep,
    chat: ChatDep,
    source: ConfigSourceDep,
) -> ConversationOut:
    _check_provider(source, body.model, body.provider)
    if "project_id" in body.model_fields_set:
        move_to_project(conversation_id, body.project_id, store, chat)
    record = store.update_conversation(
        conversation_id,
        title=body.title,
        model=body.model,
        # A new model names its provider, or lets the configuration pick one again.
        provider=body.provider if body.model is not None else KEEP_PROVIDER,
        system_prompt=body.system_prompt,
        settings=body.settings,
    )
    state = store.current_compaction(conversation_id)
    return conversation_out(record, CompactionOut.from_state(state) if state else None)


def _check_provider(source: ConfigSourceDep, model: str | None, provider: str | None) -> None:
    """A provider is named with a model, and must be a configured one (422 otherwise)."""
    if provider is None:
        return
    if model is None:
        raise ApiError(422, "invalid_request", "`provider` is given with the `model` it serves.")
    if provider not in source().providers:
        raise ApiError(422, "invalid_request", f"No provider named `{provider}` is configured.")


def move_to_project(
    conversation_id: str, project_id: str | None, store: StoreDep, chat: ChatDep
) -> None:
    """Move the conversation (None: to no project); refused (422, nothing moved) when
    the project's shared context is over its cap for the conversation's model."""
    before = store.get_conversation(conversation_id).project_id
    store.move_conversation(conversation_id, project_id)
    if project_id is None:
        return
    try:
        chat.check_project_cap(conversation_id)
    except ProjectOverCap as error:
        store.move_conversation(conversation_id, before)
        raise ApiError(422, "project_over_cap", str(error)) from None


@router.put("/{conversation_id}/active-leaf", response_model=ConversationOut)
async def put_active_leaf(
    conversation_id: str, body: ActiveLeaf, store: StoreDep, chat: ChatDep
) -> ConversationOut:
    """Switch branches: the active leaf becomes the leaf last used under
    `messageId` (where that branch was last left), and the fold current on that path."""
    # Switched from the event loop, where turns start: the check that none runs and the
    # switch queued in the turns' ordered writer happen with no turn starting between.
    await asyncio.to_thread(store.get_conversation, conversation_id)
    await chat.switch_branch(conversation_id, body.message_id)
    return await asyncio.to_thread(get_conversation, conversation_id, store, chat)


@router.delete(
    "/{conversation_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response
)
async def delete_conversation(conversation_id: str, store: StoreDep, chat: ChatDep) -> Response:
    # A running turn would go on writing into a conversation that no longer exists:
    # stop it first (this runs on the event loop, where the turn's task lives; the store
    # is read and written in worker threads).
    await asyncio.to_thread(store.get_conversation, conversation_id)
    handle = chat.running.get(conversation_id)
    if handle is not None and chat.cancel(conversation_id):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(handle.wait(), timeout=10)
    chat.background.cancel(conversation_id)
    chat.titles.cancel(conversation_id)
    await asyncio.to_thread(store.delete_conversation, conversation_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{conversation_id}/cancel", response_model=CancelResult)
async def cancel_turn(conversation_id: str, store: StoreDep, chat: ChatDep) -> CancelResult:
    """The Stop button: the running turn or fold ends; a partial answer is kept, marked
    `interrupted`. Answers `{"cancelled": false}` when nothing was running."""
    await asyncio.to_thread(store.get_conversation, conversation_id)
    return CancelResult(cancelled=chat.cancel(conversation_id))
