"""Recall: the model looks back into folded messages and other conversations.

The pure half of the recall tools (`searchHistory`, `readHistory`, `searchConversations`):
a plain-word question turned into a safe full-text query, an excerpt around a match with
its sentence whole, hits and messages formatted for the model, and everything fitted
within a token cap that also respects what is left of the request's budget. The store
runs the query (`store/recall.py`); the chat layer wires the tools (`chat/recall_tools.py`).

The output format is a contract the UI reads: every hit line and every message of
`readHistory` begins with `#<n>` (the message's display index, the numbering of the
person's-words labels and the UI) followed by a space.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from foldline.core.messages import (
    AttachmentPart,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from foldline.core.state import CompactionState

MAX_QUERY_CHARS = 1_000
"""A longer query is refused with a tool error: a question is a sentence, and a pasted
document as a query would only match everything."""
MAX_TERMS = 16
"""Terms kept from a query (the first ones after stop words); more add noise, not recall."""
DEFAULT_LIMIT = 8
"""Hits `searchHistory` returns when the model asks for no `limit`."""
MAX_LIMIT = 50
RECALL_BUDGET_SHARE = 0.25
"""At most this share of the input budget goes to one recall result, whatever the cap."""
REMAINING_SHARE = 0.5
"""And at most this share of what the request has left, so a result never overflows it."""
MIN_RESULT_TOKENS = 64
"""Below this much room there is nothing useful to return: the tool says to fold first."""
EXCERPT_CHARS = 320
"""About how long an excerpt is: the matching sentence whole, with its neighbours while
they fit (a single longer sentence is cut around the match)."""
PERSON_BOOST = 1.25
"""bm25 scores of the person's messages are multiplied by this (a mild preference: what
the person said is usually what a question about the past is after)."""

AcrossConversations = Literal["off", "project", "all"]

_STOP_WORDS_TEXT = (
    "a about above after again against all also am an and any are as at be because "
    "been before being below between both but by can could did do does doing done "
    "down during each else ever few for from further get got had has have having he "
    "her here hers herself him himself his how i if in into is it its itself just let "
    "me more most my myself no nor not now of off on once only or other our ours "
    "ourselves out over own please same she should so some such tell than that the "
    "their theirs them themselves then there these they this those through to too "
    "under until up us very was we were what when where which while who whom why will "
    "with would you your yours yourself yourselves said say says told ask asked again "
    "thing things something anything one ones way like really still end getting going "
)
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
"""Words that carry no subject. "end" is here because questions use it as
phrasing ("what did we settle on in the end")."""

SYNONYMS: dict[str, tuple[str, ...]] = {}
"""Each word's other words of the same meaning (a small built-in table of common pairs;
the index's stemmer handles a word's other forms)."""
for _group in (
    "boss manager supervisor",
    "kids children child kid toddler",
    "grandma grandmother granny nan",
    "grandpa grandfather granddad",
    "mum mom mother",
    "dad father",
    "bicycle bike",
    "holiday trip vacation travel",
    "novel book",
    "apartment flat",
    "relocate relocating move moving",
    "car vehicle",
    "gloomy dark dim",
    "stopover layover connection",
    "repot pot",
    "job work company employer offer",
    "home house flat",
    "doctor gp",
    "dentist dental",
    "recommend recommended suggest suggested advise advised",
    "picked chose chosen decided settle settled",
    "buy bought purchase purchased got",
    "cheap inexpensive affordable",
    "money budget spend cost",
    "allergic allergy ill",
    "ill sick",
    "db database",
    "film movie",
    "hobby interest",
    "friend mate",
    "colour color paint",
    "flooring floor",
    "exercise stretch workout",
    "quit notice resign",
    "rent lease tenancy",
    "landlord landlady",
    "sister sibling",
    "brother sibling",
    "tent camping campsite",
    "savings fund",
    "school primary academy",
    "start begin began",
    "name called calling",
):
    _words = _group.split()
    for _word in _words:
        SYNONYMS[_word] = tuple(
            dict.fromkeys((*SYNONYMS.get(_word, ()), *(w for w in _words if w != _word)))
        )

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


class RecallError(ValueError):
    """Bad input the model reads as a tool error (`is_error`), never a crash."""


# --- the query ---------------------------------------------------------------------------


def query_terms(query: str) -> list[str]:
    """The words of a plain-word question that carry its subject: lowercased, stop
    words and one-letter words dropped, each once, at most MAX_TERMS. Raises
    `RecallError` for a query too long or with no such word."""
    if len(query) > MAX_QUERY_CHARS:
        raise RecallError(
            f"The query is {len(query):,} characters; ask in at most {MAX_QUERY_CHARS:,} "
            "(a question or a few words)."
        )
    words = [w.lower().replace("’", "'") for w in _WORD.findall(query)]
    words = [w.split("'")[0] if w.endswith(("'s", "'re", "'ll", "'ve", "'d")) else w for w in words]
    kept = [w for w in words if len(w) > 1 and w not in STOP_WORDS]
    if not kept:
        raise RecallError(
            "The query has no word to search for; use a few words of the subject "
            '(e.g. "database choice", "Ana spring trip").'
        )
    return list(dict.fromkeys(kept))[:MAX_TERMS]


def expanded_terms(terms: Sequence[str], synonyms: bool = True) -> list[str]:
    """The terms with their synonyms (from `SYNONYMS`), each once, the query's own first."""
    out = list(terms)
    if synonyms:
        for term in terms:
            out.extend(SYNONYMS.get(term, ()))
    return list(dict.fromkeys(out))


