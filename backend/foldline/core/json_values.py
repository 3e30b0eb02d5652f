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

import json
import math
import re
from typing import Any

from foldline.core.messages import ToolCallPart

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


MAX_TOOL_INPUT_CHARS = 500_000
"""The most characters of strings and keys a tool call's arguments may hold: as much as
a message the person writes."""
MAX_TOOL_NAME_CHARS = 200
"""Tool names and call ids are at most 64 characters on every API; a longer one from a
model is cut here, far past that, only so that a runaway cannot fill the store."""
REFUSED_ARGUMENTS = "_refused_arguments"
"""The only key of a tool call's stored input when its arguments could not be stored:
the tool does not run, and the model reads why in the call's error result."""


def storable_tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCallPart:
    """A model's tool call as it can be stored and read back.

    Lone surrogates anywhere (id, name, argument strings and keys) become U+FFFD, as in
    text. Arguments that nest deeper than `MAX_DEPTH`, are larger than
    `MAX_TOOL_INPUT_CHARS` or hold non-finite numbers are replaced by
    `{REFUSED_ARGUMENTS: why}`, so the call and its error result still pair up.
    """
    clean_id = without_lone_surrogates(call_id)[:MAX_TOOL_NAME_CHARS]
    clean_name = without_lone_surrogates(name)[:MAX_TOOL_NAME_CHARS]
    problem = json_problem(arguments, max_chars=MAX_TOOL_INPUT_CHARS)
    if problem and "surrogate" in problem:
        # Only this problem can be mended in place; the check runs again for the others.
        try:
            text = json.dumps(arguments, ensure_ascii=False)
        except RecursionError:
            problem = f"nests deeper than {MAX_DEPTH} levels"
        else:
            arguments = json.loads(without_lone_surrogates(text))
            problem = json_problem(arguments, max_chars=MAX_TOOL_INPUT_CHARS)
    if problem:
        arguments = {
            REFUSED_ARGUMENTS: f"The arguments of this call were not stored: the value {problem}. "
            "The tool did not run; call it again with simpler arguments."
        }
    return ToolCallPart(id=clean_id, name=clean_name, input=arguments)


def refused_arguments(call: ToolCallPart) -> str | None:
    """Why the call's arguments were refused at ingest (see `storable_tool_call`), or None."""
    reason = call.input.get(REFUSED_ARGUMENTS) if len(call.input) == 1 else None
    return reason if isinstance(reason, str) else None
