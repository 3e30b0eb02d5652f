"""Summaries judged before they replace anything: each defect, and faithful summaries of
several styles that pass."""

from __future__ import annotations

import pytest

from foldline.core.summary_check import invented_dates, invented_names, summary_defect

SOURCE = """[#0 user] My name is Ada Lovelace and I live in Lisbon. The launch code is
PINEAPPLE-42. We meet on 2026-03-14 at the Gulbenkian garden.
[#1 assistant] Noted: Ada, Lisbon, the launch code PINEAPPLE-42, the meeting on
2026-03-14 at the Gulbenkian garden.
[#2 user] Please plan the migration of the storage layer; keep every column and restore
the search index triggers after each table rewrite."""


@pytest.mark.parametrize(
    "summary",
    [
        "## Active Task\nPlan the storage migration: keep every column, restore the search "
        "index triggers after each rewrite.\n## Constraints\n- Launch code PINEAPPLE-42.\n"
        "- Ada lives in Lisbon; meeting 2026-03-14 at the Gulbenkian garden.",
        "Ada Lovelace (Lisbon) gave the launch code PINEAPPLE-42 and asked for a plan to "
        "migrate the storage layer while keeping every column.",
        "The person, Ada, set a meeting for 2026-03-14 in the Gulbenkian garden and wants "
        "the search index triggers restored after each table rewrite.",
    ],
)
def test_faithful_summaries_pass(summary: str) -> None:
    assert summary_defect(summary, SOURCE) is None


@pytest.mark.parametrize(
    ("summary", "defect"),
    [
        ("Ada, Lisbon.", "too short"),
        ("The storage layer keeps every column.\n" * 4, "loop"),
        ("keep every column " * 12, "loop"),
        (
            "Dear team, attached is the quarterly e-mail log with invoices, shipping "
            "receipts, calendar invitations and vendor correspondence for review.",
            "nothing in common",
        ),
        (
            "Ada from Lisbon gave the launch code PINEAPPLE-42; the migration starts on "
            "2025-12-01 and keeps every column.",
            "dates",
        ),
        (
            "Ada attended the Drugnabels-Fantasie festival with Bartholomew in Lisbon and "
            "planned the storage migration keeping every column.",
            "names",
        ),
    ],
)
def test_defective_summaries_are_refused(summary: str, defect: str) -> None:
    found = summary_defect(summary, SOURCE)
    assert found is not None and defect in found


def test_names_opening_a_sentence_or_a_list_item_are_not_names() -> None:
    assert invented_names("Then Ada left.\n- Meanwhile the plan held.", SOURCE) == []
    assert invented_names("It was Bartholomew.", SOURCE) == ["Bartholomew"]


def test_dates_are_compared_as_written() -> None:
    assert invented_dates("On 2026-03-14 and on March 3, 2027.", SOURCE) == ["March 3, 2027"]


def test_a_numbered_list_is_not_a_loop() -> None:
    """Items that differ only by their numbers are a list, not a loop."""
    source = "\n".join(f"request {i}: please handle item {i}" for i in range(12))
    summary = "\n".join(f"- request {i}: please handle item {i}" for i in range(12))
    assert summary_defect(summary, source) is None
    assert summary_defect("- request 3: please handle item 3\n" * 12, source) is not None


def test_quoting_a_repetitive_source_is_not_a_loop() -> None:
    """A source that repeats itself may be quoted as it is; repeating more than it does
    is a loop."""
    paragraph = "The review found that the migration keeps every column of the table. "
    source = paragraph * 5
    assert summary_defect(paragraph * 5, source) is None
    assert summary_defect(paragraph * 9, source) is not None


def test_headings_quoted_from_an_earlier_summary_are_not_a_loop() -> None:
    headings = "## Constraints & Requirements\n- none\n\n## Session Narrative\n- the port is 8080\n"
    source = f"Previous summary:\n{headings}\n{headings}\nuser: we moved the port to 8080."
    summary = f"{headings}\n{headings}\n{headings}\nThe port moved to 8080 for the proxy."
    assert summary_defect(summary, source) is None
    # A line of text said over and over still is.
    looping = summary + "\nThe port moved to 8080 again and again.\n" * 4
    assert summary_defect(looping, source) is not None
