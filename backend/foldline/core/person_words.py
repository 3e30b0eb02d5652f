"""The person's own words: kept verbatim in the model's view after every fold.

A summary, however good, is someone else's paraphrase: it drops plain-word decisions,
names said once, a constraint buried in chatter. So every fold keeps what the person wrote
in the folded messages, in order, word for word, in a block right after the summary, and
the next fold keeps the block of the one before (stacked folds never decay it). Long pastes
and code blocks are not the person's words in this sense (the summary and pins handle
them); attachments and other non-text parts are skipped.

The block has a budget (`[compaction] person_words_share` of the input budget). When the
words outgrow it, the oldest messages are condensed first, to their whole sentences that
carry a decision, an override, a constraint, a person or a fact (chatter goes); only when
every older message is condensed are the oldest dropped, never the newest. A message that
changes an earlier decision ("instead", "forget X", "new plan", "actually", "no longer",
"scratch that") is marked as the one that holds; since the newest are kept first, a
superseded statement never stays without the override that replaced it.

Everything here is a pure function of its inputs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from foldline.core.messages import Message, TextPart
from foldline.core.state import SaidWords
from foldline.core.truncation import truncate_tool_output

MAX_PERSON_WORDS_TOKENS = 20_000
"""The block's cap whatever the budget (and on an unlimited window)."""
MIN_PERSON_WORDS_TOKENS = 64
"""Below this, a block could not hold even one short message."""
PASTE_TOKENS = 400
"""A message longer than this (code blocks aside) is a paste: only its key sentences are
kept, up to half this many tokens."""
SCAN_CHARS = 16_384
"""The most of one message the words' extraction reads. A longer message is a paste
whose first key sentences fill its condensed entry (half of `PASTE_TOKENS`) many times
over; reading all of a 4 Mi-character message cost seconds of regular expressions that
hold the GIL, and so the app's event loop, even from a worker thread."""

