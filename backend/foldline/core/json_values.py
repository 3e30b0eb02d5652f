"""Limits on free-form JSON values that are stored and later served (settings, usage,
tool inputs).

A value that JSON can carry is not always one that can be stored and read back: a lone
UTF-16 surrogate (`"\\ud800"`) cannot be encoded as UTF-8, a non-finite float has no
JSON spelling, and an array nested a few hundred deep passes Python's parser but not the
serializer every answer goes through (it stops at 255 levels). Stored once, such a value
breaks every later read of its row, so each one is checked here before it is written and
again when it is read.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 32
"""How deep objects and arrays may nest in a stored free-form value: far beyond any
real settings object, tool input or usage record, far below any parser's limit."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    return _LONE_SURROGATE.search(text) is not None


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone UTF-16 surrogate replaced by U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def json_problem(value: Any, *, max_depth: int = MAX_DEPTH, max_chars: int | None = None) -> str:
    """Why `value` cannot be stored and served as JSON, or "" when it can.

    Checked without recursion (so no nesting can exhaust the stack): objects with string
    keys, arrays, strings without lone surrogates, finite numbers, booleans and null,
    nested at most `max_depth` deep, and (when `max_chars` is given) at most that many
    characters of strings and keys in all.
    """
    chars = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            chars += len(item)
            if has_lone_surrogate(item):
                return "contains a lone UTF-16 surrogate (not valid Unicode)"
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                return f"nests deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return "has an object key that is not a string"
                    stack.append((key, depth + 1))
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "holds a number that is not finite"
        elif not (item is None or isinstance(item, bool | int)):
            return f"holds a {type(item).__name__}, which JSON cannot carry"
        if max_chars is not None and chars > max_chars:
            return f"is larger than {max_chars} characters"
    return ""
