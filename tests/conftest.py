"""Suite-wide order: two lanes, and browser and desktop tests after the rest.

pytest-playwright's sync API keeps an event loop running on the main thread for the rest
of the session once its browser fixture has started, and pytest-asyncio cannot run an
async test while that loop runs ("Runner.run() cannot be called from a running event
loop"). So a process that has run a browser test must run no async test after it.

The suite runs in two processes (pytest-xdist, `-n 2 --dist loadgroup` in
pyproject.toml), one per lane: the browser lane (everything under `tests/e2e`, and the
test that loads the machine on purpose, so it never starves a browser test's waits) and
the lane of everything else. Each lane is one xdist group, so it stays in one process in
collection order. Run without xdist (`-p no:xdist`, or `-n 0`), one process runs the
rest first and the browser tests last, which keeps both kinds in one command too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

E2E_DIR = Path(__file__).parent / "e2e"

# Tests outside tests/e2e that run in the browser lane: they load the whole machine on
# purpose, which would slow the other lane's tests past their waits.
BROWSER_LANE_FILES = frozenset({"test_start_under_load.py"})


def is_e2e(item: pytest.Item) -> bool:
    return E2E_DIR in Path(str(item.path)).parents


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=is_e2e)  # stable: the order within each group is kept
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        in_browser_lane = is_e2e(item) or Path(str(item.path)).name in BROWSER_LANE_FILES
        item.add_marker(pytest.mark.xdist_group("browser" if in_browser_lane else "rest"))
