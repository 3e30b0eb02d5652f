"""Fidelity: how many of the person's facts reach the model after many folds.

    .venv/bin/python benchmarks/fidelity.py              # five scripted summarizers
    .venv/bin/python benchmarks/fidelity.py --turns 80   # a quicker look
    .venv/bin/python benchmarks/fidelity.py --live MODEL # a real model (not in CI)

A synthetic 200-turn conversation (seeded) on a small window (16,384 tokens, 2,048
reserved for output): the person writes English-like prose, and at 40 random turns states
a fact or a constraint: a number, a file path, a name in code style, a quoted name, a URL,
or an instruction ("Never deploy on a Friday."). Five of those messages are pinned. Each
turn is gated by Foldline's real policy (`decide`) and folded by the real engine (`fold`,
`emergency_fold`), counted exactly (o200k_base, OpenAI Chat wire). After the last turn the
final request is rendered and each fact's key string is looked for verbatim.

The scripted summarizers stand for the kinds of models people actually run:
- format-following: the six requested sections, the person's statements with a detail
  (digits, paths, quotes, instructions) kept as bullets, newest first within the size
  asked for, older statements dropped when it runs out of room;
- format-ignoring: the same content as prose, without any heading;
- drops-40%: format-following, then 40% of its lines removed (deterministically);
- paraphrases-numbers: format-following with every digit written as a word;
- always-fails: raises on every call (an unreachable server).

"with the summary alone" counts the facts found in the final request outside the
person's words kept after the summary: what the summarizer kept by itself.

With `--adversarial` it runs the cases of `fidelity_cases.py` instead (overridden
decisions, buried constraints, people and roles, facts said once in chatter), with a
summarizer that keeps nothing and every kind above, on an 8k and a 16k window.

With `--live MODEL` the same conversation is folded by a real model from your Foldline
configuration (`~/.local/share/foldline/config.toml` or `--data-dir`), and after the last
turn the model is asked one probe question per fact with the final request as context;
an answer scores when it contains the fact's key. It costs real tokens (roughly 60 fold
calls and 40 probes of up to 16k input each) and is never run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import platform
import random
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import fidelity_cases as cases

from foldline.core.budget import Budget
from foldline.core.compaction import FoldInputs, SummaryRequest, fold
from foldline.core.digest import emergency_fold
from foldline.core.messages import Message, ToolSpec, assistant, user
from foldline.core.person_words import words_block
from foldline.core.pins import Pin
from foldline.core.policy import BreakerState, decide, record_fold
from foldline.core.prompts import (
    STRUCTURED_HEADINGS,
    SUMMARY_SYSTEM,
    escape_data,
    render_message,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
from foldline.core.tokens import OpenAIChatCounter
from foldline.core.view import build_api_messages
from foldline.tokenizers import get_encoder

SYSTEM = "You are a helpful assistant working with the person on a software project."
TOOLS: list[ToolSpec] = []
BUDGET = Budget(context_window=16_384, max_output_tokens=2_048)
SETTINGS = CompactionSettings(keep_recent_tokens=3_000)
COUNTER = OpenAIChatCounter(get_encoder("o200k_base"))
NOW = "2025-06-01T12:00:00Z"
FACT_COUNT = 40
PINNED_COUNT = 5

VOCABULARY = (
    "the storage layer keeps every column while the search index needs its triggers "
    "restored after each rewrite we agreed to measure the gate on large histories and "
    "write the numbers down later the review found a slow query in the sidebar listing "
    "so we looked at the plan and the indexes before changing anything else"
)
WORDS = tuple(VOCABULARY.split())


@dataclass(frozen=True)
class Fact:
    sentence: str
    """What the person writes."""
    key: str
    """What must reach the model verbatim."""
    question: str
    """The probe question of `--live`."""


FACT_KINDS: tuple[tuple[int, Callable[[random.Random, int], str], str, str], ...] = (
    (
        7,
        lambda rng, i: f"{rng.randint(10, 99)},{rng.randint(100, 999)}",
        "The budget for phase {upper} is {key} credits.",
        "What is the budget for phase {upper}?",
    ),
    (
        7,
        lambda rng, i: str(rng.randint(3000, 9999)),
        "Service number {lower} listens on port {key}.",
        "Which port does service {lower} listen on?",
    ),
    (
        7,
        lambda rng, i: (
            f"/srv/app{i}/{rng.choice(['conf', 'data', 'keys'])}/{rng.randint(100, 999)}.toml"
        ),
        "The settings for worker {i} are in {key} on the host.",
        "Where are the settings for worker {i}?",
    ),
    (
        6,
        lambda rng, i: (
            f"load_{rng.choice(['window', 'index', 'pins', 'folds'])}_{i}{rng.randint(10, 99)}"
        ),
        "The function to call for step {i} is `{key}`.",
        "Which function is called for step {i}?",
    ),
    (
        3,
        lambda rng, i: f"Project {rng.choice(['Falcon', 'Heron', 'Osprey'])} {rng.randint(10, 99)}",
        'We call release {i} "{key}" in public.',
        "What do we call release {i} in public?",
    ),
    (
        3,
        lambda rng, i: f"https://docs.example.com/guide/{rng.randint(1000, 9999)}",
        "The reference for topic {i} is {key} for everyone.",
        "What is the reference URL for topic {i}?",
    ),
)
"""The facts with a value: how many, the value drawn for the i-th (its key), the sentence
the person writes and the probe question (`{i}`, `{upper}` A, B, …, `{lower}` a, b, …)."""


def make_facts(rng: random.Random) -> list[Fact]:
    """40 facts of six kinds, with unique keys: those of FACT_KINDS, then rules (a rule's
    sentence is its own key)."""
    facts: list[Fact] = []
    for count, draw, sentence, question in FACT_KINDS:
        for i in range(count):
            names = {"i": i, "upper": chr(65 + i), "lower": chr(97 + i), "key": draw(rng, i)}
            facts.append(Fact(sentence.format(**names), names["key"], question.format(**names)))
    verbs = [
        "deploy on a Friday",
        "commit secrets",
        "skip the migration tests",
        "rename public tables",
        "log personal data",
        "merge without review",
        "disable the backups",
    ]
    for i, verb in enumerate(verbs):
        sentence = f"Never {verb}, rule {i}."
        facts.append(Fact(sentence, sentence, f"Is there a rule about whether to {verb}?"))
    assert len(facts) == FACT_COUNT and len({f.key for f in facts}) == FACT_COUNT
    return facts


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def make_conversation(turns: int, seed: int) -> tuple[list[tuple[str, str]], list[Fact], set[int]]:
    """(user text, assistant text) per turn, the facts, and the turns whose user message
    is pinned."""
    rng = random.Random(seed)
    facts = make_facts(rng)
    fact_turns = sorted(rng.sample(range(min(turns - 10, turns)), FACT_COUNT))
    by_turn = dict(zip(fact_turns, facts, strict=True))
    pinned_turns = set(rng.sample(fact_turns, PINNED_COUNT))
    out = []
    for turn in range(turns):
        text = prose(rng, rng.randint(30, 90))
        if turn in by_turn:
            text = f"{prose(rng, rng.randint(5, 20))} {by_turn[turn].sentence} {text}"
        out.append((text, prose(rng, rng.randint(150, 300))))
    return out, [by_turn[t] for t in fact_turns], pinned_turns


# --- the scripted summarizers ------------------------------------------------------

_DETAIL = re.compile(r"\d|/|`|\"|never|always|must|don't", re.IGNORECASE)


def _person_statements(prompt: str) -> list[str]:
    """The person's statements a careful model would keep: from the transcript (user
    blocks), the previous summary and chunk notes (their bullets), oldest first."""
    out: list[str] = []
    for block in re.findall(r"<previous-summary>(.*?)</previous-summary>", prompt, re.S):
        out += [line[2:] for line in block.splitlines() if line.startswith("- ")]
    for block in re.findall(r"<note[^>]*>(.*?)</note>", prompt, re.S):
        out += [line[2:] for line in block.splitlines() if line.startswith("- ")]
    for transcript in re.findall(r"<transcript>(.*?)</transcript>", prompt, re.S):
        for role, text in re.findall(r"\[#\d+ (\w+)\]\n(.*?)(?=\n\n\[#|\Z)", transcript, re.S):
            if role == "user":
                out += [s for s in re.split(r"(?<=[.!?])\s+", text) if _DETAIL.search(s)]
    seen: set[str] = set()
    return [s for s in out if not (s in seen or seen.add(s))]  # type: ignore[func-returns-value]


def _fit_newest(lines: list[str], max_tokens: int) -> list[str]:
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        size = COUNTER.count_text(line) + 1
        if used + size > max_tokens:
            break
        kept.insert(0, line)
        used += size
    return kept


def format_following(request: SummaryRequest) -> str:
    bullets = [f"- {s}" for s in _person_statements(request.prompt)]
    frame = 120  # the headings and the narrative line
    kept = _fit_newest(bullets, max(request.max_output_tokens - frame, 0))
    sections = {h: "None." for h in STRUCTURED_HEADINGS}
    sections["Constraints & Requirements"] = "\n".join(kept) or "None."
    sections["Session Narrative"] = "The person and the assistant reviewed the storage layer."
    if "## Active Task" not in request.prompt:  # a chunk or intermediate note
        return "\n".join(kept) or "Nothing notable."
    return "\n\n".join(f"## {h}\n{body}" for h, body in sections.items())


def format_ignoring(request: SummaryRequest) -> str:
    kept = _fit_newest(_person_statements(request.prompt), request.max_output_tokens - 40)
    return "In this part of the conversation the person said: " + " ".join(kept)


def drops_forty_percent(request: SummaryRequest) -> str:
    lines = format_following(request).splitlines()

    def dropped(line: str) -> bool:
        return line.startswith("- ") and hashlib.sha256(line.encode()).digest()[0] < 102

    return "\n".join(line for line in lines if not dropped(line))


_DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def paraphrases_numbers(request: SummaryRequest) -> str:
    text = format_following(request)
    return re.sub(r"\d", lambda m: f" {_DIGITS[int(m.group())]} ", text)


def always_fails(request: SummaryRequest) -> str:
    raise ConnectionError("the summarizer cannot be reached")


SUMMARIZERS: dict[str, Callable[[SummaryRequest], str]] = {
    "format-following": format_following,
    "format-ignoring": format_ignoring,
    "drops-40%": drops_forty_percent,
    "paraphrases-numbers": paraphrases_numbers,
    "always-fails": always_fails,
}


# --- the run -----------------------------------------------------------------------


@dataclass
class Result:
    name: str
    folds: int = 0
    degraded: int = 0
    free_form: int = 0
    pinned_found: int = 0
    unpinned_found: int = 0
    unpinned_by_summary: int = 0
    pinned_total: int = 0
    unpinned_total: int = 0
    final_tokens: int = 0
    state: CompactionState | None = None
    seconds: float = 0.0
    final_view: list[Message] = field(default_factory=list)


AFTER_VIEW = False
"""`--after-view`: folds ask their summary after the conversation's view, as the chat
layer does when the summarizer is the conversation's own model."""

