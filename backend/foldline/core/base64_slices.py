"""Base64 of large files, a slice at a time.

`binascii` converts a whole string in one C call that holds the GIL throughout: for the
21 MB of a 16 MB file that is about 0.1 s on a busy machine, during which no other
thread runs, the event loop's included, even though the call itself happens in a worker
thread. Converting 1 MiB at a time gives the interpreter a point between slices to hand
the GIL to a thread that waits for it, so the loop keeps answering while a big file is
checked, stored or sent. The result is byte for byte what one call gives.
"""

from __future__ import annotations

import binascii

SLICE_CHARS = 1 << 20
"""Base64 characters converted per call (a multiple of 4, so slices end on whole groups)."""

SLICE_BYTES = SLICE_CHARS // 4 * 3
"""Bytes encoded per call (a multiple of 3, so no slice but the last is padded)."""


def decode(text: str | bytes) -> bytes:
    """Strict base64 (`b64decode(text, validate=True)`): characters outside the alphabet,
    padding anywhere but at the end, or a length that is not a whole number of groups
    raise `binascii.Error`; a non-ASCII `str` raises `ValueError`."""
    if len(text) <= SLICE_CHARS:
        return binascii.a2b_base64(text, strict_mode=True)
    if len(text) % 4:
        raise binascii.Error("Incorrect padding")
    out = bytearray()
    last = len(text) - SLICE_CHARS
    for start in range(0, len(text), SLICE_CHARS):
        piece = text[start : start + SLICE_CHARS]
        # Each slice alone would accept padding at its own end; only the last may have it.
        if start < last and piece[-1:] in ("=", b"="):
            raise binascii.Error("Discontinuous padding")
        out += binascii.a2b_base64(piece, strict_mode=True)
    return bytes(out)


def encode(data: bytes) -> str:
    """`b64encode(data).decode("ascii")`, a slice at a time."""
    if len(data) <= SLICE_BYTES:
        return binascii.b2a_base64(data, newline=False).decode("ascii")
    view = memoryview(data)
    pieces = [
        binascii.b2a_base64(view[start : start + SLICE_BYTES], newline=False)
        for start in range(0, len(data), SLICE_BYTES)
    ]
    return b"".join(pieces).decode("ascii")
