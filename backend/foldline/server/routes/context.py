"""`GET /api/conversations/{id}/context`: exactly what the model would see now."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Response

from foldline.api.schemas_context import ContextOut
from foldline.server.deps import ChatDep, StoreDep

router = APIRouter(prefix="/api/conversations", tags=["context"])


@router.get("/{conversation_id}/context", response_model=ContextOut)
async def get_context(
    conversation_id: str,
    store: StoreDep,
    chat: ChatDep,
    messages: Annotated[
        bool, Query(description="include the view's messages (`apiMessages`)")
    ] = True,
    model: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="count the view for this model instead of the conversation's "
            "(what switching to it would show: the same numbers the meter then shows)",
        ),
    ] = None,
    provider: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="with `model`: the configured provider that would serve it",
        ),
    ] = None,
) -> Response:
    # Counting a long view takes milliseconds, so it runs in a worker thread instead of
    # stalling the event loop that carries open streams; the answer is serialized
    # there too, in the same hop (a plain `def` route took two: one to run, one to
    # check the returned model).
    # `messages=false` is for the meter: the numbers are the same, but the view's
    # messages (megabytes on a long conversation) are neither serialized nor sent.
    def read() -> bytes:
        store.get_conversation(conversation_id)
        out = chat.context(
            conversation_id, include_messages=messages, model=model, provider=provider
        )
        return out.model_dump_json().encode()

    return Response(await asyncio.to_thread(read), media_type="application/json")
