"""Hand-offs ("New conversation from here"): the chat layer's side.

It reads the old conversation around the chosen message, decides what the summary is
(`core.handoff`: an existing fold's, or a fresh one written by the summarizer with the
person's instructions), and writes the new conversation in one transaction: the kept
messages, the summary as its first fold, the kept messages' pins, the link back. The
summarizer's calls are stored as the cost of the new conversation's first fold.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Collection
from dataclasses import dataclass, replace

from foldline.api.schemas import MAX_TITLE_CHARS
from foldline.chat.context import ConversationContext
from foldline.chat.folding import FoldMaker, utc_now
from foldline.chat.summarizer import make_summarizer, within_summarizer_window
from foldline.chat.usage import SummaryUsage
from foldline.core.compaction import Summarizer
from foldline.core.fold_inputs import FoldInputs
from foldline.core.handoff import (
    base_fold,
    fresh_handoff_state,
    handoff_bounds,
    reusable_fold,
    reused_handoff_state,
)
from foldline.core.messages import HistoryWindow
from foldline.core.state import CompactionState
from foldline.store import CompactionRecord, ConversationRecord, NotFound, Store

LOOK_AROUND = 64
"""Messages read past the kept ones on each side, to keep a call with its results."""


class HandoffFailed(Exception):
    """The summary for the new conversation could not be written; nothing was created."""


class HandoffStopped(Exception):
    """The hand-off was stopped (Stop, or its conversation deleted) before it finished."""


class NothingToHandOff(Exception):
    """The conversation has no message yet, or the message is not on the shown history."""


@dataclass(frozen=True)
class HandoffRequest:
    message_id: str | None
    instructions: str | None
    keep_last: int


_CONTINUED = re.compile(r" \(continued(?: (\d+))?\)$")


def continued_title(title: str, taken: Collection[str] = ()) -> str:
    """`Title (continued)`, then `Title (continued 2)`... for a hand-off of a hand-off, so
    a chain of them does not pile up suffixes; never one of the `taken` titles (the
    conversation's earlier hand-offs), so two hand-offs of one conversation are told
    apart."""
    found = _CONTINUED.search(title)
    number = 1 if found is None else int(found.group(1) or 1) + 1
    if found is not None:
        title = title[: found.start()]
    while True:
        suffix = " (continued)" if number == 1 else f" (continued {number})"
        candidate = title[: MAX_TITLE_CHARS - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        number += 1


def fold_chain(records: list[CompactionRecord]) -> list[CompactionState]:
    """The current fold and the ones it stacks on, newest first (the folds that apply)."""
    by_version = {record.state.version: record for record in records}
    current = next((record for record in records if record.is_current), None)
    chain: list[CompactionState] = []
    while current is not None and current.state.version not in {s.version for s in chain}:
        chain.append(current.state)
        current = by_version.get(current.parent_version)
    return chain


def _point(store: Store, conversation: ConversationRecord, message_id: str | None) -> int:
    if conversation.message_count == 0:
        raise NothingToHandOff("The conversation has no messages to continue from yet.")
    if message_id is None:
        return conversation.message_count - 1
    record = store.get_message(message_id)
    if record.conversation_id != conversation.id:
        raise NotFound(f"no message {message_id!r} in this conversation")
    shown = store.list_messages(conversation.id, offset=record.seq, limit=1)
    if not shown or shown[0].id != message_id:
        raise NothingToHandOff("That message is not on the history shown now.")
    return record.seq


async def _fresh_summary(
    old: FoldInputs,
    new: FoldInputs,
    cut: int,
    instructions: str | None,
    maker: FoldMaker,
    usage: SummaryUsage,
) -> CompactionState | None:
    """`fresh_handoff_state`, within the summarizer's window as a fold's summary is."""

    async def write(inputs: FoldInputs, summarize: Summarizer) -> CompactionState | None:
        return await fresh_handoff_state(
            inputs, new, cut=cut, summarize=summarize, instructions=instructions
        )

    summarize = make_summarizer(maker.summarizer_provider, maker.summarizer_model, usage.add)
    return await within_summarizer_window(write, old, summarize, lambda state: state is None)


async def hand_off(
    store: Store,
    ctx: ConversationContext,
    request: HandoffRequest,
    *,
    maker: FoldMaker,
) -> ConversationRecord:
    """Create the new conversation; `ctx` is the old one's context as loaded now; its
    summary is written by `maker`'s summarizer, billed as the fold maker's."""
    conversation = ctx.conversation
    point = await asyncio.to_thread(_point, store, conversation, request.message_id)
    low = max(point + 1 - request.keep_last - LOOK_AROUND, 0)
    around = await asyncio.to_thread(
        store.list_messages, conversation.id, offset=low, limit=point + LOOK_AROUND - low + 1
    )
    window = HistoryWindow(low, tuple(record.message for record in around))
    bounds = handoff_bounds(window, point, request.keep_last)
    kept = around[bounds.cut - low : bounds.end - low]
    now = utc_now()
    chain = fold_chain(await asyncio.to_thread(store.list_compactions, conversation.id))
    new = FoldInputs(
        window=HistoryWindow(0, tuple(record.message for record in kept)),
        state=None,
        counter=ctx.counter,
        system=ctx.system,
        # The new conversation starts folded when there is a summary: its tools are those.
        tools=tuple(ctx.counted_tools_after_fold),
        budget=ctx.budget,
        settings=ctx.settings,
        now=now,
    )
    usage = maker.summary_usage()
    reusable = None if request.instructions else reusable_fold(chain, bounds.cut)
    state: CompactionState | None = None
    if reusable is not None:
        state = reused_handoff_state(reusable, ctx.pins, now=now)
    elif bounds.cut > 0:
        base = base_fold(chain, bounds.cut)
        start = base.api_start_index if base is not None else 0
        folded = await asyncio.to_thread(
            store.list_messages, conversation.id, offset=start, limit=bounds.cut - start
        )
        old = replace(
            maker.fold_inputs(ctx),
            window=HistoryWindow(start, tuple(record.message for record in folded)),
            state=base,
            now=now,
        )
        state = await _fresh_summary(old, new, bounds.cut, request.instructions, maker, usage)
        if state is None:
            raise HandoffFailed(
                "The summary for the new conversation could not be written (the summarizer "
                "failed); nothing was created. Try again."
            )
    if state is not None:
        state = state.model_copy(
            update={
                "tokens_before": ctx.tokens,
                "tokens_after": new.planner().view_tokens(0, state),
            }
        )
    pins_now = await asyncio.to_thread(store.list_pins, conversation.id)
    pinned = {pin.seq: pin.pinned_at for pin in pins_now}
    copies = [replace(record, seq=offset) for offset, record in enumerate(kept)]
    pins = {
        offset: pinned[record.seq] for offset, record in enumerate(kept) if record.seq in pinned
    }
    origin_message = around[bounds.end - 1 - low].id
    _, earlier = await asyncio.to_thread(store.conversation_links, conversation.id)
    title = continued_title(conversation.title, {link.title for link in earlier})
    created = await maker.writes.run(
        store.create_handoff,
        replace(conversation, title=title),
        origin_message,
        copies,
        state,
        pins,
    )
    if usage.usages:
        await maker.writes.run(store.record_calls, created.id, usage.calls(0, 1))
    return created
