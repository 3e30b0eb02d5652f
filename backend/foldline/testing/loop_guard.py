"""A store that refuses to be called on an event loop, for tests of the store rule.

The store is synchronous and one event loop serves every conversation's stream, so the
chat layer and the routes that start work read the store in worker threads and write it
through the ordered `StoreWriter`. `LoopGuard` makes every public method of one store
raise while it is armed and called on a thread where an event loop is running: the test's
own loop for a chat service driven directly, the test client's loop for the HTTP routes.
Worker threads (`asyncio.to_thread`, the writer, FastAPI's pool for plain routes) run no
loop, so their calls pass.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from foldline.store import Store


def on_an_event_loop() -> bool:
    """Whether the calling thread is running an event loop now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class LoopGuard:
    """Makes every public method of `store` raise on an event loop while armed; the
    names of the methods so called are kept in `on_loop`. `patch` sets an attribute and
    undoes it after the test (pytest's `monkeypatch.setattr`)."""

    def __init__(self, store: Store, patch: Callable[[object, str, object], None]) -> None:
        self.armed = False
        self.on_loop: list[str] = []
        for name, method in inspect.getmembers(store, inspect.ismethod):
            if not name.startswith("_"):
                patch(store, name, self._guarded(name, method))

    def _guarded(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if self.armed and on_an_event_loop():
                self.on_loop.append(name)
                raise AssertionError(f"Store.{name} called on the event loop")
            return method(*args, **kwargs)

        return guarded

    @contextmanager
    def arming(self) -> Iterator[LoopGuard]:
        """Armed inside the `with` block."""
        self.armed = True
        try:
            yield self
        finally:
            self.armed = False
