"""A per-message count cache in front of a token counter, used by the turn loop.

Counting a 10,000-message view from scratch on every gate would dominate a turn, so the
count of each stored message is kept under the message's identity in the store, its id
and `updated_at`: a row that changes (a streamed answer, a prune) gets a new
`updated_at` and so a new entry, and the key stays a few dozen bytes however large the
message is. Messages that exist only in the view (the summary, a pruned result's
placeholder, a repaired batch) are counted afresh: they are few and small. Calibration
(`core.tokens.ScaledCounter`) is applied on top of the cache, so a new ratio after
every call does not invalidate it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from foldline.core.messages import Message, ToolSpec
from foldline.core.tokens import TokenCounter
from foldline.core.tokens.counter import media_tokens

StoredKey = tuple[str, str]
"""A stored message's identity: (message id, updated_at)."""


class CachedCounter:
    """A raw counter with cached counts of stored messages and of the system+tools framing.

    It is shared by every turn on the same model, and turns load their context in worker
    threads, so the cache is guarded by a lock.
    """

    def __init__(self, inner: TokenCounter, max_entries: int = 200_000) -> None:
        self.inner = inner
        self.exact = inner.exact
        self._stored: OrderedDict[StoredKey, int] = OrderedDict()
        self._framing: dict[tuple[str, str], int] = {}
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)

    def count_message(self, message: Message) -> int:
        return self.inner.count_message(message)

    def media_tokens(self, message: Message) -> int:
        return media_tokens(self.inner, message)

    def count_stored(self, message: Message, key: StoredKey | None) -> int:
        """The count of `message`, cached under `key` when it is a stored row as stored."""
        if key is None:
            return self.inner.count_message(message)
        with self._lock:
            cached = self._stored.get(key)
            if cached is not None:
                self._stored.move_to_end(key)
                return cached
        count = self.inner.count_message(message)
        with self._lock:
            self._stored[key] = count
            if len(self._stored) > self._max_entries:
                self._stored.popitem(last=False)
        return count

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return self.inner.count_tools(tools)

    def framing(self, system: str, tools: Sequence[ToolSpec]) -> int:
        key = (system, "|".join(tool.model_dump_json() for tool in tools))
        cached = self._framing.get(key)
        if cached is None:
            cached = self._framing[key] = self.inner.count_request(system, [], tools)
        return cached

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        return self.framing(system, tools) + sum(self.count_message(m) for m in messages)
