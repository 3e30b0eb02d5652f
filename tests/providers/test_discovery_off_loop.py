"""Asking a local server about its model imports the OpenAI SDK off the event loop.

The first turn on an OpenAI-compatible server imported `providers/compat.py` (and with
it the OpenAI SDK) on the loop: 0.8 s with every stream and request waiting, 3-10 s on
a busy machine. The model lists refreshed at launch imported the OpenAI or Anthropic
SDK on the loop as well: a second with everything waiting, right after the start.
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
from foldline.providers.discovery import learn_model, refresh_provider
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


class SdkImportWatcher(MetaPathFinder):
    """Notes the thread that imports each SDK module asked for."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.threads: dict[str, threading.Thread] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname in self.names:
            self.threads[fullname] = threading.current_thread()
        return None


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
async def test_a_model_list_refresh_imports_its_sdk_off_the_loop(
    monkeypatch: pytest.MonkeyPatch, sdk: str
) -> None:
    watcher = SdkImportWatcher({sdk})
    # The SDK imported afresh for this test; the modules already loaded come back after.
    for name in [name for name in sys.modules if name == sdk or name.startswith(f"{sdk}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [watcher, *sys.meta_path])
    kind = "openai-compatible" if sdk == "openai" else "anthropic"
    config = parse_config(
        f'[providers.p]\nkind = "{kind}"\nbase_url = "http://127.0.0.1:9/v1"\napi_key = "k"\n'
    )
    # Nothing listens on port 9: the list fails, and the failure is recorded.
    listing = await refresh_provider(ModelDirectory(), config, "p")
    assert listing.error
    assert watcher.threads[sdk] is not threading.current_thread()  # not the loop's thread