CUT_MARK = "[…]"
"""Where a condensed message left sentences out."""
OVERRIDE_MARK = "changes an earlier decision; this one holds"
WORDS_OPEN = "<person-words>"
WORDS_CLOSE = "</person-words>"
WORDS_INTRO = (
    "What the person wrote in the folded part of the conversation, in their own words, "
    'oldest first ("[…]" marks a message shortened to its sentences that carry '
    "decisions, constraints, names and facts). Where a later message changes an earlier "
    "decision, the later one holds; such messages are marked."
)

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_MARKUP = re.compile(
    r"\[\[(?:[^\][]|\[(?!\[))*\]\]|\{\{(?:[^}{]|\{(?!\{))*\}\}|</?[A-Za-z][\w-]*(?:\s[^<>]*)?>"
)
"""Machine markup ("[[reply 200]]", template fields, tags): not something the person said.
A field ends at the next opening "[[" ("{{") too: read to the text's end from every one
of thousands of unclosed openings, the search was quadratic (7 s for 32,000 "[")."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
"""Sentences end at ".", "!", "?" and line breaks; a semicolon or a dash does not end one,
so "someone tried X; it blew up; let's not this time" stays one statement."""
_OVERRIDE = re.compile(
    r"\b(instead|forget|new plan|change of plans?|actually|no longer|scratch that|"
    r"on second thought|never ?mind|rather than|not anymore|drop (?:the|that|it)|"
    r"replac(?:e|es|ed|ing)|switch(?:ed|ing)? to|revert|cancel(?:led|ed)?|"
    r"let'?s not|we(?:'re| are) not|don'?t go with|changed? (?:my|our) mind)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided?|decision|let'?s|let us|we'?ll|we will|we(?:'re| are) going|go(?:ing)? with|"
    r"chose|choose|pick(?:ed)?|settled?|the plan|plan is|agreed?|final|approved?|"
    r"we use|use|using|will be|go for|stick with|it is for|it is then|mov(?:e|ing) (?:to|the)|"
    r"going forward|from now on|stays|remains|keep (?:the|it|using|them))\b",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(always|never|must|mustn'?t|must not|don'?t|do not|can'?t|cannot|should|"
    r"shouldn'?t|make sure|ensure|avoid|remember|keep in mind|prefer|required?|only|"
    r"no more than|at least|at most|important|budget|deadline|limit|maximum|minimum|max|"
    r"min|up to|whatever you do|not again|"
    r"blew up|broke|went wrong|last time|this time|not allowed|forbidden)\b",
    re.IGNORECASE,
)
_FIRM_DECISION = re.compile(
    r"\b(decided?|decision|let'?s|let us|we'?ll|we will|go(?:ing)? with|chose|choose|"
    r"plan is|settled on|stick with|it is for|it is then)\b",
    re.IGNORECASE,
)
_FIRM_CONSTRAINT = re.compile(
    r"\b(always|never|must|mustn'?t|must not|don'?t|do not|can'?t|cannot|avoid|only|"
    r"no more than|at least|at most|required?|not allowed|forbidden|blew up|this time|"
    r"deadline|budget)\b",
    re.IGNORECASE,
)
_ROLE = re.compile(
    r"\b(manager|lead|owner|engineer|designer|developer|architect|cto|ceo|cfo|pm|client|"
    r"customer|boss|reviewer|contact|in charge|responsible|on call|admin|analyst|"
    r"intern|director|head of|founder|consultant|tester|qa|handles?|owns?|leads?|"
    r"reports? to|works? on|takes? care of)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<![\w.])[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?\b")
_COMMON_CAPITALIZED = (
    "I I'm I'll I've I'd Ok Okay Yes No Hi Hey Hello Thanks Thank Please Sure Cool Great "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April "
    "May June July August September October November December The A An This That These "
    "Those It Its We You They He She Let Let's So But And Or If When Then Also Just Now "
    "Turn Step Message Reply Part Item Section Note Here There What Why How Who Where "
    "Which Maybe Actually Instead Forget New Scratch Never Always Don't Do Make Use Keep "
    "Somebody Someone Everyone Everybody Nobody Nothing Something Everything Today "
    "Tomorrow Yesterday Coffee Lunch Sorry Wait Right Nice Ugh Lol Haha Hmm Good Well"
)
_NOT_NAMES = frozenset(_COMMON_CAPITALIZED.split())
_GREETING_BEFORE = re.compile(
    r"\b(?:thanks|thank you|thx|cheers|hi|hey|hello|bye|goodbye|morning|night|evening|"
    r"welcome|congrats|congratulations|sorry|see you|love you|take care)"
    r"[,!.]?\s*(?:so much,?\s*)?$",
    re.IGNORECASE,
)
"""What comes just before a name spoken to."""
_ENDS = re.compile(r"[\s!?.,…:;)\"'”]*")
_PERSON_OPENING = re.compile(
    r"\s*[A-Z][a-z]+(?:\s[A-Z][a-z]+)?\s(?:is|was|will|has|joins|joined|takes|took|said|says|"
    r"wants|asked|thinks|needs|leads|owns|handles)\b"
)
"""A sentence that opens with a name and what that person does or said."""
_NOISE_NUMBER = re.compile(
    r"\b(?:turn|step|message|msg|reply|part|item|section|page|line|round|no\.?)\s*#?\d+\b|#\d+|\[\d+\]",
    re.IGNORECASE,
)
_FACT = re.compile(
    r"\d{2,}|\d[.,:%]|[$€£]\d|https?://|(?<![\w.-])[\w.-]+/[\w.-]+|`[^`]+`|\"[^\"]{2,}\"|"
    r"“[^”]{2,}”|(?<![\w.+-])[\w.+-]+@[\w-]+\.\w+|"
    r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b",
)
"""A path or an address is looked for only from the start of a run of its characters:
from every position inside one, each try read to the run's end (quadratic: 4 s for
8,000 letters). Whether a sentence holds one is the same either way."""
_FACT_WORDS = re.compile(
    r"\b(password|passcode|account|address|phone|e-?mail|called|named|version|port|host|"
    r"server|bucket|repo|branch|costs?|price|per (?:year|month|week|day|hour)|"
    r"a (?:year|month|week))\b",
    re.IGNORECASE,
)
"""Words that introduce a fact said once ("the wifi password is …")."""
_RELATION = re.compile(
    r"\b(?:my|our) (?:sister|brother|mum|mom|mother|dad|father|parents?|wife|husband|"
    r"partner|girlfriend|boyfriend|fianc[eé]e?|son|daughter|kids?|children|baby|"
    r"grand(?:mother|father|ma|pa|mum|dad|parents?)|aunt|uncle|cousin|niece|nephew|"
    r"friend|neighbou?r|landlord|landlady|doctor|dentist|vet|dog|cat|puppy|kitten)\b",
    re.IGNORECASE,
)
"""The people and animals of the person's life ("my sister", "our landlord")."""
_LIFE_EVENT = re.compile(
    r"\b(?:reading up on|learning (?:to|how)|took up|taking up|picked (?:up|\w+ (?:\w+ )?back up)|"
    r"adopted|bought|sold|moved (?:to|into|in|out)|moving (?:to|into|in|out)|signed|"
    r"joined|joining|quit|handed in|finished|booked|booking|allergic|intolerant|allergy|"
    r"can'?t (?:eat|drink|have|stand)|birthday|anniversary|wedding|pregnant|married|"
    r"engaged|diagnosed|promoted|retir(?:e|ed|ing)|graduat(?:e|ed|ing)|"
    r"(?:I|we) (?:really )?(?:love|hate|prefer|enjoy|want the)|favou?rite|vegetarian|vegan)\b",
    re.IGNORECASE,
)
"""Plain-word facts of the person's life, plans and tastes ("Been reading up on
beekeeping", "We adopted a rescue dog", "I can't eat sesame", "I really love jazz")."""
_NUMBER_WORDS = re.compile(
    r"\b(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|"
    r"million|dozen)\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b|"
    r"\b(?:next|this coming|in) (?:week|month|year|spring|summer|autumn|fall|winter)\b"
)
"""A date or a time ahead: a plan ("the kickoff in March", "we fly next month")."""
SHORT_WORDS = 4
"""A sentence of this many words or fewer is chatter ("Wow!", "Sounds good, let's do it.",
"Take care!") unless it holds a fact, a name or an override."""


