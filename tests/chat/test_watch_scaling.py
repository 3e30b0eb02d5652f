"""A change costs each open watch stream the new changes only, not every change kept.

With 1,000 pages watching, each change once made every stream scan all 1,000 kept
changes (a million steps per change, ~0.7 s for everyone). Counted here as the changes a
stream's read looks at, not as time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from typing import Any

from foldline.chat.watching import KEPT_CHANGES, ConversationWatch


class _CountingDeque(deque):  # type: ignore[type-arg]
    looked_at = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            _CountingDeque.looked_at += 1
            yield item

    def __reversed__(self) -> Iterator[Any]:
        for item in super().__reversed__():
            _CountingDeque.looked_at += 1
            yield item


def test_a_stream_reads_only_the_new_changes() -> None:
    watch = ConversationWatch()
    watch._changes = _CountingDeque(maxlen=KEPT_CHANGES)
    for n in range(KEPT_CHANGES + 50):
        watch.changed(f"c{n % 7}", "updated")
    seen = watch.revision - 1

    async def read() -> list[Any]:
        return await watch.changes_after(seen)

    _CountingDeque.looked_at = 0
    changes = asyncio.run(read())
    assert [change.revision for change in changes] == [watch.revision]
    assert _CountingDeque.looked_at <= 2
    # A reader far behind still gets every kept change after it, in order, and a note
    # of what it missed.
    behind = asyncio.run(watch.changes_after(10))
    assert behind[0].kind == "missed"
    revisions = [change.revision for change in behind[1:]]
    assert revisions == list(range(watch.revision - KEPT_CHANGES + 1, watch.revision + 1))
