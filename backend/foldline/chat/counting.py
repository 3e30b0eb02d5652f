"""A per-message cache in front of a token counter, used by the turn loop.

Counting a 10,000-message view from scratch on every gate would dominate a turn, so
per-message counts are cached by the message's JSON (a frozen value: same JSON, same
count). Calibration (`core.tokens.ScaledCounter`) is applied on top of the cache, so a
new ratio after every call does not invalidate it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from foldline.core.messages import Message, ToolSpec
from foldline.core.tokens import TokenCounter


class CachedCounter:
    """Memoizes `count_message` (LRU) and the system+tools framing of a raw counter."""

    def __init__(self, inner: TokenCounter, max_entries: int = 200_000) -> None:
        self.inner = inner
        self.exact = inner.exact
        self._messages: OrderedDict[str, int] = OrderedDict()
        self._framing: dict[tuple[str, str], int] = {}
        self._max_entries = max_entries

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)

    def count_message(self, message: Message) -> int:
        key = message.model_dump_json()
        cached = self._messages.get(key)
        if cached is not None:
            self._messages.move_to_end(key)
            return cached
        count = self.inner.count_message(message)
        self._messages[key] = count
        if len(self._messages) > self._max_entries:
            self._messages.popitem(last=False)
        return count

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return self.inner.count_tools(tools)

    def framing(self, system: str, tools: Sequence[ToolSpec]) -> int:
        key = (system, "|".join(tool.model_dump_json() for tool in tools))
        if key not in self._framing:
            self._framing[key] = self.inner.count_request(system, [], tools)
        return self._framing[key]

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        return self.framing(system, tools) + sum(self.count_message(m) for m in messages)