def _plain(text: str) -> str:
    """The text a classification reads: markup and noise numbers removed."""
    return _NOISE_NUMBER.sub(" ", _MARKUP.sub(" ", text))


def _has_name(sentence: str, *, opening: bool = True) -> bool:
    """Whether a capitalized word that looks like a name appears past the sentence's
    first word (any sentence starts with a capital) and is not a common word, a day, a
    month or someone addressed ("Thanks, Sam!"); or, with `opening`, opens it followed by
    what people do ("Kenji is taking over…", which "Work is calmer now" also looks like)."""
    text = sentence.lstrip(" \"'“(*-")
    for match in _NAME.finditer(text):
        if match.start() == 0 or match.group(0) in _NOT_NAMES or _addressed(text, match):
            continue
        return True
    first = _NAME.match(text)
    return (
        opening
        and first is not None
        and first.group(0) not in _NOT_NAMES
        and _PERSON_OPENING.match(text) is not None
    )


def _addressed(text: str, name: re.Match[str]) -> bool:
    """Whether the name is the one spoken to ("Thanks, Sam!", "Hi Ana,", "…, Tom."):
    after a greeting, or set off by a comma at the sentence's end. Saying whom one
    talks to states nothing about them."""
    before = text[: name.start()]
    after = text[name.end() :]
    if _GREETING_BEFORE.search(before):
        return True
    return before.rstrip().endswith(",") and _ENDS.fullmatch(after) is not None


@lru_cache(maxsize=8192)
def is_override(text: str) -> bool:
    """Whether the text changes something decided before ("instead", "forget X", …)."""
    return _OVERRIDE.search(_plain(text)) is not None


