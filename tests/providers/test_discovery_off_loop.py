"""Asking a local server about its model imports the OpenAI SDK off the event loop.

The first turn on an OpenAI-compatible server imported `providers/compat.py` (and with
it the OpenAI SDK) on the loop: 0.8 s with every stream and request waiting, 3-10 s on
a busy machine.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest

import foldline.providers as providers_package
from foldline.config import parse_config
from foldline.providers.discovery import learn_model
from foldline.providers.listing import ModelDirectory

COMPAT = "foldline.providers.compat"
CONFIG = """
[defaults]
model = "local-model"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."local-model"]
provider = "local"
"""


class ImportWatcher(MetaPathFinder):
    """Notes the thread that imports `COMPAT`; the import itself is left to the others."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == COMPAT:
            self.threads.append(threading.current_thread())
        return None


async def test_the_discovery_module_is_imported_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    watcher = ImportWatcher()
    # Imported afresh for this test; the module already loaded comes back after it,
    # in `sys.modules` and as the package's attribute.
    loaded = sys.modules.get(COMPAT)
    if loaded is not None:
        monkeypatch.setattr(providers_package, "compat", loaded)
    monkeypatch.delitem(sys.modules, COMPAT, raising=False)
    monkeypatch.setattr(sys, "meta_path", [watcher, *sys.meta_path])
    config = parse_config(CONFIG)
    # Nothing listens on port 9: the question fails and nothing is learned.
    assert await learn_model(ModelDirectory(), config, "local", "local-model") is None
    assert len(watcher.threads) == 1
    assert watcher.threads[0] is not threading.current_thread()  # not the loop's thread
