"""Suite-wide ordering: browser and desktop tests run last.

pytest-playwright's sync API keeps an event loop running on the main thread for the rest
of the session once its browser fixture has started, and pytest-asyncio cannot run an
async test while that loop runs ("Runner.run() cannot be called from a running event
loop"). Running everything under `tests/e2e` after the rest keeps both kinds of tests in
one `pytest` command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

E2E_DIR = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def is_e2e(item: pytest.Item) -> bool:
        return E2E_DIR in Path(str(item.path)).parents

    items.sort(key=is_e2e)  # stable: the order within each group is kept
