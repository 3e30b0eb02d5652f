"""Turning what the person typed into a safe FTS5 query.

FTS5 has its own query language (`AND`, `NEAR`, `-`, `:`, quotes...); typed text such as
`foo-bar` or `c++ "x` would be a syntax error or mean something else. Every term is
therefore quoted as a literal phrase, terms are ANDed, and the last term matches as a
prefix so results appear while the person is still typing.
"""

from __future__ import annotations


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


def snippet(text: str, typed: str, width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of `text` around the first search term found in it,
    whitespace collapsed, with "…" where it was cut."""
    flat = " ".join(text.split())
    lower = flat.lower()
    found = [lower.find(term.lower()) for term in search_terms(typed)]
    at = min((position for position in found if position >= 0), default=0)
    start = max(0, at - width // 3)
    end = min(len(flat), start + width)
    start = max(0, min(start, end - width))
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
