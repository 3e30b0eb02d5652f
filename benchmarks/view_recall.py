"""The view alone: what a model without tools still sees of a long conversation.

    .venv/bin/python benchmarks/view_recall.py               # 8k and 16k, 5 conversations
    .venv/bin/python benchmarks/view_recall.py --seeds 2     # a quicker look

Long conversations of `long_conversations.py` (400 dated messages each, months of
everyday chat with facts said once in plain words, by the person and by the assistant,
decisions changed later) go turn by turn through Foldline's real policy (`decide`) and
the real fold (`fold`) with a summarizer that keeps nothing (the six sections with
"None."), on an 8k and a 16k window, `[compaction]` defaults otherwise, counted exactly
(o200k_base, OpenAI Chat wire). After the last message the model's final view is
rendered and each fact's answer is looked for in it (case aside): the share of the
answers a model without tools could give from its view alone. `date` facts (the answer
is the day the message was written) are reported apart: no view carries message dates.

"recent only" is a view of the most recent messages of the same size as the final
view, for comparison: what a plain recency window would hold.

With `--chatty` the person's filler is made to read like real chat: the generator draws
it from 25 sentences, so nearly every one is said again later and condensing drops it as
a repeat, which real conversations do not allow. Here each filler sentence gets one of
40 tails ("…, as usual", "…, no idea why") and often an interjection or a thanks before
it ("Wow!", "Yep.", "Thanks, Sam!", "Take care!"), seeded; the facts are unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import platform
import random
import re
import sys
import time
from dataclasses import dataclass, field

import long_conversations as corpus

from foldline.core.budget import Budget
from foldline.core.compaction import FoldInputs, SummaryRequest, fold
from foldline.core.digest import emergency_fold
from foldline.core.messages import Message, assistant, user
from foldline.core.person_words import sentences, words_block
from foldline.core.policy import BreakerState, decide, record_fold
from foldline.core.prompts import STRUCTURED_HEADINGS
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
from foldline.core.tokens import OpenAIChatCounter
from foldline.core.view import build_api_messages
from foldline.tokenizers import get_encoder

SYSTEM = "You are a helpful assistant."
COUNTER = OpenAIChatCounter(get_encoder("o200k_base"))
NOW = "2025-09-01T12:00:00Z"
WINDOWS = {
    "8k": Budget(context_window=8_192, max_output_tokens=1_024),
    "16k": Budget(context_window=16_384, max_output_tokens=2_048),
}


async def keeps_nothing(request: SummaryRequest) -> str:
    """A summary in the requested format with nothing specific in it."""
    if "## Active Task" not in request.prompt:
        return "The person and the assistant talked about everyday things."
    return "\n\n".join(f"## {h}\nNone." for h in STRUCTURED_HEADINGS)


@dataclass
class Tally:
    found: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    recent: dict[str, int] = field(default_factory=dict)
    folds: int = 0
    words_tokens: list[int] = field(default_factory=list)
    words_sentences: int = 0
    short_sentences: int = 0

    def add(self, group: str, found: bool, recent: bool) -> None:
        self.total[group] = self.total.get(group, 0) + 1
        self.found[group] = self.found.get(group, 0) + found
        self.recent[group] = self.recent.get(group, 0) + recent

    def share(self, group: str, source: dict[str, int] | None = None) -> str:
        total = self.total.get(group, 0)
        hits = (source if source is not None else self.found).get(group, 0)
        return f"{hits}/{total} ({100 * hits / total:.0f}%)" if total else "-"


OPENERS = (
    "Wow!",
    "Yep.",
    "Thanks, Sam!",
    "Haha.",
    "Agreed.",
    "Morning!",
    "Hmm.",
    "Oh well.",
    "Sounds good, do it.",
    "Cheers, Sam.",
)
CLOSERS = ("Take care!", "Thanks!", "Right?", "Anyway.", "Ugh.", "Lol.", "Night, Sam!")
TAILS = (
    "as usual",
    "no idea why",
    "which was a bit much",
    "honestly",
    "if that makes sense",
    "not that it matters",
    "same as ever",
    "go figure",
    "more or less",
    "for what it is worth",
    "believe it or not",
    "or so it seems",
    "apparently",
    "at least for now",
    "so there is that",
    "which figures",
    "oddly enough",
    "of all things",
    "again and again",
    "for a change",
    "as it turns out",
    "sort of",
    "in a way",
    "and that was that",
    "so to speak",
    "give or take",
    "all things considered",
    "no surprise there",
    "weirdly",
    "thankfully",
    "sadly",
    "kind of",
    "if I am honest",
    "whatever that means",
    "which is fine",
    "who knows",
    "as you do",
    "funny enough",
    "to be fair",
    "to nobody's surprise",
)


def chatty(talk: corpus.LongConversation, seed: int) -> corpus.LongConversation:
    """`talk` with the person's filler varied (see the module's docstring)."""
    rng = random.Random(seed)
    filler = set(corpus.PERSON_FILLER)
    turns = []
    for turn in talk.turns:
        if turn.role != "user":
            turns.append(turn)
            continue
        pieces = []
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", turn.text):
            if sentence in filler:
                if rng.random() < 0.5:
                    pieces.append(rng.choice(OPENERS))
                sentence = f"{sentence[:-1]}, {rng.choice(TAILS)}{sentence[-1]}"
            pieces.append(sentence)
        if rng.random() < 0.4:
            pieces.append(rng.choice(CLOSERS))
        turns.append(dataclasses.replace(turn, text=" ".join(pieces)))
    return dataclasses.replace(talk, turns=tuple(turns))


def _group(fact: corpus.Fact) -> str:
    if fact.kind == "date":
        return "dates"
    return fact.speaker


def _recent_text(display: list[Message], tokens: int) -> str:
    """The newest messages that fit `tokens` (as a request), joined."""
    kept: list[Message] = []
    used = COUNTER.count_request(SYSTEM, [], [])
    for message in reversed(display):
        size = COUNTER.count_message(message)
        if used + size > tokens:
            break
        kept.insert(0, message)
        used += size
    return "\n".join(m.text for m in kept)


async def run(talk: corpus.LongConversation, budget: Budget, tally: Tally) -> None:
    settings = CompactionSettings()
    display: list[Message] = []
    state: CompactionState | None = None
    breaker = BreakerState()
    for turn in talk.turns:
        display.append(user(turn.text) if turn.role == "user" else assistant(turn.text))
        if turn.role != "user":
            continue
        view = build_api_messages(display, state)
        decision = decide(
            tokens=COUNTER.count_request(SYSTEM, view, []),
            budget=budget,
            settings=settings,
            mid_tool_loop=False,
            reclaimable_prune_tokens=0,
            breaker=breaker,
        )
        if decision.action not in ("fold", "emergency_fold"):
            continue
        inputs = FoldInputs.of(
            display,
            state,
            counter=COUNTER,
            system=SYSTEM,
            tools=[],
            budget=budget,
            settings=settings,
            now=NOW,
        )
        if decision.action == "fold":
            new_state = (await fold(inputs, summarize=keeps_nothing, trigger="auto")).state
        else:
            new_state = emergency_fold(inputs, trigger="auto", reason=decision.reason)
        if new_state is not None:
            breaker = record_fold(breaker, new_state.tokens_before, new_state.tokens_after)
            state = new_state
            tally.folds += 1
    view = build_api_messages(display, state)
    final_tokens = COUNTER.count_request(SYSTEM, view, [])
    text = "\n".join(m.text for m in view).casefold()
    recent = _recent_text(display, final_tokens).casefold()
    for fact in talk.facts:
        answer = fact.answer.casefold()
        tally.add(_group(fact), answer in text, answer in recent)
    if state is not None and state.person_words:
        tally.words_tokens.append(COUNTER.count_text(words_block(state.person_words)))
        for said in state.person_words:
            if said.condensed:
                kept = sentences(said.text)
                tally.words_sentences += len(kept)
                tally.short_sentences += sum(len(s.split()) <= 4 for s in kept)


async def main_async(seeds: int, messages: int, varied: bool) -> None:
    started = time.perf_counter()
    print(
        "| window | folds | the person's facts | the assistant's facts | dates "
        "| the person's facts, recent only | person's words block, tokens (mean) "
        "| condensed sentences of ≤ 4 words |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, budget in WINDOWS.items():
        tally = Tally()
        for seed in range(seeds):
            talk = corpus.make_conversation(seed=seed + 1, messages=messages)
            await run(chatty(talk, seed) if varied else talk, budget, tally)
        mean = sum(tally.words_tokens) / len(tally.words_tokens) if tally.words_tokens else 0
        print(
            f"| {name} | {tally.folds} | **{tally.share('person')}** "
            f"| **{tally.share('assistant')}** | {tally.share('dates')} "
            f"| {tally.share('person', tally.recent)} | {mean:,.0f} "
            f"| {tally.short_sentences} of {tally.words_sentences} |"
        )
    print(
        f"\n<!-- {seeds} conversations of {messages} messages, "
        f"{time.perf_counter() - started:.1f} s, Python {platform.python_version()} -->"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--chatty", action="store_true", help="vary the person's filler")
    args = parser.parse_args()
    asyncio.run(main_async(args.seeds, args.messages, args.chatty))


if __name__ == "__main__":
    sys.exit(main())