_KEPT = re.compile(r"except its last (\d+) messages?")


def as_read_from_view(
    request: SummaryRequest, display: list[Message], state: CompactionState | None
) -> SummaryRequest:
    """What a faithful model reads from a request after the view: the summary the view
    opens with and the messages before the kept ones, then the request. The scripted
    summarizers read it as they read a request of its own."""
    start = state.api_start_index if state is not None else 0
    kept = _KEPT.search(request.prompt)
    end = len(display) - (int(kept.group(1)) if kept else 0)
    blocks = [render_message(start + i, m) for i, m in enumerate(display[start:end])]
    sections = []
    if state is not None:
        sections.append(
            f"<previous-summary>\n{escape_data(state.summary_message)}\n</previous-summary>"
        )
    sections.append("<transcript>\n" + escape_data("\n\n".join(blocks)) + "\n</transcript>")
    prompt = "\n\n".join([*sections, request.prompt])
    return SummaryRequest(SUMMARY_SYSTEM, prompt, request.max_output_tokens, request.purpose)


async def run_one(
    name: str,
    summarize: Callable[[SummaryRequest], Awaitable[str]],
    turns: list[tuple[str, str]],
    facts: list[Fact],
    pinned_turns: set[int],
) -> Result:
    started = time.perf_counter()
    result = Result(name)
    display: list[Message] = []
    pins: list[Pin] = []
    state: CompactionState | None = None
    asked = summarize

    async def summarize(request: SummaryRequest) -> str:
        if request.after_view:
            request = as_read_from_view(request, display, state)
        return await asked(request)

    breaker = BreakerState()
    for turn, (text, answer) in enumerate(turns):
        display.append(user(text))
        if turn in pinned_turns:
            pins.append(Pin(len(display) - 1, display[-1]))
        view = build_api_messages(display, state, pins)
        tokens = COUNTER.count_request(SYSTEM, view, TOOLS)
        decision = decide(
            tokens=tokens,
            budget=BUDGET,
            settings=SETTINGS,
            mid_tool_loop=False,
            reclaimable_prune_tokens=0,
            breaker=breaker,
        )
        if decision.action in ("fold", "emergency_fold"):
            inputs = FoldInputs.of(
                display,
                state,
                counter=COUNTER,
                system=SYSTEM,
                tools=TOOLS,
                budget=BUDGET,
                settings=SETTINGS,
                now=NOW,
                pins=pins,
                summary_after_view=AFTER_VIEW,
            )
            if decision.action == "fold":
                new_state = (await fold(inputs, summarize=summarize, trigger="auto")).state
            else:
                new_state = emergency_fold(inputs, trigger="auto", reason=decision.reason)
            if new_state is not None:
                breaker = record_fold(breaker, new_state.tokens_before, new_state.tokens_after)
                state = new_state
                result.folds += 1
                result.degraded += new_state.degraded
                result.free_form += new_state.strategy == "free-form"
        display.append(assistant(answer))
    view = build_api_messages(display, state, pins)
    result.final_view = view
    result.final_tokens = COUNTER.count_request(SYSTEM, view, TOOLS)
    assert result.final_tokens <= BUDGET.input_budget  # type: ignore[operator]
    everything = "\n".join(m.text for m in view)
    summary_alone = everything
    if state is not None and state.person_words:
        summary_alone = everything.replace(words_block(state.person_words), "")
    pinned_texts = {display[p.index].text for p in pins}
    for fact in facts:
        if any(fact.sentence in t for t in pinned_texts):
            result.pinned_total += 1
            result.pinned_found += fact.key in everything
        else:
            result.unpinned_total += 1
            result.unpinned_found += fact.key in everything
            result.unpinned_by_summary += fact.key in summary_alone
    result.state = state
    result.seconds = time.perf_counter() - started
    return result


