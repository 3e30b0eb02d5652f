"""The carry-forward guarantee: what the person wrote survives any summarizer.

A summarizer may paraphrase a number into words, drop a path, or ignore the format it
was asked for; then the person's own details silently leave the model's context. Before
a fold is committed, this module extracts those details deterministically from the
person's folded messages (numbers, file paths, URLs, identifiers in code style, quoted
strings, and sentences of instruction such as "never push to main"), checks which of
them the summary contains verbatim, and appends the missing ones, in the person's words,
under a "From the person, verbatim" section. The details a fold carried are recorded on
its state and checked again by the next fold, so stacked folds do not decay.

Everything here is a pure function of its inputs: the same messages and summary give the
same section, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from foldline.core.messages import Message
from foldline.core.state import CompactionState

CARRY_HEADING = "## From the person, verbatim"
CARRY_INTRO = (
    "Details the person wrote in the folded messages that the summary above does not "
    "contain, copied exactly:"
)

CARRY_BUDGET_SHARE = 0.08
"""The appended section may use up to this share of the input budget ..."""
MIN_CARRY_TOKENS = 96
MAX_CARRY_TOKENS = 3_000
"""... within these bounds."""

MAX_DETAIL_CHARS = 300
"""Longer sentences are not carried whole (their numbers, paths and names still are)."""
MAX_DETAILS_PER_MESSAGE = 40
"""A pasted log must not crowd out everything else the person said."""

_INSTRUCTION = re.compile(
    r"\b(always|never|must|mustn't|must not|don't|do not|dont|should|shouldn't|"
    r"make sure|ensure|avoid|remember|keep in mind|prefer|required?|only use|"
    r"no more than|at least|at most|important)\b",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:use|keep|put|call|name|set|store|write|run|send|add|remove|stop|"
    r"start|switch|pin|check|test|deploy|reply|answer|respond|format)\b",
    re.IGNORECASE,
)
"""A sentence that opens with an order ("Use port 8081 ...") is an instruction too."""
_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/?(?:[\w.\-]+/)+[\w.\-]+|(?<![\w/])/[\w.\-]+")
_CODE = re.compile(r"`([^`\n]{1,120})`")
_QUOTED = re.compile(r"\"([^\"\n]{2,200})\"|“([^”\n]{2,200})”|(?<!\w)'([^'\n]{2,120})'(?!\w)")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,:]\d+)*(?:[A-Za-z%]{1,3})?(?![\w])")
_IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"  # snake_case, SCREAMING_CASE
    r"|[a-z]+(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\))"  # dotted.call()
    r"\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_TRAILING = ".,;:!?"


def _clean(item: str) -> str:
    return item.strip().rstrip(_TRAILING).strip()


def _is_number_worth_keeping(number: str) -> bool:
    # Single digits ("step 2", "1 file") are everywhere and carry little; keep the rest.
    return sum(ch.isdigit() for ch in number) >= 2 or not number.isdigit()


def details_in_text(text: str) -> list[str]:
    """The person's details in one message, in a fixed order of kinds (instructions,
    quotes, URLs, paths, code, identifiers, numbers), each once.

    A detail contained in an instruction sentence that is itself a detail is left out:
    the sentence stands for it, and carrying both would count it twice.
    """
    sentences: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip().lstrip("-*> ").strip()
        if not sentence or len(sentence) > MAX_DETAIL_CHARS:
            continue
        if _INSTRUCTION.search(sentence) or _IMPERATIVE.match(sentence):
            sentences.append(sentence)
    found = list(sentences)
    for match in _QUOTED.finditer(text):
        found.append(next(group for group in match.groups() if group is not None))
    urls = [_clean(m) for m in _URL.findall(text)]
    found.extend(urls)
    without_urls = _URL.sub(" ", text)
    found.extend(
        path for path in (_clean(m) for m in _PATH.findall(without_urls)) if "/" in path[1:]
    )
    found.extend(_CODE.findall(text))
    found.extend(_IDENTIFIER.findall(without_urls))
    found.extend(n for n in _NUMBER.findall(without_urls) if _is_number_worth_keeping(n))
    sentence_keys = [normalize(s) for s in sentences]
    unique: list[str] = []
    seen: set[str] = set()
    for item in found:
        item = item.strip()
        key = normalize(item)
        if len(key) < 2 or key in seen:
            continue
        if item not in sentences and any(key in s for s in sentence_keys):
            continue
        seen.add(key)
        unique.append(item)
    return unique[:MAX_DETAILS_PER_MESSAGE]


def person_details(messages: Iterable[Message]) -> list[list[str]]:
    """The details of each user message (one list per message, oldest message first),
    each detail once across all of them."""
    out: list[list[str]] = []
    seen: set[str] = set()
    for message in messages:
        if message.role != "user":
            continue
        group: list[str] = []
        for item in details_in_text(message.text):
            key = normalize(item)
            if key not in seen:
                seen.add(key)
                group.append(item)
        if group:
            out.append(group)
    return out


def normalize(text: str) -> str:
    """Case and spacing do not make a detail different: "Never  push" == "never push"."""
    return " ".join(text.split()).casefold()


def contains(haystack_normalized: str, detail: str) -> bool:
    """Whether the detail appears verbatim (as a whole token run) in the normalized text."""
    needle = normalize(detail)
    if not needle:
        return True
    start = 0
    while True:
        at = haystack_normalized.find(needle, start)
        if at < 0:
            return False
        before = haystack_normalized[at - 1] if at > 0 else " "
        end = at + len(needle)
        after = haystack_normalized[end] if end < len(haystack_normalized) else " "
        # "42" must not count as present inside "420" or "v1.42"; a word boundary on the
        # side where the detail itself starts or ends with a word character.
        left_ok = not (needle[0].isalnum() and (before.isalnum() or before in "._"))
        right_ok = not (needle[-1].isalnum() and (after.isalnum() or after == "_"))
        if left_ok and right_ok:
            return True
        start = at + 1


@dataclass(frozen=True)
class CarryResult:
    """A summary with the person's missing details appended, and the count of each."""

    summary: str
    section: str
    """The appended section alone ('' when nothing was appended); `summary` ends with it."""
    carried: tuple[str, ...]
    """Every detail the final summary holds verbatim, oldest first."""
    total: int
    kept: int
    appended: int

    @property
    def left_out(self) -> int:
        return self.total - self.kept - self.appended

    def applied_to(self, state: CompactionState) -> CompactionState:
        """`state` with this summary and these counts."""
        return state.model_copy(
            update={
                "summary_message": self.summary,
                "carried_details": self.carried,
                "details_total": self.total,
                "details_kept": self.kept,
                "details_appended": self.appended,
            }
        )


