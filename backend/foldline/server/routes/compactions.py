"""Folds: every version, a preview of the next one, undo and redo, and a manual fold
(SSE)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from foldline.api.schemas import (
    CompactionList,
    CompactionOut,
    CompactionVersionOut,
    CompactRequest,
    FoldCostOut,
    UndoResult,
)
from foldline.api.schemas_context import CompactionPreview
from foldline.chat.turn_handle import TurnHandle
from foldline.core.settings import MAX_TOKENS
from foldline.server.deps import ChatDep, StoreDep
from foldline.server.errors import ApiError
from foldline.server.routes.messages import SSE_RESPONSES
from foldline.server.sse import turn_event_stream
from foldline.store.records import ConcurrentFold, NotFound
from foldline.store.redo import FoldCannotBeRedone

router = APIRouter(prefix="/api/conversations", tags=["compactions"])


@router.get("/{conversation_id}/compactions", response_model=CompactionList)
def list_compactions(conversation_id: str, store: StoreDep) -> CompactionList:
    store.get_conversation(conversation_id)
    records = store.list_compactions(conversation_id, active_path_only=True)
    costs = store.fold_usage(conversation_id)
    items = [
        CompactionVersionOut.model_validate(
            record.state.model_dump()
            | {
                "fold_cost": FoldCostOut.of(record.state),
                "is_current": record.is_current,
                "parent_version": record.parent_version,
                "usage": vars(costs[record.state.version])
                if record.state.version in costs
                else None,
                "files": store.folded_file_names(
                    conversation_id,
                    record.state.summarized_range.from_index,
                    record.state.summarized_range.to_index,
                ),
            }
        )
        for record in records
    ]
    current = next((item.version for item in items if item.is_current), 0)
    return CompactionList(
        items=items, current_version=current, redo_version=store.redo_version(conversation_id)
    )


@router.get("/{conversation_id}/compactions/preview", response_model=CompactionPreview)
def preview_compaction(
    conversation_id: str,
    store: StoreDep,
    chat: ChatDep,
    keep_recent_tokens: Annotated[
        int | None,
        Query(
            alias="keepRecentTokens",
            ge=0,
            le=MAX_TOKENS,
            description="as in `POST …/compact`; left out: only the last exchange is kept",
        ),
    ] = None,
) -> CompactionPreview:
    """What a manual fold started now would fold: message count and tokens."""
    store.get_conversation(conversation_id)
    return chat.preview_compaction(conversation_id, keep_recent_tokens)


@router.post("/{conversation_id}/compactions/{version}/undo", response_model=UndoResult)
def undo_compaction(
    conversation_id: str,
    version: Annotated[int, Path(ge=1, le=2**31)],
    store: StoreDep,
    chat: ChatDep,
) -> UndoResult:
    store.get_conversation(conversation_id)
    if chat.is_running(conversation_id):
        raise ApiError(
            409, "turn_in_progress", "Wait for the running reply to finish before undoing a fold."
        )
    current = store.current_compaction(conversation_id)
    if current is None or current.version != version:
        known = {record.state.version for record in store.list_compactions(conversation_id)}
        if version not in known:
            raise ApiError(404, "not_found", f"This conversation has no fold version {version}.")
        raise ApiError(
            409, "not_current", f"Fold {version} is not the current one; undo that first."
        )
    if current.trigger == "handoff":
        # It is where this conversation starts: without it the model would know nothing of
        # the conversation it continues.
        raise ApiError(
            400,
            "handoff_fold",
            "This summary is what the conversation continues from; it cannot be undone.",
        )
    state = store.undo_fold(conversation_id, version)
    return UndoResult(compaction=CompactionOut.from_state(state) if state else None)


@router.post("/{conversation_id}/compactions/{version}/redo", response_model=CompactionOut)
def redo_compaction(
    conversation_id: str,
    version: Annotated[int, Path(ge=1, le=2**31)],
    store: StoreDep,
    chat: ChatDep,
) -> CompactionOut:
    """Make an undone fold current again, summary and all: no model call."""
    store.get_conversation(conversation_id)
    if chat.is_running(conversation_id):
        raise ApiError(
            409, "turn_in_progress", "Wait for the running reply to finish before redoing a fold."
        )
    try:
        state = store.redo_fold(conversation_id, version)
    except NotFound as error:
        raise ApiError(
            404, "not_found", f"This conversation has no fold version {version}."
        ) from error
    except ConcurrentFold as error:
        raise ApiError(
            409,
            "not_redoable",
            f"Fold {version} is not the one last undone here; fold again instead.",
        ) from error
    except FoldCannotBeRedone as error:
        raise ApiError(409, "history_changed", f"{error} Fold again instead.") from error
    return CompactionOut.from_state(state)


async def start_compaction_turn(
    conversation_id: str,
    chat: ChatDep,
    body: Annotated[CompactRequest | None, Body()] = None,
) -> TurnHandle:
    instructions = body.instructions.strip() if body and body.instructions else None
    keep = body.keep_recent_tokens if body else None
    return await chat.start_compaction(conversation_id, instructions or None, keep)


@router.post(
    "/{conversation_id}/compact",
    response_class=EventSourceResponse,
    responses=SSE_RESPONSES,
)
async def compact(
    turn: Annotated[TurnHandle, Depends(start_compaction_turn)],
) -> AsyncIterator[ServerSentEvent]:
    async for event in turn_event_stream(turn):
        yield event
