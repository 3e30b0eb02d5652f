"""`json_problem`: what a stored free-form value may hold."""

from __future__ import annotations

import pytest

from foldline.core.json_values import MAX_DEPTH, json_problem, without_lone_surrogates


def nested(depth: int) -> object:
    value: object = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_ordinary_values_pass() -> None:
    assert json_problem({"a": [1, 2.5, True, None, "x", {"b": "é"}]}) == ""
    assert json_problem(nested(MAX_DEPTH)) == ""


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (nested(MAX_DEPTH + 1), "deeper"),
        (nested(100_000), "deeper"),
        ({"a": "\ud800"}, "surrogate"),
        ({"\udc00": 1}, "surrogate"),
        ([float("nan")], "finite"),
        ({"a": float("-inf")}, "finite"),
        ({1: "a"}, "key"),
        ({"a": {1, 2}}, "set"),
    ],
)
def test_values_that_cannot_be_stored_and_served_are_named(value: object, reason: str) -> None:
    assert reason in json_problem(value)


def test_size_counts_strings_and_keys() -> None:
    assert json_problem({"ab": "cd"}, max_chars=4) == ""
    assert "larger than 3" in json_problem({"ab": "cd"}, max_chars=3)


def test_lone_surrogates_are_replaced() -> None:
    assert without_lone_surrogates("a\ud800b\U0001f600") == "a\ufffdb\U0001f600"
