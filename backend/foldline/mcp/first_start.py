"""Servers that wait for the person's yes before their first start.

A server added in Settings or by importing Claude Desktop's configuration runs a command
on this machine. It would otherwise start at the next turn of any conversation; so it is
held until the person, shown the command, allows it once. Servers written into
config.toml by hand are the person's own and start as before.

The held names are kept in a small JSON file in the data dir (not in config.toml, which
the person edits: a hand edit must not lose or fake the mark).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

FIRST_START_FILE = "mcp-first-start.json"


class FirstStarts:
    """The names of the servers added through the app and not yet allowed to start."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def held(self) -> set[str]:
        try:
            names = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return set()
        except (OSError, ValueError):
            log.warning("%s cannot be read; every server added in the app is held", self.path)
            return {"*"}
        return (
            {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()
        )

    def is_held(self, name: str) -> bool:
        held = self.held()
        return name in held or "*" in held

    def hold(self, names: list[str]) -> None:
        self._write(self.held() | set(names))

    def allow(self, name: str) -> None:
        self._write(self.held() - {name, "*"})

    def _write(self, names: set[str]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(sorted(names)), encoding="utf-8")
        os.replace(temporary, self.path)
