"""Writing `<data-dir>/config.toml`: `save_config`, `ensure_config`, the TOML writer and
the atomic file write.

`tomllib` only reads TOML, and the file Foldline writes is small and flat
(docs/configuration.md), so a short writer here is preferred to another dependency. It is
kept apart from `foldline.config` because writing is a separate concern from reading, validating and
showing the settings; this module builds on `foldline.config` for the shapes it writes,
never the other way round.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path

from foldline.config import (
    DEFAULT_CONFIG_TEXT,
    IMPLICIT_PROVIDERS,
    AppConfig,
    ConfigError,
    config_path,
    parse_config,
)
from foldline.core.settings import CompactionSettings

__all__ = ["dumps_config", "ensure_config", "save_config"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _toml_string(value: str) -> str:
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _toml_key(key: str, *, always_quote: bool = False) -> str:
    return key if _BARE_KEY.fullmatch(key) and not always_quote else _toml_string(key)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


_SAVED_HEADER = """\
# Foldline configuration (see docs/configuration.md). Written by Foldline's Settings:
# comments added here by hand are not kept when Settings saves. Settings never writes API keys here:
# they go to the OS keyring (or a 0600 file), or come from ANTHROPIC_API_KEY etc.
"""


def dumps_config(config: AppConfig) -> str:
    """The TOML text of `config` (without `data_dir`); `parse_config` reads it back equal."""
    lines = [_SAVED_HEADER, "[defaults]"]
    if config.default_model:
        lines.append(f"model = {_toml_string(config.default_model)}")
    for name, provider in config.providers.items():
        lines += ["", f"[providers.{_toml_key(name)}]"]
        if not (name in IMPLICIT_PROVIDERS and provider.kind == name):
            lines.append(f"kind = {_toml_string(provider.kind)}")
        for field in ("base_url", "api_key_env", "api_key"):
            value = getattr(provider, field)
            if value is not None:
                lines.append(f"{field} = {_toml_value(value)}")
    for name, model in config.models.items():
        lines += ["", f"[models.{_toml_key(name, always_quote=True)}]"]
        for field, value in model.model_dump(exclude_none=True).items():
            lines.append(f"{field} = {_toml_value(value)}")
    lines += ["", "[compaction]"]
    settings = config.compaction
    defaults = CompactionSettings()
    for field in type(settings).model_fields:
        value = getattr(settings, field)
        # Keys the person set are kept; untouched defaults are left out so a better
        # default in a later version reaches them.
        if field in settings.model_fields_set or value != getattr(defaults, field):
            lines.append(f"{field} = {_toml_value(value)}")
    for name, server in config.mcp_servers.items():
        lines += ["", f"[mcp_servers.{_toml_key(name)}]"]
        fields = server.model_dump(exclude={"tools"}, exclude_defaults=True)
        for field, value in fields.items():
            lines.append(f"{field} = {_toml_value(value)}")
        for tool, override in server.tools.items():
            lines += ["", f"[mcp_servers.{_toml_key(name)}.tools.{_toml_key(tool)}]"]
            for field, value in override.model_dump(exclude_none=True).items():
                lines.append(f"{field} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _atomic_write(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise


def save_config(data_dir: Path, config: AppConfig) -> None:
    """Write config.toml atomically (a crash leaves the old file or the new, never half)."""
    text = dumps_config(config)
    # Read back before replacing the file: a writer bug must not cost the person their
    # configuration.
    reread = parse_config(text)
    if reread.model_dump(exclude={"data_dir"}) != config.model_dump(exclude={"data_dir"}):
        raise ConfigError("internal error: the configuration would not read back equal")
    # Private like everything in the data dir, with or without a key written in it.
    _atomic_write(config_path(data_dir), text, 0o600)


def ensure_config(data_dir: Path) -> Path:
    """First run: create the data dir and a commented default config.toml. Returns its path."""
    path = config_path(data_dir)
    if not path.exists():
        _atomic_write(path, DEFAULT_CONFIG_TEXT, 0o600)
    return path
