"""The person's message as a send or an edit makes it, checked before anything is
stored, and the errors that refuse a request before its turn starts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from foldline.chat.context import ConversationContext
from foldline.core.attachments import AttachmentRefused, settle_pdf_form
from foldline.core.json_values import without_lone_surrogates
from foldline.core.messages import AttachmentPart, Message, TextPart
from foldline.core.tokens.counter import media_tokens
from foldline.uploads import IncomingFile, PdfsRead, read_attachments


class TurnInProgress(Exception):
    """A second turn or fold was asked for while one is running (HTTP 409)."""


class ChatUnavailable(Exception):
    """The turn cannot start: no model chosen, or its provider is not configured (HTTP 400)."""


class WrongMessage(Exception):
    """The message is of the wrong kind: an edit of an answer, a regenerate of a question
    (HTTP 400)."""


def person_message(
    load: Callable[[], ConversationContext],
    content: str,
    files: Sequence[IncomingFile],
    *,
    kept: Sequence[AttachmentPart] = (),
    pdfs: PdfsRead | None = None,
) -> Message:
    """The person's message: the text, the new files and the `kept` ones (already
    stored). Every new file is checked (its bytes, the model, the providers' limits;
    `AttachmentRefused` otherwise) and the whole message must be small enough to be
    sent at all, before anything is stored."""
    if not content.strip() and not files and not kept:
        raise ChatUnavailable("The message is empty.")
    text = (TextPart(text=without_lone_surrogates(content)),) if content.strip() else ()
    if not files and not kept:
        return Message(role="user", parts=text)
    ctx = load()
    parts = tuple(
        # A PDF whose page images would crowd the window goes as its text.
        settle_pdf_form(
            part,
            media_tokens(ctx.counter, Message(role="user", parts=(part,))),
            ctx.budget.input_budget,
        )
        for part in read_attachments(
            files, model=ctx.model.model, vision=ctx.model.vision, pdfs=pdfs
        )
    )
    message = Message(role="user", parts=(*text, *kept, *parts))
    # A fold can make room for anything but a message that alone (with the system
    # prompt and tools) is larger than what the model reads per request.
    budget = ctx.budget.window_budget
    cost = ctx.counter.count_message(message)
    base = ctx.counter.count_request(ctx.system, [], ctx.tools)
    if budget is not None and base + cost > budget:
        raise AttachmentRefused(
            f"with its files this message is about {cost:,} tokens; with the system "
            f"prompt and tools that is over the {budget:,} tokens {ctx.model.model} "
            "reads per request; attach fewer or smaller files"
        )
    return message
