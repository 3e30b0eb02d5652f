"""Fixtures of the engine tests: a deterministic token counter and a scripted summarizer
(both defined in `strategies.py`, which tests import directly)."""

from __future__ import annotations

import pytest
from strategies import CharCounter, ScriptedSummarizer


@pytest.fixture
def counter() -> CharCounter:
    return CharCounter()


@pytest.fixture
def summarizer(counter: CharCounter) -> ScriptedSummarizer:
    return ScriptedSummarizer(counter)
