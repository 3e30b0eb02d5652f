"""Reading one large JSON document piece by piece, in bounded memory.

An export of a long conversation can be gigabytes; reading it whole would need several
times that in memory. `JsonReader` walks the document's outer structure itself and
hands each inner value (one message, one fold) to the standard library's C decoder, so
memory holds one value at a time. Integers of any size decode exactly (unlike streaming
parsers that stop at 64 bits), so an out-of-range number is refused by validation with
its field's name, not mistaken for broken JSON.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

CHUNK_CHARS = 1 << 20
MAX_VALUE_CHARS = 32 << 20
"""The largest single value (one message with its tool outputs) read into memory: eight
times the longest text an imported message may hold, room for a tool's full output
kept beside its truncated one. A 50-million-character value once took 878 MB to
import and minutes to count."""

_WHITESPACE = " \t\n\r"


class InvalidJson(Exception):
    """The bytes are not JSON (or hold a value too large to read); the message says where."""


def _refuse_constant(name: str) -> Any:
    raise InvalidJson(f"{name} is not valid JSON")


class JsonReader:
    """A cursor over a JSON text read from a binary stream in chunks."""

    def __init__(self, stream: IO[bytes], *, chunk_chars: int = CHUNK_CHARS) -> None:
        self._stream = stream
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._chunk = chunk_chars
        self._buffer = ""
        self._pos = 0
        self._consumed = 0
        self._eof = False
        self._decoder = json.JSONDecoder(parse_constant=_refuse_constant)

    def _fill(self, at_least: int = 0) -> bool:
        """Read more text; False at the end of the stream."""
        if self._eof:
            return False
        if self._pos > len(self._buffer) // 2:
            self._consumed += self._pos
            self._buffer = self._buffer[self._pos :]
            self._pos = 0
        wanted = max(self._chunk, at_least)
        try:
            data = self._stream.read(wanted)
            text = self._utf8.decode(data, final=not data)
        except UnicodeDecodeError as error:
            raise InvalidJson(f"not UTF-8 text: {error.reason}") from None
        if not data:
            self._eof = True
        self._buffer += text
        return bool(data)

    def _where(self) -> str:
        return f"at character {self._consumed + self._pos}"

    def peek(self) -> str | None:
        """The next character that is not whitespace (not consumed); None at the end."""
        while True:
            while self._pos < len(self._buffer) and self._buffer[self._pos] in _WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buffer):
                return self._buffer[self._pos]
            if not self._fill():
                return None

    def expect(self, char: str) -> None:
        found = self.peek()
        if found != char:
            shown = "the end" if found is None else repr(found)
            raise InvalidJson(f"expected {char!r} but found {shown} {self._where()}")
        self._pos += 1

    def value(self) -> Any:
        """The next complete JSON value."""
        if self.peek() is None:
            raise InvalidJson(f"unexpected end of the document {self._where()}")
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buffer, self._pos)
            except json.JSONDecodeError as error:
                pending = len(self._buffer) - self._pos
                if pending > MAX_VALUE_CHARS:
                    raise InvalidJson(
                        f"a single value larger than {MAX_VALUE_CHARS} characters {self._where()}"
                    ) from None
                # Perhaps only cut off by the chunk: read more (doubling, so a large
                # value costs a few retries, not one per chunk) and try again.
                if not self._fill(at_least=pending):
                    position = self._consumed + error.pos
                    raise InvalidJson(f"{error.msg} at character {position}") from None
                continue
            # A number at the very end of the buffer may continue in the next chunk.
            if end == len(self._buffer) and not self._eof and self._fill():
                continue
            if end - self._pos > MAX_VALUE_CHARS:  # read whole by the last doubling
                raise InvalidJson(
                    f"a single value larger than {MAX_VALUE_CHARS} characters {self._where()}"
                )
            self._pos = end
            return value

    def array_items(self) -> Iterator[Any]:
        """The values of the array that starts here, one at a time."""
        self.expect("[")
        if self.peek() == "]":
            self._pos += 1
            return
        while True:
            yield self.value()
            if self.peek() == ",":
                self._pos += 1
                continue
            self.expect("]")
            return

    def array_positions(self) -> Iterator[int]:
        """The positions of the array that starts here (0, 1, ...); the caller reads each
        element (with `value`, `object_keys`, ...) before asking for the next, so an
        element is never held whole in memory."""
        self.expect("[")
        if self.peek() == "]":
            self._pos += 1
            return
        position = 0
        while True:
            yield position
            position += 1
            if self.peek() == ",":
                self._pos += 1
                continue
            self.expect("]")
            return

    def object_keys(self) -> Iterator[str]:
        """The keys of the object that starts here; the caller reads each key's value
        (with `value` or `array_items`) before asking for the next key."""
        self.expect("{")
        if self.peek() == "}":
            self._pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise InvalidJson(f"an object key must be a string {self._where()}")
            self.expect(":")
            yield key
            if self.peek() == ",":
                self._pos += 1
                continue
            self.expect("}")
            return

    def end(self) -> None:
        """Nothing but whitespace may follow the document."""
        if self.peek() is not None:
            raise InvalidJson(f"extra data after the document {self._where()}")
