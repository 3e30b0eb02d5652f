"""Oversize tool outputs: cut by category, always at or under the cap with a notice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import CharCounter

from foldline.core.truncation import (
    NOTICE_TAIL,
    classify_output,
    truncate_tool_output,
)
from foldline.tokenizers import get_encoder

COUNT = CharCounter().count_text


def numbered(n: int, width: int = 20) -> str:
    return "".join(f"line {i:05d} " + "x" * width + "\n" for i in range(n))


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bash", "", "shell"),
        ("runCommand", "", "shell"),
        ("grep", "", "search"),
        ("search_files", "", "search"),
        ("list_dir", "", "search"),
        ("read_file", "", "file"),
        ("view", "", "file"),
        ("", "src/a.py:12: def f():\nsrc/b.py:40: f()\n", "search"),
        ("mystery", "$ make\nerror: boom\n", "shell"),
        ("mystery", "just some words", "generic"),
    ],
)
def test_classify_output(name: str, text: str, expected: str) -> None:
    assert classify_output(name, text) == expected


def test_small_output_is_returned_unchanged() -> None:
    out = truncate_tool_output("short", 100, COUNT, "bash")
    assert out.text == "short" and not out.truncated
    assert out.original_tokens == out.kept_tokens == COUNT("short")


def test_shell_keeps_more_of_the_tail_than_the_head() -> None:
    text = numbered(2000)
    out = truncate_tool_output(text, 400, COUNT, "bash")
    assert out.truncated and out.category == "shell"
    head, _, tail = out.text.partition("[...")
    assert head.startswith("line 00000") and tail.rstrip().endswith("line 01999 " + "x" * 20)
    assert len(tail) > 1.5 * len(head)
    assert NOTICE_TAIL in out.text
    assert out.kept_tokens == COUNT(out.text) <= 400


def test_search_keeps_the_leading_matches_with_the_notice_last() -> None:
    text = "".join(f"src/f{i}.py:{i}: match\n" for i in range(3000))
    out = truncate_tool_output(text, 300, COUNT, "grep")
    assert out.text.startswith("src/f0.py:0: match\nsrc/f1.py:1: match\n")
    assert out.text.rstrip().endswith(NOTICE_TAIL)
    assert "src/f2999.py" not in out.text


def test_file_is_balanced_head_and_tail() -> None:
    out = truncate_tool_output(numbered(3000), 500, COUNT, "read_file")
    head, _, tail = out.text.partition("[...")
    assert abs(len(head) - len(tail.split("\n", 1)[1])) < 0.2 * len(head)


def test_generic_is_cut_at_a_line_with_the_notice_last() -> None:
    out = truncate_tool_output(numbered(1000), 200, COUNT, "mystery_tool")
    body, _, notice = out.text.rpartition("\n[...")
    assert body.endswith("x" * 20) and notice.rstrip().endswith(NOTICE_TAIL)


def test_notice_says_how_much_was_omitted() -> None:
    out = truncate_tool_output(numbered(1000), 200, COUNT, "mystery_tool")
    kept_lines = out.text.count("line ")
    assert f"[... {1000 - kept_lines:,} lines / ~" in out.text


def test_one_enormous_line_is_cut_by_characters() -> None:
    text = "A" * 200_000 + "Z" * 100
    out = truncate_tool_output(text, 500, COUNT, "bash")
    assert out.truncated and "characters / ~" in out.text
    assert out.text.startswith("AAAA") and out.text.endswith("Z" * 100)
    # Most of the cap is used, not just the notice.
    assert out.kept_tokens > 400


def test_cap_too_small_for_the_notice_still_holds() -> None:
    out = truncate_tool_output("word " * 1000, 3, COUNT)
    assert COUNT(out.text) <= 3 and out.truncated


def test_exact_tokenizer_counts_are_respected() -> None:
    encoder = get_encoder("o200k_base")

    def count(text: str) -> int:
        return len(encoder.encode(text))

    text = "".join(f"{i}: résumé → naïve 日本語 {i * 7919}\n" for i in range(3000))
    for name in ("bash", "grep", "read_file", "x"):
        out = truncate_tool_output(text, 700, count, name)
        assert count(out.text) <= 700 and NOTICE_TAIL in out.text
        assert out.kept_tokens > 500


_line = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(_line, min_size=1, max_size=200),
    giant=st.integers(0, 30_000),
    cap=st.integers(64, 2000),
    category=st.sampled_from(["shell", "search", "file", "generic"]),
)
def test_truncated_output_is_within_its_cap_and_carries_the_notice(
    lines: list[str], giant: int, cap: int, category: str
) -> None:
    text = "\n".join(lines) + "\n" + "q" * giant
    out = truncate_tool_output(text, cap, COUNT, category=category)  # type: ignore[arg-type]
    assert COUNT(out.text) <= cap
    assert out.kept_tokens == COUNT(out.text)
    assert out.original_tokens == COUNT(text)
    if out.truncated:
        assert NOTICE_TAIL in out.text
    else:
        assert out.text == text and COUNT(text) <= cap