def fts_match(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: every term quoted as a literal (so `AND`, `NEAR`, `-`,
    `:`, `*`, `"` in a question are plain words, never syntax), ORed, so a message
    holding some of the words is found and bm25 ranks those holding more, rarer ones
    first."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


# --- excerpts ----------------------------------------------------------------------------


def stem(word: str) -> str:
    """A crude stem for finding a term's place in a text (the index itself stems with
    Porter): the word without a common English ending."""
    word = word.lower()
    for suffix in ("ingly", "edly", "ings", "ing", "ies", "ied", "ed", "es", "ly", "er", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def sentences(text: str) -> list[str]:
    """The text's sentences (ends at `.`, `!`, `?`, `…` before a space, and at line
    breaks), whitespace collapsed, empty ones dropped."""
    return [" ".join(s.split()) for s in _SENTENCE_END.split(text) if s.strip()]


def _matches(sentence: str, stems: set[str]) -> int:
    return sum(1 for w in _WORD.findall(sentence) if stem(w) in stems)


def excerpt(text: str, terms: Sequence[str], width: int = EXCERPT_CHARS) -> str:
    """The sentence of `text` holding the most terms, whole, with the sentences around
    it while they fit in about `width` characters; "…" where text was left out. A
    sentence longer than `width` is cut around its first match."""
    parts = sentences(text)
    if not parts:
        return ""
    stems = {stem(t) for t in terms}
    scores = [_matches(s, stems) for s in parts]
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    sentence = parts[best]
    if len(sentence) > width:
        words = _WORD.findall(sentence)
        first = next((w for w in words if stem(w) in stems), "")
        at = sentence.find(first) if first else 0
        start = max(0, at - width // 3)
        end = min(len(sentence), start + width)
        cut = sentence[start:end]
        return ("…" if start else "") + cut + ("…" if end < len(sentence) else "")
    lo, hi, size = best, best, len(sentence)
    while True:
        grown = False
        for side in (hi + 1, lo - 1):
            if 0 <= side < len(parts) and size + 1 + len(parts[side]) <= width:
                size += 1 + len(parts[side])
                lo, hi = min(lo, side), max(hi, side)
                grown = True
        if not grown:
            break
    return (
        ("… " if lo > 0 else "")
        + " ".join(parts[lo : hi + 1])
        + (" …" if hi < len(parts) - 1 else "")
    )


# --- messages as text --------------------------------------------------------------------


def part_text(part: Part, *, full: bool = True) -> str:
    """A part as recall shows it: text as is, a tool call with its input, a tool result
    with its whole output (`full_output` of a truncated one; a pruned one is never a
    placeholder here), a file by its name and text. Reasoning is left out."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return f"[called {part.name} {_json(part.input)}]"
    if isinstance(part, ToolResultPart):
        output = (part.full_output or part.output) if full else part.output
        error = " (error)" if part.is_error else ""
        return f"[result of {part.name}{error}]\n{output}"
    if isinstance(part, AttachmentPart):
        return f"[file {part.name}]" + (f"\n{part.text}" if part.text else "")
    return ""


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def message_text(message: Message) -> str:
    """Everything recall can show of a message, parts in order."""
    return "\n".join(t for p in message.parts if (t := part_text(p)))


ROLE_NAMES = {"user": "person", "assistant": "assistant", "tool": "tool", "system": "system"}


def when(created_at: str) -> str:
    """`YYYY-MM-DD HH:MM` (UTC) from a stored ISO timestamp."""
    return created_at[:16].replace("T", " ")


# --- hits --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One message found: where it is, who wrote it, when, and its text."""

    index: int
    role: str
    created_at: str
    text: str
    in_view: bool = False
    conversation_id: str | None = None
    title: str | None = None


def hit_line(hit: Hit, terms: Sequence[str]) -> str:
    """`#n role, date time[, in your view]: excerpt`; for another conversation's hit,
    `#n in conversation ID "Title", role, date time: excerpt`."""
    role = ROLE_NAMES.get(hit.role, hit.role)
    where = ""
    if hit.conversation_id is not None:
        where = f'in conversation {hit.conversation_id} "{_one_line(hit.title or "")}", '
    mark = ", in your view" if hit.in_view else ""
    return f"#{hit.index} {where}{role}, {when(hit.created_at)}{mark}: {excerpt(hit.text, terms)}"


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace('"', "'")


@dataclass(frozen=True)
class Fitted:
    """Lines that fit a cap, and how many were left out."""

    lines: tuple[str, ...]
    left_out: int


def fit_lines(lines: Sequence[str], cap_tokens: int, count: Callable[[str], int]) -> Fitted:
    """The first lines whose text (joined by newlines) stays within `cap_tokens`."""
    kept: list[str] = []
    used = 0
    for line in lines:
        size = count(line) + 1
        if used + size > cap_tokens:
            break
        kept.append(line)
        used += size
    return Fitted(tuple(kept), len(lines) - len(kept))


def search_result(
    hits: Sequence[Hit],
    total: int,
    terms: Sequence[str],
    cap_tokens: int,
    count: Callable[[str], int],
    *,
    other_conversations: bool = False,
) -> str:
    """The tool output of a search: a header, then hit lines best first, within the cap
    (room kept for the header and the closing line), then how many more there are."""
    what = "in your other conversations" if other_conversations else "in this conversation"
    if not hits:
        return (
            f"No message {what} matches {', '.join(terms)}. Try other words "
            "(a name, a thing, a word the person would have used)."
        )
    header = f"{total} message{'s' if total != 1 else ''} {what} match, best first:"
    room = cap_tokens - count(header) - 40
    fitted = fit_lines([hit_line(h, terms) for h in hits], max(room, 0), count)
    more = total - len(fitted.lines)
    lines = [header, *fitted.lines]
    if more > 0:
        lines.append(
            f"({more} more not shown: ask with more precise words, or read around a hit "
            "with readHistory.)"
        )
    elif not fitted.lines:
        lines.append(
            "(No hit fits in what is left of the context: fold first with compactContext.)"
        )
    return "\n".join(lines)


# --- reading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadMessage:
    index: int
    role: str
    created_at: str
    message: Message


def check_range(from_index: object, to_index: object, length: int) -> tuple[int, int]:
    """`fromIndex`..`toIndex` (inclusive) checked against a history of `length`
    messages; `RecallError` says what is wrong."""
    if isinstance(from_index, bool) or not isinstance(from_index, int):
        raise RecallError("fromIndex must be an integer message number (e.g. 12 for #12).")
    if isinstance(to_index, bool) or not isinstance(to_index, int):
        raise RecallError("toIndex must be an integer message number (e.g. 14 for #14).")
    if length == 0:
        raise RecallError("This conversation has no messages yet.")
    last = length - 1
    if from_index < 0 or from_index > last:
        raise RecallError(f"fromIndex {from_index} is out of range: messages are #0 to #{last}.")
    if to_index < from_index:
        raise RecallError(f"toIndex {to_index} is before fromIndex {from_index}.")
    return from_index, min(to_index, last)


def read_result(
    messages: Sequence[ReadMessage],
    to_index: int,
    cap_tokens: int,
    count: Callable[[str], int],
    *,
    start_in_view: int | None = None,
) -> str:
    """Messages verbatim, each as `#n role, date time:` and its text, within the cap;
    when cut, where to continue (`fromIndex`). A first message larger than the cap is
    cut itself, saying so."""
    blocks: list[str] = []
    used = 0
    room = cap_tokens - 40
    next_index: int | None = None
    for read in messages:
        role = ROLE_NAMES.get(read.role, read.role)
        mark = ", in your view" if start_in_view is not None and read.index >= start_in_view else ""
        block = (
            f"#{read.index} {role}, {when(read.created_at)}{mark}:\n{message_text(read.message)}"
        )
        size = count(block) + 1
        if used + size > room:
            if not blocks:
                blocks.append(
                    _cut_to(block, room, count)
                    + "\n[… the rest of this message is longer than a recall result may be]"
                )
                next_index = read.index + 1 if read.index < to_index else None
            else:
                next_index = read.index
            break
        blocks.append(block)
        used += size
    text = "\n\n".join(blocks)
    if next_index is not None:
        text += (
            "\n\n(Stopped at the size limit: continue with readHistory "
            f"fromIndex={next_index}, toIndex={to_index}.)"
        )
    return text


def _cut_to(text: str, cap_tokens: int, count: Callable[[str], int]) -> str:
    """The longest prefix of `text` within `cap_tokens` (by halving then stepping)."""
    if count(text) <= cap_tokens:
        return text
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if count(text[:mid]) <= cap_tokens:
            low = mid
        else:
            high = mid - 1
    return text[:low]


# --- the cap and the note ----------------------------------------------------------------


def result_cap(
    cap_tokens: int,
    input_budget: int | None,
    tokens_now: int,
    tool_result_cap: int,
) -> int:
    """The tokens one recall result may take: the setting's cap, at most a share of the
    input budget, at most a share of what the request has left, and below the ingest
    truncation cap (so the result is never cut by it). Below MIN_RESULT_TOKENS the tool
    refuses and says to fold first."""
    cap = min(cap_tokens, tool_result_cap)
    if input_budget is not None:
        cap = min(cap, int(input_budget * RECALL_BUDGET_SHARE))
        cap = min(cap, int(max(input_budget - tokens_now, 0) * REMAINING_SHARE))
    return cap


def no_room_message() -> str:
    return (
        "There is no room left in the context for a recall result. Fold first with "
        "compactContext, then ask again."
    )


def recall_note(state: CompactionState) -> str:
    """The sentence the model reads with the summary: what was folded, by number, and
    which tools return it word for word ('' when this conversation folded none of its
    own messages). It changes only when a fold does, so it stays in the cached prefix."""
    start = state.api_start_index
    if start <= 0:
        return ""
    return (
        f"Messages #0-#{start - 1} are folded: searchHistory and readHistory return them verbatim."
    )


# --- which tools, and what each call may use ---------------------------------------------

SEARCH_HISTORY = "searchHistory"
READ_HISTORY = "readHistory"
SEARCH_CONVERSATIONS = "searchConversations"
RECALL_TOOL_NAMES = frozenset({SEARCH_HISTORY, READ_HISTORY, SEARCH_CONVERSATIONS})


RECALL_TOOLS_SHARE = 0.05
"""The most of the input budget the recall tools' specs may take. On a 2,048 window the
three specs cost about a third of the budget, so a first fold freed nothing; there only
`searchHistory` (or no recall tool) is offered."""


def offered_tools(
    specs: Sequence[ToolSpec],
    folded: bool,
    *,
    input_budget: int | None = None,
    spec_tokens: Callable[[Sequence[ToolSpec]], int] | None = None,
) -> list[ToolSpec]:
    """The specs the model is offered: the recall tools only once the conversation has a
    fold, so the tool list (part of the cached prefix) changes only at the first fold,
    which changes the prefix anyway; and only those whose specs fit within
    `RECALL_TOOLS_SHARE` of `input_budget` as `spec_tokens` counts them: all three, else
    `searchHistory` alone, else none. Without a budget or a count, all are offered."""
    others = [spec for spec in specs if spec.name not in RECALL_TOOL_NAMES]
    if not folded:
        return others
    recall = [spec for spec in specs if spec.name in RECALL_TOOL_NAMES]
    if input_budget is None or spec_tokens is None or not recall:
        return list(specs)
    room = input_budget * RECALL_TOOLS_SHARE
    if spec_tokens(recall) <= room:
        return list(specs)
    search = [spec for spec in recall if spec.name == SEARCH_HISTORY]
    if search and spec_tokens(search) <= room:
        return [spec for spec in specs if spec.name not in RECALL_TOOL_NAMES - {SEARCH_HISTORY}]
    return others


@dataclass(frozen=True)
class RecallScope:
    """What one turn's recall calls may use, fixed when the batch starts."""

    view_start: int
    """The first message verbatim in the model's view (`api_start_index`)."""
    cap_tokens: int
    """The most tokens a result may take now (`result_cap`)."""
    conversations: AcrossConversations
    project_id: str | None
    """The conversation's project (None: in no project)."""
    count_text: Callable[[str], int]


def others_scope(scope: RecallScope) -> str | None:
    """None when other conversations may be searched (then `scope.project_id` is the
    project they must be in, None meaning any), else why not, for the model."""
    if scope.conversations == "off":
        return (
            "Searching the person's other conversations is turned off in Settings "
            "([compaction] recall_conversations)."
        )
    if scope.project_id is None and scope.conversations == "project":
        return (
            "This conversation is in no project, and searching across all conversations is "
            'off (the person can allow it: [compaction] recall_conversations = "all").'
        )
    return None
