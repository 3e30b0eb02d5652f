"""API key storage: a memory keyring stands in for the OS one; the file fallback for real."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors
import pytest
from keyring.backends import fail
from memory_keyring import MemoryKeyring

from foldline.secrets import (
    SERVICE,
    delete_api_key,
    find_api_key,
    get_api_key,
    key_storage_status,
    mask_key,
    secrets_path,
    set_api_key,
)


class LockedKeyring(MemoryKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("the collection is locked")


class PlaintextAltKeyring(MemoryKeyring):
    """Looks like keyrings.alt's base64 "PlaintextKeyring"."""


PlaintextAltKeyring.__module__ = "keyrings.alt.file"


@pytest.fixture(autouse=True)
def _restore_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    original = keyring.get_keyring()
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MY_LOCAL_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield
    keyring.set_keyring(original)


@pytest.fixture
def memory_keyring() -> MemoryKeyring:
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    return backend


@pytest.fixture
def no_keyring() -> None:
    keyring.set_keyring(fail.Keyring())


def file_mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_go_to_the_keyring_when_there_is_one(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    assert set_api_key(tmp_path, "anthropic", "  sk-ant-123456789  ") == "keyring"

    assert memory_keyring.passwords[(SERVICE, "anthropic")] == "sk-ant-123456789"
    assert get_api_key(tmp_path, "anthropic") == "sk-ant-123456789"
    assert find_api_key(tmp_path, "anthropic").source == "keyring"  # type: ignore[union-attr]
    assert not secrets_path(tmp_path).exists()
    assert key_storage_status(tmp_path) == {"backend": "keyring", "warning": None}


@pytest.mark.usefixtures("no_keyring")
def test_without_a_keyring_keys_go_to_a_0600_file_with_a_warning(tmp_path: Path) -> None:
    assert set_api_key(tmp_path, "openai", "sk-proj-abcdefgh") == "file"
    assert set_api_key(tmp_path, "local", "local-key") == "file"

    path = secrets_path(tmp_path)
    assert file_mode(path) == 0o600
    assert json.loads(path.read_text())["api_keys"] == {
        "local": "local-key",
        "openai": "sk-proj-abcdefgh",
    }
    assert get_api_key(tmp_path, "openai") == "sk-proj-abcdefgh"
    status = key_storage_status(tmp_path)
    assert status["backend"] == "file"
    assert status["warning"] is not None
    assert str(path) in status["warning"]
    assert "no OS keyring" in status["warning"]
    # No temporary file is left behind by the atomic write.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secrets.json"]


@pytest.mark.usefixtures("no_keyring")
def test_a_widened_secrets_file_is_narrowed_again(tmp_path: Path) -> None:
    set_api_key(tmp_path, "openai", "sk-proj-abcdefgh")
    path = secrets_path(tmp_path)
    path.chmod(0o644)

    assert get_api_key(tmp_path, "openai") == "sk-proj-abcdefgh"
    assert file_mode(path) == 0o600


@pytest.mark.parametrize("backend", [LockedKeyring, PlaintextAltKeyring])
def test_locked_or_insecure_keyrings_count_as_none(tmp_path: Path, backend: type) -> None:
    instance = backend()
    keyring.set_keyring(instance)

    assert set_api_key(tmp_path, "anthropic", "sk-ant-123456789") == "file"
    assert instance.passwords == {}
    assert key_storage_status(tmp_path)["backend"] == "file"
    assert get_api_key(tmp_path, "anthropic") == "sk-ant-123456789"


def test_the_environment_wins(
    tmp_path: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_api_key(tmp_path, "anthropic", "stored-key-12345")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key-1234567")

    found = find_api_key(tmp_path, "anthropic")
    assert found is not None
    assert (found.value, found.source) == ("env-key-1234567", "env")
    # Other providers do not read ANTHROPIC_API_KEY; an explicit variable can be named.
    assert get_api_key(tmp_path, "local") is None
    monkeypatch.setenv("MY_LOCAL_KEY", "local-env")
    assert get_api_key(tmp_path, "local", env_var="MY_LOCAL_KEY") == "local-env"
    # An empty variable name switches the environment off for this lookup.
    assert get_api_key(tmp_path, "anthropic", env_var="") == "stored-key-12345"


def test_storing_in_the_keyring_removes_an_old_plaintext_copy(tmp_path: Path) -> None:
    keyring.set_keyring(fail.Keyring())
    set_api_key(tmp_path, "openai", "old-plaintext-key")
    set_api_key(tmp_path, "local", "local-key")
    memory = MemoryKeyring()
    keyring.set_keyring(memory)

    assert set_api_key(tmp_path, "openai", "new-key-123456") == "keyring"

    stored = json.loads(secrets_path(tmp_path).read_text())["api_keys"]
    assert stored == {"local": "local-key"}
    assert get_api_key(tmp_path, "openai") == "new-key-123456"
    # A key only in the file is still found while a keyring exists.
    assert find_api_key(tmp_path, "local").source == "file"  # type: ignore[union-attr]


def test_delete_removes_from_both_stores(tmp_path: Path) -> None:
    keyring.set_keyring(fail.Keyring())
    set_api_key(tmp_path, "openai", "file-key-123456")
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    memory.set_password(SERVICE, "openai", "keyring-key-1234")

    assert delete_api_key(tmp_path, "openai") is True
    assert get_api_key(tmp_path, "openai") is None
    assert memory.passwords == {}
    assert not secrets_path(tmp_path).exists()
    assert delete_api_key(tmp_path, "openai") is False


def test_empty_keys_are_refused(tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    with pytest.raises(ValueError):
        set_api_key(tmp_path, "openai", "   ")
    assert memory_keyring.passwords == {}


@pytest.mark.usefixtures("no_keyring")
def test_a_corrupt_secrets_file_reads_as_empty(tmp_path: Path) -> None:
    fd = os.open(secrets_path(tmp_path), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"{not json")
    os.close(fd)
    assert get_api_key(tmp_path, "openai") is None
    assert set_api_key(tmp_path, "openai", "sk-new-1234567") == "file"
    assert get_api_key(tmp_path, "openai") == "sk-new-1234567"


def test_no_data_dir_means_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_api_key(None, "openai") is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-1234567")
    assert get_api_key(None, "openai") == "sk-env-1234567"


@pytest.mark.parametrize(
    ("key", "masked"),
    [
        ("sk-ant-api03-abcdefghijklmnop", "sk-…mnop"),
        ("sk-proj-1234abcd", "sk-…abcd"),
        ("short", "…"),
    ],
)
def test_mask_key(key: str, masked: str) -> None:
    assert mask_key(key) == masked
