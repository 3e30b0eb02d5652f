"""The person's words read a bounded part of a huge message.

The first fold after a 4 Mi-character message stalled the app for seconds: every
sentence of the whole message went through the classifying regular expressions (which
hold the GIL, so the event loop waited even with the fold in a worker thread), and two
of them were quadratic on a long run of letters or of "[[". Now only the first
`SCAN_CHARS` of a paste are read, the classifying stops when the condensed entry is
full, and those expressions look for a match only where one can start.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foldline.core import person_words
from foldline.core.messages import user

HUGE = 4 * 1024 * 1024
KEY = "We decided to deploy on port 8080 from the main branch. "


def _count(text: str) -> int:
    return len(text) // 4


@pytest.mark.parametrize(
    "text",
    [KEY * (HUGE // len(KEY)), "a" * HUGE, "[[" * (HUGE // 2), "word " * (HUGE // 5)],
    ids=["key sentences", "one long word", "unclosed markup", "no sentence end"],
)
def test_a_huge_message_is_read_only_up_to_the_scan_limit(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted: list[int] = []
    classified: list[int] = []
    real_is_key = person_words.is_key_sentence

    def counting(piece: str) -> int:
        counted.append(len(piece))
        return _count(piece)

    def classifying(sentence: str, *, strong: bool = False) -> bool:
        classified.append(len(sentence))
        return real_is_key(sentence, strong=strong)

    monkeypatch.setattr(person_words, "is_key_sentence", classifying)
    said = person_words.said_words([user(text)], 0, counting)
    assert max(counted, default=0) <= person_words.SCAN_CHARS
    assert sum(classified) <= person_words.SCAN_CHARS
    assert all(entry.condensed for entry in said)


def test_a_huge_message_keeps_its_first_key_sentences() -> None:
    said = person_words.said_words([user(KEY * (HUGE // len(KEY)))], 0, _count)
    assert said[0].condensed and said[0].text.startswith("We decided to deploy on port 8080")


OLD_FACT = re.compile(
    r"\d{2,}|\d[.,:%]|[$€£]\d|https?://|[\w.-]+/[\w.-]+|`[^`]+`|\"[^\"]{2,}\"|“[^”]{2,}”|"
    r"[\w.+-]+@[\w-]+\.\w+|"
    r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b",
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab/.@-+_ 1A`"', max_size=40))
def test_the_linear_fact_pattern_finds_a_fact_where_the_old_one_did(text: str) -> None:
    assert (person_words._FACT.search(text) is None) == (OLD_FACT.search(text) is None)
