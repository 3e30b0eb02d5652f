"""Every conversation's fold gate in one chat service (`chat/fold_gate.py` is one
conversation's): made on first use, asked for status, cancelled, waited for, shut down."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from foldline.api.schemas_context import BackgroundFoldOut
from foldline.chat.background import average
from foldline.chat.fold_gate import ConversationFolds
from foldline.chat.store_writer import StoreWriter
from foldline.store import Store


@dataclass
class FoldGates:
    """Every conversation's fold gate in one chat service, and what they share: the
    store and its writer, the clock, and how long summaries take in this process."""

    store: Store
    writes: StoreWriter
    is_running: Callable[[str], bool]
    """Whether a turn or fold is running in a conversation (then commits wait for it)."""
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    summary_seconds: float | None = None
    """How long the background summaries took, a moving average (None: none timed yet)."""
    slot_of: Callable[[str], tuple[float, float] | None] = lambda _conversation_id: None
    """On a server that runs one request at a time: how long a background request holds
    it and how long it is free between turns, for the conversation (see `Pace`)."""
    one_request_at_a_time: Callable[[str], bool] = lambda _conversation_id: False
    """Whether the conversation's server is known to run one request at a time (its slots,
    as it stated them or as a cut stream showed), timed or not."""
    on_idle_commit: Callable[[str], None] = lambda _conversation_id: None
    """Called (on the event loop) when a fold was committed outside any turn, so the
    pages showing the conversation hear of it."""
    on_prepared: Callable[[str], None] = lambda _conversation_id: None
    """Called (on the event loop) when a summary prepared in the background became
    ready or was dropped, once its calls' calibration is stored: the conversation's
    count and its prepared fold's status changed, so the pages' meters are out of date."""
    conversations: dict[str, ConversationFolds] = field(default_factory=dict)

    def of(self, conversation_id: str) -> ConversationFolds:
        """The conversation's gate (made on first use; it lives as long as the service)."""
        folds = self.conversations.get(conversation_id)
        if folds is None:
            folds = ConversationFolds(conversation_id, self)
            self.conversations[conversation_id] = folds
        return folds

    def timed(self, seconds: float) -> None:
        """A background summary took `seconds`."""
        self.summary_seconds = average(self.summary_seconds, seconds)

    def status(self, conversation_id: str, version: int | None = None) -> BackgroundFoldOut | None:
        """A summary being prepared or ready for the conversation, or None. With the
        conversation's current fold `version`: None too when the summary was prepared
        on another one (a manual fold, an undo or a version switch came since), since
        it can no longer be used."""
        folds = self.conversations.get(conversation_id)
        return None if folds is None else folds.status(version)

    def cancel(self, conversation_id: str) -> None:
        """Stop and forget a conversation's background work (delete, close)."""
        folds = self.conversations.get(conversation_id)
        if folds is not None:
            folds.cancel()

    def idle(self, conversation_id: str) -> None:
        """A turn ended: a re-summary that became ready meanwhile is committed now."""
        folds = self.conversations.get(conversation_id)
        if folds is not None:
            folds.idle()

    async def wait(self, conversation_id: str) -> None:
        """Until the conversation's background work (if any) has finished and been
        handled (committed when idle, or left ready for the next gate)."""
        folds = self.conversations.get(conversation_id)
        if folds is not None:
            await folds.wait()
        await asyncio.sleep(0)

    async def shutdown(self) -> None:
        tasks = [task for folds in self.conversations.values() for task in folds.tasks()]
        for folds in self.conversations.values():
            folds.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
