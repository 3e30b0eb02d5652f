"""`GET /api/conversations/{id}/context`: exactly what the model would see now."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from foldline.server.deps import ChatDep, StoreDep
from foldline.server.schemas import ContextOut

router = APIRouter(prefix="/api/conversations", tags=["context"])


@router.get("/{conversation_id}/context", response_model=ContextOut)
async def get_context(conversation_id: str, store: StoreDep, chat: ChatDep) -> dict[str, Any]:
    store.get_conversation(conversation_id)
    return await chat.context(conversation_id)
