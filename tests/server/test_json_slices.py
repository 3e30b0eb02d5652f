"""A large body's JSON parsed with its long strings a slice at a time gives exactly what
`json.loads` gives: the same value for valid JSON, the same error for invalid JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foldline.server import json_slices

LONG = json_slices.LIFT_BYTES


def outcome(parse: Any, body: bytes) -> tuple[str, Any]:
    try:
        return "value", parse(body)
    except (ValueError, RecursionError) as error:
        return type(error).__name__, str(error)


def same_as_json_loads(body: bytes) -> Any:
    expected = outcome(json.loads, body)
    assert outcome(json_slices.loads, body) == expected
    return expected


long_text = st.one_of(
    st.text(alphabet="ABCxyz+/=0189", min_size=LONG, max_size=LONG + 40),
    st.builds(
        lambda head, char: head * (LONG // max(len(head), 1) + 1) + char,
        st.text(min_size=1, max_size=8),
        st.characters(),
    ),
)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | long_text,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4) | long_text, inner, max_size=4)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values, ascii_only=st.booleans())
def test_valid_json_gives_the_same_value(value: Any, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    kind, _value = same_as_json_loads(body)
    assert kind == "value"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=values,
    cut=st.integers(min_value=0),
    insert=st.sampled_from([b'"', b"\\", b"\x00", b"\n", b"\xff", b"\xe2\x82", b"}", b"x"]),
)
def test_broken_json_fails_as_json_loads_fails(value: Any, cut: int, insert: bytes) -> None:
    body = json.dumps({"content": "x", "attachments": [value, "A" * LONG]}).encode(
        "utf-8", "surrogatepass"
    )
    at = cut % len(body)
    same_as_json_loads(body[:at] + insert + body[at:])


@pytest.mark.parametrize(
    "body",
    [
        # Long strings beside the irregular cases that send the body to `json.loads`.
        b'{"a": "' + b"A" * LONG + b'", "b": "\\u0000lifted:0"}',
        b'{"\\u0000lifted:0": "' + b"A" * LONG + b'"}',
        b'["' + b"A" * LONG + b'", "\\u0000lifted:x", "\\u0000lifted:\\u00b2"]',
        b'["' + b"A" * LONG + b'\x1f"]',
        b'["' + b"A" * LONG + b'\xed\xa0\x80"]',  # a surrogate, as json.loads passes it
        b'["' + b"A" * LONG + b'\xc3"]',
        b'["' + b"A" * LONG + b'", "' + b"\\" * 600 + b'"]',
        b'\xef\xbb\xbf["' + b"A" * LONG + b'"]',
        json.dumps(["A" * LONG] * 3).encode("utf-16"),
        b'{"k": "' + b"A" * LONG + b'", "k": "' + b"B" * LONG + b'", "j": 1}',
        b'{"' + b"K" * LONG + b'": 1, "' + b"K" * LONG + b'": 2}',
        b'"' + b"A" * (3 * json_slices.SLICE_BYTES + 5) + b'"',
        b'["' + "é".encode() * (json_slices.SLICE_BYTES // 2 + 1) + b'"]',
        b'["' + b"A" * LONG + b'"',
        b'["' + b"A" * LONG,
        b'["' + b"A" * LONG + b'"] x',
        b"[" * 100_000 + b'"' + b"A" * LONG + b'"' + b"]" * 100_000,
        b"[" + b'"",' * (json_slices.MAX_QUOTES // 2) + b'"' + b"A" * LONG + b'"]',
        b'["' + b'\\"' * json_slices.MAX_QUOTES + b'", "' + b"A" * LONG + b'"]',
    ],
)
def test_irregular_bodies(body: bytes) -> None:
    same_as_json_loads(body)


def test_long_strings_are_decoded_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    big = "QUJD" * (4 * json_slices.SLICE_BYTES // 4)
    body = json.dumps({"content": "read this\n", "attachments": [{"dataBase64": big}]}).encode()
    longest = [0]
    real_loads = json.loads

    def recording_loads(text: str | bytes, *args: Any, **kwargs: Any) -> Any:
        longest[0] = max(longest[0], len(text))
        return real_loads(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", recording_loads)
    assert json_slices.loads(body) == real_loads(body)
    assert 0 < longest[0] < 200  # only the skeleton went to json.loads
    assert json_slices.long_strings(body) != []
