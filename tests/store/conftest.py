from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_helpers import ticking_clock

from foldline.store import Store


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "foldline.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = Store(db_path, clock=ticking_clock())
    yield opened
    opened.close()
