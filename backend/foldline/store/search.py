"""Turning what the person typed into a safe FTS5 query.

FTS5 has its own query language (`AND`, `NEAR`, `-`, `:`, quotes...); typed text such as
`foo-bar` or `c++ "x` would be a syntax error or mean something else. Every term is
therefore quoted as a literal phrase, terms are ANDed, and the last term matches as a
prefix so results appear while the person is still typing.
"""

from __future__ import annotations

import re


def search_terms(typed: str) -> list[str]:
    """The whitespace-separated terms that contain at least one letter or digit.

    Terms made only of punctuation hold no token for the unicode61 tokenizer and would
    match nothing, so they are dropped rather than making the whole query empty.
    """
    return [term for term in typed.split() if any(ch.isalnum() for ch in term)]


def fts_query(typed: str) -> str | None:
    """An FTS5 MATCH expression for `typed`, or None when there is nothing to search."""
    terms = search_terms(typed)
    if not terms:
        return None
    phrases = ['"' + term.replace('"', '""') + '"' for term in terms]
    phrases[-1] += "*"
    return " ".join(phrases)


def like_pattern(term: str) -> str:
    """A LIKE pattern matching `term` anywhere, with LIKE's wildcards escaped by `\\`."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


SNIPPET_CHARS = 140

_FENCE = re.compile(r"^\s*(```|~~~)[^\n]*$", re.MULTILINE)
_MARKUP = re.compile(r"(\*\*|__|`+|^#{1,6}\s+|^\s*>\s?|^\s*[-*+]\s+(?=\S))", re.MULTILINE)


def plain_text(text: str) -> str:
    """Markdown as a person reads it: code fences, backticks, emphasis marks, heading
    and quote marks removed (a snippet showing "```python" reads as noise)."""
    return _MARKUP.sub("", _FENCE.sub("", text))


def snippet(text: str, typed: str, width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of `text` showing every search term found in it:
    one window when they fit in it, else a piece around each term, joined by "…";
    Markdown marks removed, whitespace collapsed, "…" where it was cut."""
    flat = " ".join(plain_text(text).split())
    lower = flat.lower()
    found = sorted({p for term in search_terms(typed) if (p := lower.find(term.lower())) >= 0})
    if not found or found[-1] - found[0] < width * 2 // 3:
        at = found[0] if found else 0
        return _window(flat, max(0, at - width // 3), width)
    piece = max(24, width // len(found))
    return " ".join(_window(flat, max(0, at - piece // 4), piece) for at in found)


def _window(flat: str, start: int, width: int) -> str:
    end = min(len(flat), start + width)
    start = max(0, min(start, end - width))
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
