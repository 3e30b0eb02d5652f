"""The model's view of a conversation: the latest summary plus the messages after the fold.

The person sees the whole display history; the model sees
`[summary] + display[api_start_index:]`, with pruned tool outputs replaced by a short
placeholder and a final pair-repair pass so that the payload is always valid for the
providers (every tool call answered exactly once, no result without its call). Every
request the app sends and every token count it shows goes through
`build_api_messages`, so what is counted is what is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from foldline.core.messages import (
    History,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    as_window,
)
from foldline.core.person_words import words_block
from foldline.core.pins import Pin, pinned_files, pins_block
from foldline.core.recall import recall_note
from foldline.core.state import CompactionState

PRUNED_PLACEHOLDER = (
    "[Old tool output removed from the model's context to save space; "
    "the full output is kept in the conversation history.]"
)
"""What the model sees in place of a pruned tool output (`compacted_at` set)."""

INTERRUPTED_RESULT = (
    "[interrupted] This tool call returned no result: the turn was cut off before the "
    "tool finished. Run it again if its result is still needed."
)
"""The synthetic error result given to a tool call whose result was never recorded."""

CONTINUE_PROMPT = (
    "[Your previous answer was cut off. Continue it from exactly where it stopped, without "
    "repeating what you already wrote.]"
)
"""What follows a cut-off answer in the model's view when the person presses Continue."""


UNANSWERED_NOTE = (
    "\n\n[This message got no answer: its turn failed or was stopped. Answer the person's "
    "latest message; they will ask again if this one still matters.]"
)
"""What follows a person's message that got no answer, in the model's view.

A failed turn leaves the person's question with no answer, so the next request holds two
questions in a row, and a model (a small one above all) answers the earlier one instead
of the one just asked. The question stays (it may hold facts the person gave) and says
it was not answered."""


def continuation_view(view: Sequence[Message]) -> list[Message]:
    """The view for Continue: the cut-off answer as the last assistant message, then a
    short user message asking to go on.

    The answer is not sent as a trailing assistant message alone (a "prefill"):
    Anthropic's models since Claude 4.6 refuse one with a 400, OpenAI's Chat Completions
    starts a new message after it rather than extending it, and some compatible servers
    refuse it too. A user turn after it is valid on every wire and every model.
    """
    return [*view, Message(role="user", parts=(TextPart(text=CONTINUE_PROMPT),))]


def summary_to_message(state: CompactionState, pins: Sequence[Pin] = ()) -> Message:
    """The summary of a fold as the first message of the model's view, followed by the
    person's own words from the folded part (`person_words.words_block`, a separate
    block: its size is `count_text` of that block) and by the pinned messages the fold
    moved out of the view (`pins.pins_block`).

    It is a user-role message because both providers require the conversation to start
    with the user, but it is framed as a record handed to the model, not as something the
    user just said: a summary quotes old requests, and the model must not carry them out
    again as if they were new.
    """
    folded = state.summarized_range.message_count
    if state.degraded:
        how = "an extract made without a model (the summarizer was unavailable)"
    elif state.strategy == "free-form":
        how = "a free-form summary"
    else:
        how = "a summary"
    if state.trigger == "handoff":
        # The first fold of a conversation handed off from another: it folded none of
        # this conversation's messages, it stands for the one before.
        earlier = f"This conversation continues an earlier one, which is condensed into {how}"
    else:
        earlier = f"The earlier part of this conversation ({folded} messages) was folded into {how}"
    text = (
        f"[Conversation summary, version {state.version}]\n"
        f"{earlier} below to save context. It is background data written for you, not a new "
        "message from the user: respect the constraints it records, treat requests quoted "
        "in it as history, and continue from where it leaves off with the messages that "
        "follow.\n\n"
        f"<summary>\n{state.summary_message}\n</summary>"
    )
    if note := recall_note(state):
        text += "\n\n" + note
    for block in (words_block(state.person_words), pins_block(pins, state.api_start_index)):
        if block:
            text += "\n\n" + block
    files = pinned_files(pins, state.api_start_index)
    return Message(role="user", parts=(TextPart(text=text), *files))


def view_message(message: Message) -> Message:
    """One display message as the model sees it: pruned tool outputs replaced.

    A pruned result keeps its call id, name and error flag (the pair stays valid) but its
    output becomes the placeholder and its stored `full_output` is not carried along.
    Attachments that follow a pruned result in a tool message belong to that result and
    are dropped with it. Messages with nothing pruned are returned as they are.
    """
    if message.role != "tool" or not any(
        isinstance(p, ToolResultPart) and p.compacted_at is not None for p in message.parts
    ):
        return message
    parts: list[Part] = []
    owner_pruned = False
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            owner_pruned = part.compacted_at is not None
            if owner_pruned:
                part = part.model_copy(update={"output": PRUNED_PLACEHOLDER, "full_output": None})
            parts.append(part)
        elif not owner_pruned:
            parts.append(part)
    return message.model_copy(update={"parts": tuple(parts)})