def share(found: int, total: int) -> str:
    return f"{found}/{total} ({100 * found / total:.0f}%)" if total else "-"


def table(results: list[Result]) -> str:
    rows = [
        "| summarizer | folds (degraded, free-form) | pinned facts | unpinned facts "
        "| unpinned, with the summary alone | last fold's details: kept / appended / total "
        "| final request tokens |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        s = r.state
        details = f"{s.details_kept} / {s.details_appended} / {s.details_total}" if s else "-"
        rows.append(
            f"| {r.name} | {r.folds} ({r.degraded}, {r.free_form}) "
            f"| {share(r.pinned_found, r.pinned_total)} "
            f"| {share(r.unpinned_found, r.unpinned_total)} "
            f"| {share(r.unpinned_by_summary, r.unpinned_total)} | {details} "
            f"| {r.final_tokens:,} |"
        )
    return "\n".join(rows)


async def scripted(turns: int, seed: int) -> None:
    conversation, facts, pinned = make_conversation(turns, seed)
    results = []
    for name, summarizer in SUMMARIZERS.items():

        async def summarize(request: SummaryRequest, summarizer=summarizer) -> str:
            return summarizer(request)

        results.append(await run_one(name, summarize, conversation, facts, pinned))
    print(table(results))
    print(
        f"\n<!-- {turns} turns, seed {seed}, {sum(r.seconds for r in results):.1f} s, "
        f"Python {platform.python_version()} -->"
    )


async def live(model: str, turns: int, seed: int, data_dir: Path | None) -> None:
    from foldline.chat.summarizer import make_summarizer
    from foldline.config import load_config
    from foldline.paths import resolve_data_dir
    from foldline.providers.base import ModelRequest, TextDelta
    from foldline.providers.registry import provider_for_model

    config = load_config(resolve_data_dir(data_dir))
    provider = provider_for_model(config, model)
    summarize = make_summarizer(provider, model)
    conversation, facts, pinned = make_conversation(turns, seed)
    result = await run_one(f"live: {model}", summarize, conversation, facts, pinned)  # type: ignore[arg-type]
    print(table([result]))
    answered = 0
    for fact in facts:
        question = user(f"Answer from our conversation only, briefly: {fact.question}")
        request = ModelRequest(
            model=model,
            system=SYSTEM,
            messages=[*result.final_view, question],
            tools=[],
            max_output_tokens=200,
        )
        reply = "".join(
            [e.text async for e in provider.stream(request) if isinstance(e, TextDelta)]
        )
        answered += fact.key.lower() in reply.lower()
    print(f"\nprobe questions answered with the fact: {share(answered, len(facts))}")


async def adversarial(seeds: int, shares: list[float]) -> None:
    kinds: dict[str, Callable[[SummaryRequest], str]] = {
        "keeps-nothing": cases.keeps_nothing,
        **SUMMARIZERS,
    }
    windows = {"8k": Budget(context_window=8_192, max_output_tokens=1_024), "16k": BUDGET}
    started = time.perf_counter()
    for share_ in shares:
        settings = CompactionSettings(keep_recent_tokens=1_500, person_words_share=share_)
        rows = []
        for name, summarizer in kinds.items():

            async def summarize(request: SummaryRequest, summarizer=summarizer) -> str:
                return summarizer(request)

            for window, budget in windows.items():
                tally = cases.Tally(cap=cases.budget_cap(budget, settings))
                for seed in range(seeds):
                    await cases.run_case(
                        cases.make_case(seed),
                        summarize,
                        counter=COUNTER,
                        budget=budget,
                        settings=settings,
                        tally=tally,
                    )
                rows.append((name, window, tally))
        print(f"\nperson_words_share = {share_}\n")
        print(cases.table(rows))
    print(
        f"\n<!-- {seeds} seeds, {time.perf_counter() - started:.1f} s, "
        f"Python {platform.python_version()} -->"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--live", metavar="MODEL", help="fold with a real configured model")
    parser.add_argument("--data-dir", type=Path, help="Foldline data dir for --live")
    parser.add_argument("--adversarial", action="store_true", help="run fidelity_cases.py")
    parser.add_argument("--seeds", type=int, default=10, help="conversations per case run")
    parser.add_argument(
        "--share", type=float, action="append", help="person_words_share (repeatable)"
    )
    parser.add_argument("--after-view", action="store_true", help="summaries asked after the view")
    args = parser.parse_args()
    global AFTER_VIEW
    AFTER_VIEW = args.after_view
    if args.adversarial:
        default = CompactionSettings().person_words_share
        asyncio.run(adversarial(args.seeds, args.share or [default]))
    elif args.live:
        asyncio.run(live(args.live, args.turns, args.seed, args.data_dir))
    else:
        asyncio.run(scripted(args.turns, args.seed))


if __name__ == "__main__":
    sys.exit(main())
