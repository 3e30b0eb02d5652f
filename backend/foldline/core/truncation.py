"""Oversize tool outputs cut at ingest, by the kind of output they are.

A tool result larger than the cap is cut before the model sees it; the full output stays
in storage (`ToolResultPart.full_output`). Where to cut depends on what the output is:
the end of a shell run holds the error and the exit status, the first matches of a
search are as good as any, a file is read from both ends. The result always carries an
explicit notice saying what was left out, and is at or under the cap *including* the
notice, for any counter: every candidate is measured with the caller's `count_text`
before it is accepted, so no additivity of the tokenizer is assumed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

OutputCategory = Literal["shell", "search", "file", "generic"]

NOTICE_TAIL = "omitted; the full output is kept in the history ...]"
"""The fixed end of every omission notice (tests and the UI look for it)."""

_SHORT_NOTICE = "[... output omitted ...]"
"""Used only when the cap is too small for the full notice."""

# Share of the kept lines taken from the head; the rest comes from the tail.
_HEAD_SHARE: dict[str, float] = {"shell": 0.3, "search": 1.0, "file": 0.5, "generic": 1.0}

_SEARCH_WORDS = frozenset({"grep", "search", "find", "rg", "ripgrep", "glob", "ls", "list", "ag"})
_SHELL_WORDS = frozenset(
    {"bash", "shell", "sh", "zsh", "exec", "execute", "run", "command", "terminal", "cmd"}
    | {"powershell", "pwsh", "process", "script"}
)
_FILE_WORDS = frozenset({"read", "view", "cat", "open", "file", "files", "show", "head", "tail"})

_MATCH_LINE = re.compile(r"^[^\s:]+:\d+[:-]")
_SHELL_HINTS = re.compile(
    r"^(\$ |> |Traceback \(most recent call last\)|exit code|Exit code|make(\[\d+\])?: )",
    re.MULTILINE,
)


@dataclass(frozen=True)
class TruncatedOutput:
    """A tool output fitted to its cap.

    `kept_tokens` is the count of `text` as returned (notice included), so it is at or
    under the cap whenever `truncated` is True.
    """

    text: str
    truncated: bool
    original_tokens: int
    kept_tokens: int
    category: OutputCategory


def _name_words(tool_name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool_name)
    return {w for w in re.split(r"[^a-zA-Z0-9]+", spaced.lower()) if w}


def classify_output(tool_name: str, text: str) -> OutputCategory:
    """The category of a tool output: by the tool's name first, then by its content."""
    words = _name_words(tool_name)
    if words & _SEARCH_WORDS:
        return "search"
    if words & _SHELL_WORDS:
        return "shell"
    if words & _FILE_WORDS:
        return "file"
    sample = [line for line in text[:20_000].splitlines()[:200] if line.strip()]
    if sample and sum(1 for line in sample if _MATCH_LINE.match(line)) >= 0.6 * len(sample):
        return "search"
    if _SHELL_HINTS.search(text[:20_000]):
        return "shell"
    return "generic"


def _notice(amount: int, unit: str, omitted_tokens: int) -> str:
    unit = unit[:-1] if amount == 1 else unit
    return f"[... {amount:,} {unit} / ~{max(omitted_tokens, 0):,} tokens {NOTICE_TAIL}"


def _join(head: str, notice: str, tail: str) -> str:
    """Head, notice and tail, each notice on a line of its own."""
    before = "" if not head or head.endswith("\n") else "\n"
    after = "\n" if tail else ""
    return f"{head}{before}{notice}{after}{tail}"


def _largest_fitting(
    build: Callable[[int], str], count_text: Callable[[str], int], cap: int, upper: int
) -> tuple[int, str] | None:
    """The largest k in [0, upper] whose `build(k)` counts at or under `cap`, with its text.

    A binary search; every accepted text was measured, so the answer fits even when the
    counter is not perfectly monotone (it may then be slightly smaller than the optimum).
    """
    best: tuple[int, str] | None = None
    low, high = 0, upper
    while low <= high:
        middle = (low + high) // 2
        candidate = build(middle)
        if count_text(candidate) <= cap:
            best = (middle, candidate)
            low = middle + 1
        else:
            high = middle - 1
    return best


def _cut_lines(
    text: str, cap: int, count_text: Callable[[str], int], share: float, original: int
) -> tuple[int, str] | None:
    lines = text.splitlines(keepends=True)
    total = len(lines)

    def build(kept: int) -> str:
        head_n = min(kept, round(kept * share + 0.49))
        tail_n = kept - head_n
        head = "".join(lines[:head_n])
        tail = "".join(lines[total - tail_n :]) if tail_n else ""
        omitted = original - count_text(head + tail)
        return _join(head, _notice(total - kept, "lines", omitted), tail)

    return _largest_fitting(build, count_text, cap, max(total - 1, 0))


def _cut_chars(
    text: str, cap: int, count_text: Callable[[str], int], share: float, original: int
) -> tuple[int, str] | None:
    length = len(text)

    def build(kept: int) -> str:
        head_n = min(kept, round(kept * share + 0.49))
        tail_n = kept - head_n
        head = text[:head_n]
        tail = text[length - tail_n :] if tail_n else ""
        omitted = original - count_text(head + tail)
        return _join(head, _notice(length - kept, "characters", omitted), tail)

    # Search upward by doubling first so the binary search never measures texts far
    # larger than the cap (a 10 MB line would otherwise be counted at every step).
    upper = max(cap * 4, 64)
    while upper < length - 1 and count_text(build(upper)) <= cap:
        upper *= 2
    return _largest_fitting(build, count_text, cap, min(upper, max(length - 1, 0)))


def _fit_prefix(text: str, cap: int, count_text: Callable[[str], int]) -> str:
    """The longest prefix of `text` within `cap` (for caps too small for any notice)."""
    found = _largest_fitting(lambda k: text[:k], count_text, cap, len(text))
    return found[1] if found else ""


def truncate_tool_output(
    text: str,
    cap_tokens: int,
    count_text: Callable[[str], int],
    tool_name: str = "",
    category: OutputCategory | None = None,
) -> TruncatedOutput:
    """Cut `text` to at most `cap_tokens` (by `count_text`), notice included.

    shell: head and tail, weighted to the tail (errors and exit status come last);
    search: the leading matches; file: a balanced head and tail; generic: the first lines.
    When whole lines cannot fill the cap (one enormous line, minified JSON) the cut is
    made by characters instead, with the same head/tail split.
    """
    kind = category or classify_output(tool_name, text)
    original = count_text(text)
    if original <= cap_tokens:
        return TruncatedOutput(text, False, original, original, kind)
    share = _HEAD_SHARE[kind]
    by_lines = _cut_lines(text, cap_tokens, count_text, share, original)
    chosen = by_lines
    # Few kept tokens means the lines are too long to be cut whole: cut by characters.
    if by_lines is None or by_lines[0] == 0 or count_text(by_lines[1]) < cap_tokens // 2:
        by_chars = _cut_chars(text, cap_tokens, count_text, share, original)
        if by_chars is not None and (
            by_lines is None or count_text(by_chars[1]) > count_text(by_lines[1])
        ):
            chosen = by_chars
    result = chosen[1] if chosen is not None else _fit_prefix(_SHORT_NOTICE, cap_tokens, count_text)
    return TruncatedOutput(result, True, original, count_text(result), kind)