def carry_tokens(input_budget: int | None) -> int:
    """The cap of the appended section: ~8% of the budget, within bounds."""
    if input_budget is None:
        return MAX_CARRY_TOKENS
    return min(MAX_CARRY_TOKENS, max(MIN_CARRY_TOKENS, int(input_budget * CARRY_BUDGET_SHARE)))


def carry_forward(
    summary: str,
    *,
    earlier: Sequence[str],
    folded: Iterable[Message],
    cap_tokens: int,
    count_text: Callable[[str], int],
) -> CarryResult:
    """Append to `summary` the person's details it lacks, within `cap_tokens`.

    `earlier` are the details carried by the fold this one stacks on (older); the folded
    messages' details are newer. When the cap binds, the newest missing details are
    appended first; a detail that an appended one already contains costs nothing.
    """
    candidates: list[str] = []
    # When the cap binds, newer messages come first; within one message, the order of
    # `details_in_text` (instructions first, bare numbers last).
    priority: list[int] = []
    seen: set[str] = set()
    for group in [list(earlier), *person_details(folded)]:
        fresh = [item for item in group if normalize(item) not in seen]
        seen.update(normalize(item) for item in fresh)
        priority = [*range(len(candidates), len(candidates) + len(fresh)), *priority]
        candidates.extend(fresh)
    haystack = normalize(summary)
    kept_flags = [contains(haystack, item) for item in candidates]
    missing = [i for i in priority if not kept_flags[i]]
    frame = f"\n\n{CARRY_HEADING}\n{CARRY_INTRO}"
    used = count_text(frame)
    chosen: set[int] = set()
    covered: set[int] = set()
    appended_text = ""
    for i in missing:
        if contains(appended_text, candidates[i]):
            covered.add(i)
            continue
        line = f"\n- {candidates[i]}"
        size = count_text(line)
        if used + size > cap_tokens:
            continue
        used += size
        chosen.add(i)
        appended_text = normalize(appended_text + line)
    # Details covered by a chosen one only count if that one made it in.
    covered = {i for i in covered if contains(appended_text, candidates[i])}
    section = ""
    if chosen:
        section = frame + "\n" + "\n".join(f"- {candidates[i]}" for i in sorted(chosen))
    carried = tuple(
        item for i, item in enumerate(candidates) if kept_flags[i] or i in chosen or i in covered
    )
    kept = sum(kept_flags)
    return CarryResult(
        summary=summary + section,
        section=section,
        carried=carried,
        total=len(candidates),
        kept=kept,
        appended=len(chosen) + len(covered),
    )
