"""Messages decoded from their stored text, kept for the next read.

Every read of a conversation's view (the context route, Model view, each turn's start)
decodes the same messages again: with 200 messages in view that was a third of a read,
and with ten answers streaming it was most of what made reads wait for the CPU.

The cache is keyed by what a message is decoded from, its role and the exact text of
its `parts` column, so it cannot serve a stale message: an edit, a prune, a fold's
rewrite, a doctor's repair or a hand edit of the database all change that text (or the
role), and the changed text is a different key. Nothing has to be told about writes,
and nothing has to be invalidated. Entries are evicted least recently used, within a
bound on the stored text they hold.

Only immutable values are shared: a message is kept when every field of every part is
a string, a number, a boolean or None. A tool call's `input` is a dict, which a caller
could change in place, so a message holding one is decoded afresh on every read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from foldline.core.messages import Message

MAX_CACHED_CHARS = 16 * 1024 * 1024
"""The stored text (keys) the cache may hold at once; the decoded messages take about
as much again."""

MAX_ENTRY_CHARS = MAX_CACHED_CHARS // 16
"""A larger message (a long tool output) is decoded on every read rather than evicting
a whole view's worth of small ones."""

_IMMUTABLE = (str, int, float, bool, type(None))


def shareable(message: Message) -> bool:
    """Whether every value the message holds is immutable, so one decoded copy can be
    handed to every reader and thread."""
    return all(
        isinstance(value, _IMMUTABLE) for part in message.parts for value in part.__dict__.values()
    )


class DecodedMessages:
    """A bounded, thread-safe cache of (role, parts text) -> decoded `Message`."""

    def __init__(
        self, max_chars: int = MAX_CACHED_CHARS, max_entry_chars: int = MAX_ENTRY_CHARS
    ) -> None:
        self.max_chars = max_chars
        self.max_entry_chars = max_entry_chars
        self._entries: OrderedDict[tuple[str, str], Message] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, role: str, parts_json: str, decode: Callable[[], Message]) -> Message:
        """The message stored as `parts_json` with `role`: the cached one, or `decode()`'s
        (kept when it is shareable and small enough)."""
        key = (role, parts_json)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        message = decode()
        if len(parts_json) > self.max_entry_chars or not shareable(message):
            return message
        with self._lock:
            if key not in self._entries:
                self._entries[key] = message
                self._chars += len(parts_json)
                while self._chars > self.max_chars:
                    (_role, text), _message = self._entries.popitem(last=False)
                    self._chars -= len(text)
        return message

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def chars(self) -> int:
        """The stored text the cache holds now."""
        return self._chars