@lru_cache(maxsize=16384)
def is_key_sentence(sentence: str, *, strong: bool = False) -> bool:
    """Whether a sentence states a decision, an override, a constraint, a person (a
    name, a role), a fact (a number, a path, a quoted or code-style name), a fact of the
    person's life, a taste or a plan with a date; a sentence of four words or fewer
    counts only with a fact, a name or an override.

    Numbers in "Turn 10" or "#12" and markup such as "[[reply 200]]" do not count. With
    `strong`, a decision must be explicit ("decided", "let's", "go with"…) and a
    constraint firm ("never", "must", "avoid"…): the second level of condensing."""
    plain = _plain(sentence).strip()
    if len(plain) < 3:
        return False
    if _OVERRIDE.search(plain) or _FACT.search(plain) or _FACT_WORDS.search(plain):
        return True
    if _has_name(plain):
        return True
    # A few words with only a decision or a constraint word in them are an answer in
    # passing ("Agreed.", "Sounds good, let's do it.", "Don't worry!"), not a statement:
    # condensed messages kept hundreds of them.
    if len(plain.split()) <= SHORT_WORDS:
        return False
    if _ROLE.search(plain) or _RELATION.search(plain) or _LIFE_EVENT.search(plain):
        return True
    if _WHEN.search(plain) or _NUMBER_WORDS.search(plain):
        return True
    if strong:
        return bool(_FIRM_DECISION.search(plain) or _FIRM_CONSTRAINT.search(plain))
    return bool(_DECISION.search(plain) or _CONSTRAINT.search(plain))


@lru_cache(maxsize=16384)
def sentence_weight(sentence: str) -> int:
    """How much a sentence carries, for choosing what stays when condensed words are still
    over their budget: 3 for something specific (an override, a number, a path, a name
    past the first word, a fact of the person's life), 2 for a firm statement (a firm
    decision or constraint, a role, a relative, a date, a word that introduces a fact, a
    sentence opening like "Kenji is…"), 1 for any other key sentence, 0 for chatter."""
    if not is_key_sentence(sentence):
        return 0
    plain = _plain(sentence).strip()
    if _OVERRIDE.search(plain) or _FACT.search(plain) or _NUMBER_WORDS.search(plain):
        return 3
    if _has_name(plain, opening=False) or _LIFE_EVENT.search(plain):
        return 3
    if _FIRM_DECISION.search(plain) or _FIRM_CONSTRAINT.search(plain) or _ROLE.search(plain):
        return 2
    if _RELATION.search(plain) or _WHEN.search(plain) or _FACT_WORDS.search(plain):
        return 2
    if _has_name(plain):
        return 2
    return 1


