"""The streaming JSON reader: values split across chunks, exact integers, clear errors."""

from __future__ import annotations

import io
import json

import pytest

from foldline.store.json_stream import InvalidJson, JsonReader

DOCUMENT = {
    "a": 12345678901234567890123,
    "b": [1, 2.5, -3e-7, True, None, 'é \u2603 "quoted"', {"c": []}],
    "messages": [{"n": n, "text": "x" * n} for n in range(40)],
    "z": 7,
}


def _read(reader: JsonReader) -> dict:
    result: dict = {}
    for key in reader.object_keys():
        result[key] = list(reader.array_items()) if key == "messages" else reader.value()
    reader.end()
    return result


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_any_chunk_size_reads_the_same_values(chunk: int) -> None:
    data = json.dumps(DOCUMENT, ensure_ascii=False).encode()
    assert _read(JsonReader(io.BytesIO(data), chunk_chars=chunk)) == DOCUMENT


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"{]", "at character"),
        (b'{"a": 1', "(?i)expect"),
        (b'{"a": 1} x', "extra data"),
        (b'{"a": NaN}', "NaN"),
        (b'{"a": "\xff"}', "UTF-8"),
        (b'{"a": [1, 2}', "(?i)expect"),
    ],
)
def test_broken_documents_say_where(text: bytes, message: str) -> None:
    with pytest.raises(InvalidJson, match=message):
        _read(JsonReader(io.BytesIO(text), chunk_chars=2))


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_array_positions_let_the_caller_read_each_element_as_a_stream(chunk: int) -> None:
    data = json.dumps({"items": [{"k": [1, 2]}, {"k": []}, {"k": [3]}], "n": 1}).encode()
    reader = JsonReader(io.BytesIO(data), chunk_chars=chunk)
    read: list[tuple[int, list]] = []
    for key in reader.object_keys():
        if key == "items":
            for position in reader.array_positions():
                for inner in reader.object_keys():
                    read.append((position, list(reader.array_items()) if inner == "k" else []))
        else:
            assert reader.value() == 1
    reader.end()
    assert read == [(0, [1, 2]), (1, []), (2, [3])]
    empty = JsonReader(io.BytesIO(b"[]"))
    assert list(empty.array_positions()) == []
    broken = JsonReader(io.BytesIO(b"[1 2]"))
    with pytest.raises(InvalidJson, match="expected ']'"):
        for _position in broken.array_positions():
            broken.value()
