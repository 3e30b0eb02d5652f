"""API keys: the OS keyring when one is usable, else a 0600 file, and the environment.

Lookup order for a provider's key: its environment variable, then the keyring, then the
file `<data-dir>/secrets.json`. The environment wins because it is the explicit choice
of this launch (the convention of the SDKs and of every CLI), and the Settings UI shows
that a key comes from the environment so nobody wonders why a typed key is not used.

"Usable keyring" is decided by asking it: keyring falls back to `fail.Keyring` when no
backend is available (no D-Bus session, for one), raises `NoKeyringError` or
`KeyringLocked`, and `keyrings.alt`'s plaintext backends are base64, not encryption.
All of those count as "no keyring", and keys then go to the file, which Settings flags
with a visible warning (`key_storage_status`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

import keyring
import keyring.backend
import keyring.errors
from keyring.backends import chainer, fail, null

SERVICE = "foldline"
"""The keyring service name; the username is the provider's configured name."""
SECRETS_FILE = "secrets.json"
_PROBE_USER = "__foldline_probe__"

Backend = Literal["keyring", "file"]
KeySource = Literal["env", "keyring", "file"]

DEFAULT_KEY_ENV: Mapping[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
}
"""Environment variables read for the providers of these names (docs/configuration.md)."""

_file_lock = threading.Lock()


class KeyStorageStatus(TypedDict):
    backend: Backend
    warning: str | None


@dataclass(frozen=True)
class FoundKey:
    value: str
    source: KeySource


def _usable_keyring() -> tuple[keyring.backend.KeyringBackend | None, str | None]:
    """The keyring backend if it can store secrets now, else (None, why not)."""
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None, "no OS keyring is available"
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None, "no OS keyring is available"
    if type(backend).__module__.startswith("keyrings.alt"):
        return None, "the only keyring available stores keys unencrypted"
    try:
        backend.get_password(SERVICE, _PROBE_USER)
    except keyring.errors.KeyringLocked:
        return None, "the OS keyring is locked"
    except Exception as error:  # any backend failure means "not usable"
        # Backends raise their own errors too (D-Bus, SecretStorage), not only
        # keyring.errors; none of them may stop the app from starting.
        return None, f"the OS keyring is not usable ({type(error).__name__})"
    return backend, None


def secrets_path(data_dir: Path) -> Path:
    return Path(data_dir) / SECRETS_FILE


def _read_file(data_dir: Path) -> dict[str, str]:
    path = secrets_path(data_dir)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    # A file made wider by hand or by a copy is narrowed back: it holds secrets.
    if os.name == "posix" and path.stat().st_mode & 0o077:
        path.chmod(0o600)
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    keys = data.get("api_keys") if isinstance(data, dict) else None
    if not isinstance(keys, dict):
        return {}
    return {str(k): v for k, v in keys.items() if isinstance(v, str) and v}


def _write_file(data_dir: Path, keys: Mapping[str, str]) -> None:
    """Replace the secrets file atomically; it is created 0600 and never exists wider."""
    path = secrets_path(data_dir)
    if not keys:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"version": 1, "api_keys": dict(sorted(keys.items()))}, indent=2)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(payload + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise


def find_api_key(
    data_dir: Path | None, provider: str, *, env_var: str | None = None
) -> FoundKey | None:
    """The key for `provider` and where it came from, or None.

    `env_var` defaults to ANTHROPIC_API_KEY / OPENAI_API_KEY for the providers named
    `anthropic` / `openai`; pass an explicit name for others (config `api_key_env`).
    """
    variable = env_var if env_var is not None else DEFAULT_KEY_ENV.get(provider)
    if variable:
        value = os.environ.get(variable, "").strip()
        if value:
            return FoundKey(value, "env")
    if data_dir is None:
        return None
    backend, _ = _usable_keyring()
    if backend is not None:
        try:
            value = backend.get_password(SERVICE, provider)
        except Exception:  # a failing keyring falls back to the file
            value = None
        if value:
            return FoundKey(value, "keyring")
    with _file_lock:
        stored = _read_file(Path(data_dir)).get(provider)
    return FoundKey(stored, "file") if stored else None


def get_api_key(data_dir: Path | None, provider: str, *, env_var: str | None = None) -> str | None:
    """The key for `provider` (environment, then keyring, then file), or None."""
    found = find_api_key(data_dir, provider, env_var=env_var)
    return found.value if found else None


def set_api_key(data_dir: Path, provider: str, key: str) -> Backend:
    """Store `key` for `provider`; returns where it went.

    In the keyring when usable (and any copy in the file is then removed, so no stale
    plaintext stays behind), else in the 0600 file.
    """
    value = key.strip()
    if not value:
        raise ValueError("an API key cannot be empty; use delete_api_key to remove one")
    backend, _ = _usable_keyring()
    if backend is not None:
        try:
            backend.set_password(SERVICE, provider, value)
        except Exception:  # e.g. the keyring locked since the probe
            backend = None
        else:
            with _file_lock:
                keys = _read_file(Path(data_dir))
                if keys.pop(provider, None) is not None:
                    _write_file(Path(data_dir), keys)
            return "keyring"
    with _file_lock:
        keys = _read_file(Path(data_dir))
        keys[provider] = value
        _write_file(Path(data_dir), keys)
    return "file"


def delete_api_key(data_dir: Path, provider: str) -> bool:
    """Remove the stored key of `provider` from the keyring and the file.

    Returns whether a key was removed. A key in the environment cannot be removed here.
    """
    removed = False
    backend, _ = _usable_keyring()
    if backend is not None:
        try:
            if backend.get_password(SERVICE, provider) is not None:
                backend.delete_password(SERVICE, provider)
                removed = True
        except Exception:  # nothing to delete, or the keyring failed
            pass
    with _file_lock:
        keys = _read_file(Path(data_dir))
        if keys.pop(provider, None) is not None:
            _write_file(Path(data_dir), keys)
            removed = True
    return removed


def key_storage_status(data_dir: Path) -> KeyStorageStatus:
    """Where new keys will be stored, and the warning Settings must show if any."""
    backend, reason = _usable_keyring()
    if backend is not None:
        return {"backend": "keyring", "warning": None}
    path = secrets_path(Path(data_dir))
    return {
        "backend": "file",
        "warning": (
            f"API keys are stored unencrypted in {path} (readable only by your user "
            f"account) because {reason}. Environment variables such as "
            "ANTHROPIC_API_KEY are an alternative."
        ),
    }


def mask_key(key: str) -> str:
    """A form of `key` safe to show: `sk-…abcd`; short keys show nothing of themselves."""
    if len(key) < 12:
        return "…"
    return f"{key[:3]}…{key[-4:]}"
