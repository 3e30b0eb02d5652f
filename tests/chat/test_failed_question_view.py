"""A question whose turn failed is marked in the next request, so the model answers the
question just asked and not the earlier one (what a small local model did after a
compact)."""

from __future__ import annotations

from foldline.core.messages import Message
from foldline.core.view import UNANSWERED_NOTE, build_api_messages
from foldline.providers.base import ProviderError
from foldline.store import Store
from foldline.testing import ScriptedModel, error_step, text_step


async def collect(handle) -> list:
    return [event async for event in handle.events()]


async def test_the_failed_question_is_marked_in_the_next_request(
    store: Store, make_service
) -> None:
    model = ScriptedModel(
        error_step(ProviderError("bad_request", "the server refused it")),
        text_step("Paris."),
    )
    service = make_service(model)
    conversation = store.create_conversation()
    first = await collect(await service.start_turn(conversation.id, "What is the tallest tree?"))
    assert any(event.name == "error" for event in first)
    await collect(await service.start_turn(conversation.id, "What is the capital of France?"))
    sent: list[Message] = list(model.calls[-1].messages)
    users = [m for m in sent if m.role == "user"]
    assert users[-1].text == "What is the capital of France?"
    assert "What is the tallest tree?" in users[-2].text
    assert UNANSWERED_NOTE in users[-2].text
    assert UNANSWERED_NOTE not in users[-1].text


def test_only_questions_followed_by_another_question_are_marked() -> None:
    from foldline.core.messages import TextPart

    def say(role: str, text: str) -> Message:
        return Message(role=role, parts=(TextPart(text=text),))  # type: ignore[arg-type]

    view = build_api_messages(
        [say("user", "a"), say("assistant", "A"), say("user", "b"), say("user", "c")], None
    )
    assert [UNANSWERED_NOTE in m.text for m in view] == [False, False, True, False]
