"""Whether a summary may stand for the messages it folds.

A summary replaces what the model reads of the folded messages, so a bad one costs more
than none: the digest and the person's own words (the fallback of a failed summary) keep
the facts, a wrong summary replaces them with fiction. Small local models write such
summaries: an invented e-mail log, a festival that nobody mentioned, one sentence
repeated until the output cap. `summary_defect` names what is wrong with one, judged
against the text it was written from, or returns None; each test is deliberately coarse,
so a faithful summary of any style passes:

- a floor of length: a few words cannot stand for a folded stretch of conversation;
- repetition: a line or a run of words said over and over is a loop, not a summary;
- overlap: a summary must share words with its source; almost none means it is about
  something else;
- invention: dates, and names of people or things, that the source never states.
"""

from __future__ import annotations

import re
from collections import Counter

MIN_WORDS = 5
"""Fewer words than this cannot stand for anything worth folding."""
MIN_OVERLAP = 0.15
"""The least share of a summary's content words that its source must contain."""
LOOP_LINE_REPEATS = 3
"""A line of some length said this many times is a loop."""
LOOP_NGRAM = 8
LOOP_NGRAM_REPEATS = 4
"""A run of `LOOP_NGRAM` words said this many times is a loop."""
MAX_INVENTED_NAMES = 1
"""More names than this that the source never states: the summary invents."""

_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
_LOOP_TOKEN = re.compile(r"\w[\w'-]*", re.UNICODE)
_NAME = re.compile(r"(?<![\w.])([A-Z][\w'-]*[a-z][\w'-]*)")
_DATE = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|"
    r"(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December)\s+\d{1,2}(?:,\s*\d{4})?|\d{1,2}\s+(?:January|February|March|April|May|June|"
    r"July|August|September|October|November|December)(?:\s+\d{4})?)\b"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*(?:[-*#>]+\s*)?|\(\s*)$")
# Words too common to show that two texts are about the same thing.
_STOP = frozenset(
    (
        "that",
        "this",
        "with",
        "from",
        "have",
        "were",
        "will",
        "would",
        "about",
        "their",
        "there",
        "which",
        "what",
        "when",
        "where",
        "they",
        "them",
        "then",
        "than",
        "into",
        "also",
        "been",
        "being",
        "some",
        "more",
        "most",
        "such",
        "only",
        "other",
        "over",
        "very",
        "just",
        "should",
        "could",
        "after",
        "before",
        "while",
        "these",
        "those",
        "your",
        "yours",
        "each",
        "does",
        "done",
        "here",
        "said",
        "says",
        "make",
        "made",
        "like",
        "none",
    )
)


def _content_words(text: str) -> list[str]:
    return [w for w in (m.lower() for m in _WORD.findall(text)) if len(w) >= 4 and w not in _STOP]


def _lines(text: str) -> Counter[str]:
    # Markdown headings are the summary's frame, not what it says: a summary that stacks
    # on an earlier one quotes that one's headings beside its own.
    lines = (re.sub(r"\s+", " ", line.strip().lower()) for line in text.splitlines())
    return Counter(line for line in lines if len(line) >= 20 and not line.startswith("#"))


def _grams(text: str) -> Counter[tuple[str, ...]]:
    # Numbers count as words here: a list of numbered items ("item 3", "item 4") is a
    # list, while a loop repeats its numbers too.
    words = [w.lower() for w in _LOOP_TOKEN.findall(text)]
    return Counter(tuple(words[i : i + LOOP_NGRAM]) for i in range(len(words) - LOOP_NGRAM + 1))


def _loops(summary: str, source: str) -> bool:
    """A line or a run of words said over and over, more often than the source says it:
    a summary that quotes a repetitive source faithfully repeats what it quotes."""
    lines = [(n, line) for line, n in _lines(summary).items() if n >= LOOP_LINE_REPEATS]
    grams = [(n, gram) for gram, n in _grams(summary).items() if n >= LOOP_NGRAM_REPEATS]
    if not lines and not grams:
        return False
    source_lines, source_grams = _lines(source), _grams(source)
    return any(n > source_lines[line] for n, line in lines) or any(
        n > source_grams[gram] for n, gram in grams
    )


def invented_names(summary: str, source: str) -> list[str]:
    """Capitalised words (not opening a sentence or a list item) the source never uses,
    in any case: names of people, places or things the summary brought in itself."""
    known = source.lower()
    found: list[str] = []
    for match in _NAME.finditer(summary):
        name = match.group(1)
        if _SENTENCE_START.search(summary[: match.start()]):
            continue
        if name.lower() not in known and name not in found:
            found.append(name)
    return found


def invented_dates(summary: str, source: str) -> list[str]:
    known = re.sub(r"\s+", " ", source.lower())
    return [
        date
        for date in dict.fromkeys(_DATE.findall(summary))
        if re.sub(r"\s+", " ", date.lower()) not in known
    ]


def summary_defect(summary: str, source: str) -> str | None:
    """Why `summary` must not replace the text `source` it was written from (a sentence
    for the log and the retry note), or None when it may."""
    words = _WORD.findall(summary)
    # Headings are the format asked for, not content: left out of the content tests.
    body = "\n".join(line for line in summary.splitlines() if not line.lstrip().startswith("#"))
    if len(words) < MIN_WORDS:
        return f"it was too short to stand for the folded messages ({len(words)} words)"
    if _loops(summary, source):
        return "it repeats itself in a loop"
    content = _content_words(body)
    if content:
        known = set(_content_words(source))
        share = sum(word in known for word in content) / len(content)
        if share < MIN_OVERLAP:
            return f"it has almost nothing in common with the folded messages ({share:.0%})"
    dates = invented_dates(body, source)
    if dates:
        return "it states dates the folded messages never mention: " + ", ".join(dates[:3])
    names = invented_names(body, source)
    if len(names) > MAX_INVENTED_NAMES:
        return "it names things the folded messages never mention: " + ", ".join(names[:3])
    return None
