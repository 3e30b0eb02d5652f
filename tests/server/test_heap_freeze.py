"""The launched app freezes its heap at start and after the warm-up; a test's app does not.

Each test unfreezes what it froze, so the rest of the process keeps collecting.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.server.heap_freeze import freeze_the_heap, warm_up_then_freeze
from foldline.store import Store

from .conftest import build_app


@pytest.fixture(autouse=True)
def nothing_frozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_freezing_collects_garbage_first_and_moves_the_rest() -> None:
    alive = Cycle()
    dead = Cycle()
    gone = weakref.ref(dead)
    del dead
    assert gone() is not None  # a cycle: only the collector frees it
    frozen = freeze_the_heap()
    # The count falls as frozen objects die (other threads of the process free some).
    assert 0 < gc.get_freeze_count() <= frozen
    assert gone() is None
    # The live cycle is frozen: the collector no longer walks it.
    assert all(thing is not alive for thing in gc.get_objects())


def _started_freeze_count(app: Any) -> int:
    with TestClient(app):
        return gc.get_freeze_count()


def test_an_app_asked_to_freeze_freezes_at_start(
    data_dir: Path, store: Store, chat_service: ChatService, frontend_dir: Path
) -> None:
    app = build_app(data_dir, store, chat_service, frontend_dir, freeze_heap=True)
    assert _started_freeze_count(app) > 0


def test_a_test_app_does_not_freeze(
    data_dir: Path, store: Store, chat_service: ChatService, frontend_dir: Path
) -> None:
    app = build_app(data_dir, store, chat_service, frontend_dir)
    assert _started_freeze_count(app) == 0


class WarmUp:
    def __init__(self) -> None:
        self.warmed = False

    async def warm_up(self) -> None:
        self.warmed = True


@pytest.mark.parametrize("freeze", [True, False])
def test_the_warm_up_is_followed_by_a_freeze_only_when_asked(freeze: bool) -> None:
    service = WarmUp()
    app = SimpleNamespace(state=SimpleNamespace(freeze_heap=freeze))
    asyncio.run(warm_up_then_freeze(cast(Any, app), cast(Any, service)))
    assert service.warmed
    assert (gc.get_freeze_count() > 0) is freeze