@lru_cache(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """The text's sentences (and lines), without markup, list markers or the "[…]" of
    an earlier condensing, in order."""
    out = []
    for piece in _SENTENCE_END.split(_MARKUP.sub(" ", text).replace(CUT_MARK, "\n")):
        piece = piece.strip().lstrip("-*>• ").strip()
        if piece:
            out.append(piece)
    return tuple(out)


def key_sentences(text: str, *, strong: bool = False) -> list[str]:
    """The sentences of `text` that a condensed message keeps, in order."""
    return [s for s in sentences(text) if is_key_sentence(s, strong=strong)]


def own_text(message: Message) -> str:
    """What the person wrote in a message: its text parts, with fenced code blocks (code
    pasted or copied back) replaced by a short mark. Other parts are skipped."""
    text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()

    def mark(match: re.Match[str]) -> str:
        lines = match.group(0).count("\n")
        return f"[code block, {lines} lines, left out]" if lines > 3 else match.group(0)

    return _FENCE.sub(mark, text)


def condense(
    text: str,
    cap_tokens: int | None,
    count_text: Callable[[str], int],
    *,
    strong: bool = False,
    said_later: Callable[[str], bool] = lambda _key: False,
) -> str:
    """`text` reduced to its key sentences joined by " […] " (within `cap_tokens`, the
    first ones kept), leaving out those said again later (`said_later` of a sentence's
    normalized text); '' when none is left."""
    kept: list[str] = []
    used = 0
    # Sentence by sentence, so the classifying stops once the cap is full.
    for sentence in sentences(text):
        if not is_key_sentence(sentence, strong=strong):
            continue
        if said_later(_key(sentence)):
            continue
        if cap_tokens is not None:
            size = count_text(sentence) + 2
            if used + size > cap_tokens:
                break
            used += size
        kept.append(sentence)
    return f" {CUT_MARK} ".join(kept) + (f" {CUT_MARK}" if kept else "")


def _key(sentence: str) -> str:
    return " ".join(sentence.split()).casefold()


def said_words(
    messages: Sequence[Message],
    start: int,
    count_text: Callable[[str], int],
    skip: Iterable[int] = (),
) -> list[SaidWords]:
    """The person's words in `messages` (display indices from `start`), oldest first:
    one entry per user message with text, except the indices in `skip` (pinned messages
    ride verbatim anyway). A paste is condensed from the start."""
    skipped = set(skip)
    out: list[SaidWords] = []
    for offset, message in enumerate(messages):
        index = start + offset
        if message.role != "user" or index in skipped:
            continue
        text = own_text(message)
        if not text:
            continue
        # Past `SCAN_CHARS` a message is a paste (far over `PASTE_TOKENS`) without
        # counting it, and only its first `SCAN_CHARS` are read for key sentences.
        if len(text) > SCAN_CHARS or count_text(text) > PASTE_TOKENS:
            short = condense(text[:SCAN_CHARS], PASTE_TOKENS // 2, count_text)
            if short:
                out.append(SaidWords(index=index, text=short, condensed=True))
            continue
        out.append(SaidWords(index=index, text=text))
    return out


def words_cap(input_budget: int | None, share: float) -> int:
    """The block's budget: `share` of the input budget, within bounds (0 = no block)."""
    if share <= 0:
        return 0
    if input_budget is None:
        return MAX_PERSON_WORDS_TOKENS
    return min(MAX_PERSON_WORDS_TOKENS, max(MIN_PERSON_WORDS_TOKENS, int(input_budget * share)))


def _entry(words: SaidWords) -> str:
    mark = f", {OVERRIDE_MARK}" if is_override(words.text) else ""
    # The person's text cannot close the block early.
    text = words.text.replace(WORDS_CLOSE, "<\\/person-words>")
    return f"[#{words.index}{mark}]\n{text}"


def words_block(words: Sequence[SaidWords]) -> str:
    """The block the model sees after the summary; '' without words."""
    if not words:
        return ""
    body = "\n\n".join(_entry(w) for w in words)
    return f"{WORDS_OPEN}\n{WORDS_INTRO}\n\n{body}\n{WORDS_CLOSE}"


def fit_words(
    words: Sequence[SaidWords], cap_tokens: int, count_text: Callable[[str], int]
) -> tuple[SaidWords, ...]:
    """`words` (oldest first) within `cap_tokens` as a block.

    Oldest first, messages other than the newest are condensed to their key sentences,
    leaving out the sentences a later message repeats (a message left with none is
    dropped: it was chatter); if that is not enough, the sentences that carry least go
    across all those messages (`sentence_weight`: generic statements before firm ones
    before specific facts, the oldest first among equals), so a name or a number said
    long ago outlasts a vague remark made since; only then are messages dropped, the
    oldest after the first (the opening facts outlive later chatter). The newest is cut
    only when it alone is too big.
    """
    if cap_tokens <= 0 or not words:
        return ()
    entries = list(words)
    sizes = [count_text(_entry(w)) + 1 for w in entries]
    levels = [0] * len(entries)
    """Whether each entry was condensed here to its key sentences (1)."""

    def block_tokens() -> int:
        return count_text(words_block(entries))

    # The sum of the parts only estimates the block (tokenizers are not additive): each
    # pass aims a little below the cap and the block itself is counted between passes;
    # a level runs again while the block is still over, before anything is dropped.
    aim = cap_tokens - max(8, cap_tokens // 50)
    total = block_tokens()
    for level in (1, 1):
        if total <= cap_tokens:
            break
        _condense_pass(entries, sizes, levels, level, total, aim, count_text)
        total = block_tokens()
    if total > cap_tokens:
        entries = _drop_weakest(entries, cap_tokens, count_text)
        sizes = [count_text(_entry(w)) + 1 for w in entries]
        total = block_tokens()
    while total > cap_tokens and len(entries) > 1:
        while total > cap_tokens and len(entries) > 1:
            # The oldest kept message (the conversation's opening, fold after fold) says
            # what the rest builds on: the messages after it go first, the newest last.
            # Not when a later message overrides something: a decision must never be
            # kept without the message that took it back, which may be among them.
            protect = len(entries) > 2 and not any(is_override(e.text) for e in entries[1:])
            drop = 1 if protect else 0
            total -= sizes.pop(drop)
            entries.pop(drop)
        total = block_tokens()
        if total > cap_tokens and len(entries) > 1:
            total = cap_tokens + 1  # the estimate was short: drop one more, count again
    if total > cap_tokens:
        return _newest_cut(entries[0], cap_tokens, count_text)
    return tuple(entries)


def _drop_weakest(
    entries: list[SaidWords], cap_tokens: int, count_text: Callable[[str], int]
) -> list[SaidWords]:
    """`entries` with the sentences of all but the newest left out, those that carry least
    first (the oldest first among equals), until the block fits; an entry left without a
    sentence goes. Overrides weigh most and are never older than what they override, so
    a superseded statement goes before its override.

    Each pass removes what the sum of the sentences says is over the cap, no more; the
    block is counted again after it (tokenizers are not additive) and another pass runs
    while it is still over, so a pass never takes a sentence the cap had room for."""
    total = count_text(words_block(entries))
    while total > cap_tokens and len(entries) > 1:
        parts = [list(sentences(e.text)) for e in entries[:-1]]
        # The opening message (what the rest builds on) goes last among equals, unless a
        # later message overrides something: then age alone decides, so a superseded
        # statement never outlives its override.
        opening_last = len(entries) > 2 and not any(is_override(e.text) for e in entries[1:])
        order = sorted(
            (sentence_weight(sentence), opening_last and i == 0, i, j)
            for i, pieces in enumerate(parts)
            for j, sentence in enumerate(pieces)
        )
        removed: set[tuple[int, int]] = set()
        excess = total - cap_tokens
        for _weight, _opening, i, j in order:
            if excess <= 0:
                break
            removed.add((i, j))
            excess -= count_text(parts[i][j]) + 2
            if all((i, k) in removed for k in range(len(parts[i]))):
                excess -= count_text(_entry(SaidWords(index=entries[i].index, text=""))) + 1
        if not removed:
            break
        kept: list[SaidWords] = []
        for i, said in enumerate(entries[:-1]):
            left = [s for j, s in enumerate(parts[i]) if (i, j) not in removed]
            if len(left) == len(parts[i]):
                kept.append(said)
            elif left:
                text = f" {CUT_MARK} ".join(left) + f" {CUT_MARK}"
                kept.append(SaidWords(index=said.index, text=text, condensed=True))
        entries = [*kept, entries[-1]]
        total = count_text(words_block(entries))
    return entries


def _condense_pass(
    entries: list[SaidWords],
    sizes: list[int],
    levels: list[int],
    level: int,
    total: int,
    aim: int,
    count_text: Callable[[str], int],
) -> None:
    """One pass of `fit_words`, oldest first: each entry but the newest condensed to
    `level` (in place, with its size and level) until the sum of the sizes, from
    `total`, is at `aim`; an entry left with nothing is dropped."""
    # The sentences of the messages after the one being condensed.
    later = Counter(_key(s) for said in entries for s in sentences(said.text))
    i = 0
    while total > aim and i < len(entries) - 1:
        later.subtract(_key(s) for s in sentences(entries[i].text))
        if levels[i] >= level:
            i += 1
            continue
        short = condense(
            entries[i].text,
            None,
            count_text,
            strong=level == 2,
            said_later=lambda key, later=later: later[key] > 0,
        )
        if not short:
            total -= sizes[i]
            del entries[i], sizes[i], levels[i]
            continue
        shorter = SaidWords(index=entries[i].index, text=short, condensed=True)
        size = count_text(_entry(shorter)) + 1
        if size <= sizes[i]:  # a message of key sentences only is kept as it is
            entries[i] = shorter
            total += size - sizes[i]
            sizes[i] = size
        levels[i] = level
        i += 1


def _newest_cut(
    last: SaidWords, cap_tokens: int, count_text: Callable[[str], int]
) -> tuple[SaidWords, ...]:
    """The newest message alone, too big for the cap: its key sentences, or its head and
    tail; nothing when even that does not fit."""
    room = cap_tokens - count_text(_entry(SaidWords(index=last.index, text="")))
    room -= count_text(words_block([SaidWords(index=0, text="")])) + 8
    if room <= 8:
        return ()
    short = condense(last.text, room, count_text) if not last.condensed else last.text
    if not short or count_text(short) > room:
        short = truncate_tool_output(last.text, room, count_text, category="file").text
    cut = (SaidWords(index=last.index, text=short, condensed=True),)
    if count_text(words_block(cut)) > cap_tokens:
        return ()
    return cut
