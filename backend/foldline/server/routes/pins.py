"""Pins: the messages the person keeps in the model's view verbatim, whatever is folded."""

from __future__ import annotations

from fastapi import APIRouter

from foldline.api.schemas import PinsOut
from foldline.chat.service import ChatService
from foldline.core.pins import Pin, pins_tokens
from foldline.server.deps import ChatDep, StoreDep
from foldline.server.errors import ApiError
from foldline.server.routes.conversations import pin_out
from foldline.store import Store

router = APIRouter(prefix="/api/conversations", tags=["pins"])

PIN_RESPONSES: dict[int | str, dict] = {
    404: {"description": "No such conversation, or no such message in it."},
    422: {"description": "The pins together would take more than their cap."},
}


def _check_message(store: Store, chat: ChatService, conversation_id: str, message_id: str) -> None:
    store.get_conversation(conversation_id)
    running = chat.running_turn(conversation_id)
    if running is not None and running.kind == "handoff":
        # The hand-off copies the pins of the part it covers when it finishes.
        raise ApiError(
            409, "turn_in_progress", "Wait for the hand-off to finish before changing pins."
        )
    if store.get_message(message_id).conversation_id != conversation_id:
        raise ApiError(404, "not_found", f"No message {message_id} in this conversation.")


def _pins_out(store: Store, chat: ChatDep, conversation_id: str) -> PinsOut:
    ctx = chat.load_context(conversation_id)
    return PinsOut(
        pins=[pin_out(pin) for pin in store.list_pins(conversation_id)],
        pinned_tokens=ctx.pinned_tokens,
        cap_tokens=ctx.pins_cap,
    )


@router.post(
    "/{conversation_id}/messages/{message_id}/pin",
    response_model=PinsOut,
    responses=PIN_RESPONSES,
)
def pin_message(conversation_id: str, message_id: str, store: StoreDep, chat: ChatDep) -> PinsOut:
    """Pin a message: it reaches the model verbatim in every request from now on, in a
    "Pinned by the person" block after the summary once a fold has moved it out of the
    view. Refused (422) when all pins together would exceed their cap."""
    _check_message(store, chat, conversation_id, message_id)
    ctx = chat.load_context(conversation_id)
    record = store.get_message(message_id)
    pins = [pin for pin in ctx.pins if pin.index != record.seq]
    # The message with its files' bytes, which count as they will be sent.
    [message] = store.hydrate([record.message])
    tokens = pins_tokens(
        [*pins, Pin(record.seq, message)], ctx.counter.count_text, ctx.counter.count_message
    )
    if tokens > ctx.pins_cap:
        raise ApiError(
            422,
            "pins_over_cap",
            f"This pin is refused: with it, the pinned messages would take {tokens:,} tokens "
            f"of every request, over their cap of {ctx.pins_cap:,} (15% of what the model "
            "can read). Unpin another message, or pin a shorter one.",
        )
    store.set_pinned(conversation_id, message_id, True)
    return _pins_out(store, chat, conversation_id)


@router.delete(
    "/{conversation_id}/messages/{message_id}/pin",
    response_model=PinsOut,
    responses=PIN_RESPONSES,
)
def unpin_message(conversation_id: str, message_id: str, store: StoreDep, chat: ChatDep) -> PinsOut:
    """Unpin a message (unpinning one that is not pinned does nothing)."""
    _check_message(store, chat, conversation_id, message_id)
    store.set_pinned(conversation_id, message_id, False)
    return _pins_out(store, chat, conversation_id)
