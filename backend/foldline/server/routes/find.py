"""Find in one conversation (the find bar): every matching message, on every page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from foldline.api.schemas import FindResult, SearchHitOut
from foldline.server.deps import StoreDep

router = APIRouter(prefix="/api/conversations", tags=["find"])


@router.get("/{conversation_id}/search", response_model=FindResult)
def find_in_conversation(
    conversation_id: str,
    store: StoreDep,
    q: Annotated[str, Query(min_length=1, max_length=500, description="the terms to find")],
    branches: Annotated[
        bool, Query(description="also the messages of other versions (branches)")
    ] = False,
) -> FindResult:
    store.get_conversation(conversation_id)
    hits = store.find_in_conversation(conversation_id, q, every_branch=branches)
    return FindResult(
        items=[
            SearchHitOut(
                index=hit.seq,
                snippet=hit.snippet,
                message_id=hit.message_id,
                on_active_path=hit.on_active_path,
            )
            for hit in hits
        ]
    )
