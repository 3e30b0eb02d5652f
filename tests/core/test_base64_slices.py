"""Base64 a slice at a time gives exactly what one call gives, and refuses what the
strict decoder refuses, wherever a slice boundary falls."""

from __future__ import annotations

import base64
import binascii

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foldline.core import base64_slices

SLICE = base64_slices.SLICE_BYTES


@settings(max_examples=25, deadline=None)
@given(size=st.integers(0, 3 * SLICE + 5), seed=st.integers(0, 255))
def test_slices_give_what_one_call_gives(size: int, seed: int) -> None:
    data = bytes((seed + n * 7) % 256 for n in range(size))
    text = base64.b64encode(data).decode("ascii")
    assert base64_slices.encode(data) == text
    assert base64_slices.decode(text) == data
    assert base64_slices.decode(text.encode("ascii")) == data


def _long_text() -> str:
    return base64.b64encode(bytes(range(256)) * (SLICE // 100)).decode("ascii")


@pytest.mark.parametrize(
    "spoil",
    [
        lambda t: t[: base64_slices.SLICE_CHARS - 1] + "=" + t[base64_slices.SLICE_CHARS :],
        lambda t: t + "A",
        lambda t: "AA==" + t[4:],
        lambda t: t[:100] + "\n" + t[101:],
        lambda t: t[:100] + "*" + t[101:],
    ],
    ids=["padding at a slice's end", "a cut group", "padding first", "a newline", "a star"],
)
def test_what_one_strict_call_refuses_is_refused(spoil: object) -> None:
    text = spoil(_long_text())  # type: ignore[operator]
    with pytest.raises(binascii.Error):
        base64.b64decode(text, validate=True)
    with pytest.raises(binascii.Error):
        base64_slices.decode(text)


def test_a_non_ascii_string_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        base64_slices.decode(_long_text()[:-4] + "é===")
