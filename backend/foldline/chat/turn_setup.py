"""What a turn is made of: the parts the chat service shares with every turn, and the
conversation's own (its config and the models serving it)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from foldline.api.events import MessageEvent
from foldline.chat.context import ContextLoader, ConversationContext
from foldline.chat.events import ChatEvent
from foldline.chat.fold_gate import ConversationFolds
from foldline.chat.store_writer import StoreWriter
from foldline.chat.titles import BackgroundTitles
from foldline.chat.tool_registry import ToolRegistry
from foldline.config import AppConfig
from foldline.providers.base import Provider
from foldline.store import MessageRecord, Store


@dataclass(frozen=True)
class TurnServices:
    """The chat service's parts every turn uses, the same for every conversation."""

    store: Store
    writes: StoreWriter
    """Every write of a turn, in one thread, in order."""
    loader: ContextLoader
    titles: BackgroundTitles
    tools: Callable[[], ToolRegistry]
    """The tools offered now (asked again each batch: a tool server may come up)."""
    prepare_tools: Callable[[], Awaitable[list[ChatEvent]]] | None = None
    """Starts the tool servers a turn needs; its events are the turn's first."""
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """A retry's back-off (tests pass one that does not wait)."""


@dataclass(frozen=True)
class ConversationSetup:
    """One conversation as its turns run it: its config, the models serving it and its
    fold gate."""

    conversation_id: str
    config: AppConfig
    """The conversation's view of the saved config (its project's and own settings)."""
    provider: Provider
    summarizer: Provider
    summary_model: str
    """The model summaries and titles are written by (`[compaction] model`, else the
    conversation's)."""
    folds: ConversationFolds


async def message_event(
    store: Store, conversation_id: str, record: MessageRecord, ctx: ConversationContext
) -> MessageEvent:
    """The message as an event, with its siblings (an edit's or a regenerated answer's
    versions, for the switcher), read in a worker thread."""
    by_message = await asyncio.to_thread(store.sibling_ids, conversation_id, [record.id])
    return MessageEvent.of(record, ctx.start_index, by_message.get(record.id))