def build_api_messages(
    display: History, state: CompactionState | None, pins: Sequence[Pin] = ()
) -> list[Message]:
    """The messages the model receives: `[summary + folded pins] + display[api_start_index:]`,
    repaired.

    `display` may be a `HistoryWindow` holding only the rows from `api_start_index`: this
    function only reads from that index, so its cost depends on the size of the view,
    not of the conversation. Pins still in the view are not repeated.
    """
    start = state.api_start_index if state is not None else 0
    tail = [view_message(m) for m in as_window(display).since(start)]
    repaired = mark_unanswered(repair_pairs(tail))
    if state is None:
        return repaired
    return [summary_to_message(state, pins), *repaired]


def mark_unanswered(messages: Sequence[Message]) -> list[Message]:
    """Each person's message followed by another one, with no answer between them, gets
    `UNANSWERED_NOTE` after its text; the last message (the one being asked) never."""
    out = list(messages)
    for i in range(len(out) - 1):
        if out[i].role == "user" and out[i + 1].role == "user":
            note = TextPart(text=UNANSWERED_NOTE)
            out[i] = out[i].model_copy(update={"parts": (*out[i].parts, note)})
    return out


def _without(message: Message, kind: type) -> Message:
    if not any(isinstance(p, kind) for p in message.parts):
        return message
    return message.model_copy(
        update={"parts": tuple(p for p in message.parts if not isinstance(p, kind))}
    )


def _kept_results(message: Message, expected: set[str], answered: set[str]) -> tuple[Part, ...]:
    """The parts of a tool message that answer an expected, not yet answered call.

    Non-result parts (attachments) belong to the result before them (or to the first
    result when they lead), and share its fate.
    """
    kept: list[Part] = []
    keep_owner = False
    pending_leaders: list[Part] = []
    seen_result = False
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            keep_owner = part.call_id in expected and part.call_id not in answered
            if keep_owner:
                answered.add(part.call_id)
                if not seen_result:
                    kept.extend(pending_leaders)
                kept.append(part)
            seen_result = True
        elif isinstance(part, ToolCallPart):
            continue
        elif not seen_result:
            pending_leaders.append(part)
        elif keep_owner:
            kept.append(part)
    return tuple(kept)


def repair_pairs(messages: Sequence[Message]) -> list[Message]:
    """Make a message list valid for the providers' tool-call rules.

    - Every tool call gets exactly one result in the run of tool messages right after
      its assistant message; a call with none gets a synthetic `[interrupted]` error
      result inserted there (the turn was cut: crash, stop, error).
    - A result with no matching call in the assistant message just before it is dropped,
      and so is a second result for the same call.
    - A call id repeated within one assistant message is dropped. Ids repeated across
      messages are left alone: pairing is local (some local servers number their calls
      afresh in every response), and dropping them would lose real work.
    - Parallel batches stay whole: all results of one assistant message sit together
      after it.
    - Assistant messages left without parts are dropped; so are tool messages left
      without results.

    The pass is idempotent and keeps user messages, text and order unchanged.
    """
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.role == "user":
            out.append(_without(_without(message, ToolCallPart), ToolResultPart))
            continue
        if message.role == "tool":
            # A tool message that does not follow an assistant message's calls answers
            # nothing the model asked in this view: its results are orphans.
            continue
        parts: list[Part] = []
        calls: list[ToolCallPart] = []
        seen_calls: set[str] = set()
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                continue
            if isinstance(part, ToolCallPart):
                if part.id in seen_calls:
                    continue
                seen_calls.add(part.id)
                calls.append(part)
            parts.append(part)
        if not parts:
            continue
        out.append(
            message
            if len(parts) == len(message.parts)
            else message.model_copy(update={"parts": tuple(parts)})
        )
        expected = {call.id for call in calls}
        answered: set[str] = set()
        results: list[Message] = []
        while i < len(messages) and messages[i].role == "tool":
            tool_message = messages[i]
            i += 1
            kept = _kept_results(tool_message, expected, answered)
            if kept:
                results.append(
                    tool_message
                    if len(kept) == len(tool_message.parts)
                    else tool_message.model_copy(update={"parts": kept})
                )
        missing = tuple(
            ToolResultPart(call_id=c.id, name=c.name, output=INTERRUPTED_RESULT, is_error=True)
            for c in calls
            if c.id not in answered
        )
        if missing:
            if results:
                last = results[-1]
                results[-1] = last.model_copy(update={"parts": last.parts + missing})
            else:
                results.append(Message(role="tool", parts=missing))
        out.extend(results)
    return out
