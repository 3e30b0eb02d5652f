"""Fixtures of the engine tests: a deterministic token counter and a scripted summarizer
(both defined in `strategies.py`, which tests import directly), and Hypothesis profiles.

`HYPOTHESIS_PROFILE=mutation` derandomizes Hypothesis, as mutation testing needs
(`tests/mutation.py`): every mutant then meets the same examples, and a verdict never
depends on the luck of a run.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings
from strategies import CharCounter, ScriptedSummarizer

settings.register_profile("mutation", derandomize=True, database=None, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def counter() -> CharCounter:
    return CharCounter()


@pytest.fixture
def summarizer(counter: CharCounter) -> ScriptedSummarizer:
    return ScriptedSummarizer(counter)
