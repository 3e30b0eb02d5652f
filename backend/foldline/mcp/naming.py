"""The names MCP tools are offered under: `SERVER__TOOL`, valid for both providers' APIs.

Anthropic and OpenAI both accept tool names of letters, digits, `_` and `-`, at most 64
characters. A server's or tool's own name may hold other characters or be too long, and
two pairs may then map to the same name; the later pair (in config order, then the
server's order) gets a numbered suffix and a note that says so, shown in Settings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_NAME = 64
SEPARATOR = "__"
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class OfferedName:
    server: str
    tool: str
    name: str
    note: str | None = None
    """Why `name` is not simply `SERVER__TOOL`, when it is not."""


def _clean(text: str) -> str:
    return _INVALID.sub("_", text) or "_"


def offered_names(pairs: Sequence[tuple[str, str]]) -> list[OfferedName]:
    """A unique, valid name for every (server, tool) pair, in the order given."""
    taken: set[str] = set()
    names: list[OfferedName] = []
    for server, tool in pairs:
        plain = f"{server}{SEPARATOR}{tool}"
        base = f"{_clean(server)}{SEPARATOR}{_clean(tool)}"[:MAX_NAME]
        name, number = base, 1
        while name in taken:
            number += 1
            suffix = f"_{number}"
            name = base[: MAX_NAME - len(suffix)] + suffix
        taken.add(name)
        note = None
        if name != plain:
            reasons = []
            if base != plain:
                reasons.append("only letters, digits, _ and - in at most 64 characters")
            if name != base:
                reasons.append(f"{base} was already taken")
            note = f"offered as {name}: " + "; ".join(reasons)
        names.append(OfferedName(server, tool, name, note))
    return names
