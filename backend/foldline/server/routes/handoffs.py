"""Hand-offs ("New conversation from here"): a conversation that continues this one."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, status

from foldline.api.schemas import ConversationOut, HandoffRequest
from foldline.chat.handoff import HandoffRequest as Handoff
from foldline.server.deps import ChatDep, StoreDep
from foldline.server.routes.conversations import get_conversation

router = APIRouter(prefix="/api/conversations", tags=["handoffs"])


@router.post(
    "/{conversation_id}/handoff",
    response_model=ConversationOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        400: {"description": "No message to continue from (or not on the shown history)."},
        404: {"description": "No such conversation, or no such message in it."},
        409: {"description": "A turn or fold is running in this conversation."},
        502: {"description": "The summarizer failed; nothing was created."},
    },
)
async def hand_off(
    conversation_id: str, store: StoreDep, chat: ChatDep, body: HandoffRequest | None = None
) -> ConversationOut:
    """Create a conversation whose model view starts with a summary of this one up to
    `messageId` (the last message when left out), the pins of that part, and the last
    `keepLast` messages verbatim; the two are linked both ways."""
    body = body or HandoffRequest()
    # The chat service reads the store in worker threads (an unknown conversation is a
    # 404 from there); so is the new conversation read back.
    created = await chat.hand_off(
        conversation_id,
        Handoff(body.message_id, (body.instructions or "").strip() or None, body.keep_last),
    )
    return await asyncio.to_thread(get_conversation, created.id, store, chat)
