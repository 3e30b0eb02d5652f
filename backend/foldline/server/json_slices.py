"""A JSON body parsed with its long strings decoded a slice at a time.

A message carrying a 16 MB PDF is 21 MB of JSON, almost all of it one base64 string.
`json.loads` converts the whole text in one C call that holds the GIL throughout: about
30 ms on a quiet machine, and far longer on a busy one, where the OS can deschedule the
thread while it holds the GIL. Even from a worker thread that held every other request
and stream on the event loop (another conversation's `GET` waited up to 265 ms).

`loads` finds the strings itself, with `bytes.find` from quote to quote: plain Python
between short C calls, so the interpreter hands the GIL to a waiting thread between
them. Each long string without escapes (base64, most large text) is cut out of the text
and decoded a slice at a time; what is left, a small skeleton, goes to `json.loads`, and
the long strings are put back in place. The value is equal to `json.loads(body)`.
Whenever anything is irregular (an encoding other than UTF-8, a control character or
invalid UTF-8 inside a long string, a skeleton string that looks like a placeholder),
the whole body goes to `json.loads` instead, so every error is `json.loads`'s own and a
route answers bad JSON exactly as it did. A body dense with small strings (more than
`MAX_QUOTES` quotes) is parsed whole as well: walking it would cost more than it saves,
and no body the app sends looks like that.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

LIFT_BYTES = 4 * 1024
"""A string of at least this many bytes (between its quotes) is decoded on its own."""

SLICE_BYTES = 1 << 20
"""Bytes of a long string decoded per C call (about a millisecond)."""

MAX_QUOTES = 20_000
"""A body with more quote characters than this is parsed whole by `json.loads` (they
are counted while the strings are found: counting them first, in one C call over
21 MB, held the GIL for 15 ms)."""

_CONTROL = bytes(range(0x20))
"""Characters JSON forbids unescaped inside a string (`json.loads` refuses them too);
found by deleting them (`bytes.translate`: a millisecond per MiB, where a regular
expression took six)."""

_RUN_WINDOW = 256
"""Backslashes counted before a quote; a longer run sends the body to `json.loads`."""

_MARK = "\x00lifted:"
"""The start of a long string's placeholder in the skeleton (`\\u0000lifted:N`)."""


class _Irregular(Exception):
    """A long string `json.loads` would judge differently: parse the body whole."""


def loads(body: bytes) -> Any:
    """`json.loads(body)`, without holding the GIL for longer than a slice at a time
    while decoding long strings. Raises what `json.loads(body)` raises."""
    if json.detect_encoding(body) != "utf-8":
        return json.loads(body)
    try:
        spans = long_strings(body)
    except _Irregular:
        return json.loads(body)
    if not spans:
        return json.loads(body)
    try:
        values = [_decoded(body, start, end) for start, end in spans]
    except _Irregular:
        return json.loads(body)
    skeleton: list[bytes] = []
    position = 0
    for index, (start, end) in enumerate(spans):
        skeleton += [body[position:start], f'"\\u0000lifted:{index}"'.encode()]
        position = end + 1
    skeleton.append(body[position:])
    try:
        return _put_back(json.loads(b"".join(skeleton)), values)
    except (ValueError, RecursionError, _Irregular):
        # Invalid JSON: the whole parse raises the error with its place in the body.
        return json.loads(body)


def long_strings(body: bytes) -> list[tuple[int, int]]:
    """(opening quote, closing quote) of every string of `LIFT_BYTES` or more that holds
    no backslash, in order.

    Outside strings JSON has no quote character, and inside one a quote is escaped
    (after an odd run of backslashes), so pairing unescaped quotes in order finds every
    string. In invalid JSON the pairs may be wrong, but then the skeleton is invalid too
    (the text outside the cut-out strings is unchanged) and `json.loads` says why.
    """
    spans: list[tuple[int, int]] = []
    find = body.find
    opening = find(b'"')
    quotes = 0
    while opening != -1:
        closing = find(b'"', opening + 1)
        quotes += 2
        while closing != -1 and _escaped(body, closing):
            closing = find(b'"', closing + 1)
            quotes += 1
        if quotes > MAX_QUOTES:
            raise _Irregular  # dense with quotes: the whole parse is quicker
        if closing == -1:
            break  # unterminated: the whole parse reports it
        if closing - opening - 1 >= LIFT_BYTES and find(b"\\", opening, closing) == -1:
            spans.append((opening, closing))
        opening = find(b'"', closing + 1)
    return spans


def _escaped(body: bytes, quote: int) -> bool:
    """Whether the quote at `quote` follows an odd run of backslashes (counted by one
    C call over the bytes before it; a run longer than that window is left to the
    whole parse)."""
    before = body[max(0, quote - _RUN_WINDOW) : quote]
    run = len(before) - len(before.rstrip(b"\\"))
    if run == _RUN_WINDOW:
        raise _Irregular
    return run % 2 == 1


def _decoded(body: bytes, opening: int, closing: int) -> str:
    """The string between two quotes, which holds no backslash, decoded as `json.loads`
    would (UTF-8 with surrogates passed through), one slice per C call."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
    pieces: list[str] = []
    for start in range(opening + 1, closing, SLICE_BYTES):
        piece = body[start : min(start + SLICE_BYTES, closing)]
        if len(piece.translate(None, _CONTROL)) != len(piece):
            raise _Irregular
        try:
            pieces.append(decoder.decode(piece, final=start + SLICE_BYTES >= closing))
        except UnicodeDecodeError:
            raise _Irregular from None
    return "".join(pieces)


def _put_back(parsed: Any, values: list[str]) -> Any:
    """`parsed` with each placeholder replaced by its string (iteratively: the skeleton
    may nest as deeply as `json.loads` allows). Each placeholder must appear once; a
    second one is a string of the body that looks like it, and then the body is parsed
    whole."""
    seen: set[int] = set()

    def real(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(_MARK):
            suffix = value[len(_MARK) :]
            index = int(suffix) if suffix.isascii() and suffix.isdigit() else -1
            if index in seen or not 0 <= index < len(values):
                raise _Irregular
            seen.add(index)
            return values[index]
        return value

    root = [parsed]
    stack: list[list[Any] | dict[str, Any]] = [root]
    while stack:
        container = stack.pop()
        if isinstance(container, list):
            for position, item in enumerate(container):
                container[position] = real(item)
                if isinstance(item, list | dict):
                    stack.append(item)
        else:
            if any(isinstance(key, str) and key.startswith(_MARK) for key in container):
                items = [(real(key), item) for key, item in container.items()]
                container.clear()
                for key, item in items:
                    container[key] = item
            for key, item in container.items():
                container[key] = real(item)
                if isinstance(item, list | dict):
                    stack.append(item)
    if len(seen) != len(values):
        raise _Irregular
    return root[0]
