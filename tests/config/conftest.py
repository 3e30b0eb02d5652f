"""Every config test runs with the providers' environment variables unset and an
in-memory keyring, so neither the machine's keys nor its keyring leak in or out."""

from __future__ import annotations

from collections.abc import Iterator

import keyring
import pytest
from config_setup import ENVIRONMENT
from memory_keyring import MemoryKeyring


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    original = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(original)
