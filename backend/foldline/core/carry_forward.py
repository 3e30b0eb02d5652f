"""The carry-forward guarantee: what the person wrote survives any summarizer.

A summarizer may paraphrase a decision, drop a name said once, or keep nothing specific
at all. Every fold therefore keeps the person's own words after the summary
(`person_words.py`): the words of the folded messages join those the previous fold kept,
fitted to their budget. This module does that, then checks what the person stated: the
sentences that carry a decision, an override, a constraint, a person or a fact (not
chatter, not "Turn 10" or markup), earlier folds' ones included. Each is looked for
verbatim in the summary and in the kept words; the counts ("the summary kept N of M of
your details; K more in your own words") are recorded on the state and shown on the fold
line, and the details still held are checked again by the next fold, so stacked folds do
not decay.

Everything here is a pure function of its inputs: the same messages and summary give the
same words and counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from foldline.core.person_words import fit_words, key_sentences, words_block
from foldline.core.state import CompactionState, SaidWords

MAX_DETAIL_CHARS = 400
"""A longer sentence is not counted as one detail (it is still kept in the words)."""


def person_details(words: Sequence[SaidWords]) -> list[str]:
    """The person's details in `words` (oldest first), each once: their key sentences."""
    out: list[str] = []
    seen: set[str] = set()
    for said in words:
        for sentence in key_sentences(said.text):
            key = normalize(sentence)
            if len(sentence) <= MAX_DETAIL_CHARS and key not in seen:
                seen.add(key)
                out.append(sentence)
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


def kept_words(previous: CompactionState | None) -> tuple[SaidWords, ...]:
    """The person's words a fold keeps from the one it stacks on.

    A fold stored before the words were kept has none, but its summary ended with the
    person's details appended verbatim; those details become one condensed entry, so an
    upgrade loses none of them."""
    if previous is None:
        return ()
    if previous.person_words or not previous.carried_details:
        return previous.person_words
    listed = "\n".join(f"- {detail}" for detail in previous.carried_details)
    index = max(previous.api_start_index - 1, 0)
    return (SaidWords(index=index, text=listed, condensed=True),)


@dataclass(frozen=True)
class CarryResult:
    """The person's words kept after a summary, and the counts of their details."""

    words: tuple[SaidWords, ...]
    carried: tuple[str, ...]
    """Every detail the summary or the kept words hold verbatim, oldest first."""
    total: int
    kept: int
    appended: int
    """Details held by the kept words and not by the summary."""

    @property
    def left_out(self) -> int:
        return self.total - self.kept - self.appended

    def applied_to(self, state: CompactionState) -> CompactionState:
        """`state` with these words and counts."""
        return state.model_copy(
            update={
                "person_words": self.words,
                "carried_details": self.carried,
                "details_total": self.total,
                "details_kept": self.kept,
                "details_appended": self.appended,
            }
        )


def stack_words(
    earlier: Sequence[SaidWords],
    said: Sequence[SaidWords],
    cap_tokens: int,
    count_text: Callable[[str], int],
) -> tuple[SaidWords, ...]:
    """The words a fold keeps: the previous fold's (`earlier`), then the newly folded
    ones (`said`, those already kept aside), fitted within `cap_tokens`."""
    known = {w.index for w in earlier}
    return fit_words([*earlier, *(w for w in said if w.index not in known)], cap_tokens, count_text)


def carry_forward(
    summary: str,
    *,
    words: tuple[SaidWords, ...],
    earlier_details: Sequence[str],
    said: Sequence[SaidWords],
) -> CarryResult:
    """How many of the person's details (`earlier_details`, then those of the newly
    folded words `said`) `summary` and the kept `words` (`stack_words`) hold."""
    candidates: list[str] = []
    seen: set[str] = set()
    for item in [*earlier_details, *person_details(said)]:
        key = normalize(item)
        if key not in seen:
            seen.add(key)
            candidates.append(item)
    in_summary = normalize(summary)
    in_words = normalize(words_block(words))
    kept_flags = [contains(in_summary, item) for item in candidates]
    word_flags = [contains(in_words, item) for item in candidates]
    return CarryResult(
        words=words,
        carried=tuple(
            c for c, k, w in zip(candidates, kept_flags, word_flags, strict=True) if k or w
        ),
        total=len(candidates),
        kept=sum(kept_flags),
        appended=sum(w and not k for k, w in zip(kept_flags, word_flags, strict=True)),
    )
