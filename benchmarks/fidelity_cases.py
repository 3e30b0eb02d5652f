"""Adversarial fidelity cases: decisions overridden later, constraints buried in chatter,
people with roles, facts said once in passing; folded three times.

    .venv/bin/python benchmarks/fidelity.py --adversarial      # every summarizer kind
    .venv/bin/python benchmarks/fidelity.py --adversarial --seeds 3

Each seeded conversation has four parts of 12 turns. The person mostly chats ("lol",
"ok cool", "Turn 7:", "[[reply 200]]"); in the first three parts, 17 of the turns bury one
statement each in that chatter: a decision in plain words (four of them overridden later
with "actually", "instead", "forget X and Y", "new plan", "scratch that"), a constraint told
as a story ("someone tried X; it blew up; let's not do that this time"), a person and their
role, or a fact said once; three of them in plain words with none of the usual markers
("ok, teal it is for the header"). The assistant answers with prose and code. After each of the
first three parts the conversation is folded (the real `fold`, so the third fold stacks
on two); after the last one the model's view is searched for each statement's key
phrases (case and spacing aside).

Reported per summarizer kind and window: the share of statements of each kind still in
the view, the tokens of the person's words block (and its cap), and contamination: fold
cycles after which a superseded statement was in the view without the override that
replaced it (checked after every fold, for every override already said).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from foldline.core.budget import Budget
from foldline.core.compaction import FoldInputs, SummaryRequest, fold
from foldline.core.messages import Message, assistant, user
from foldline.core.person_words import words_block, words_cap
from foldline.core.prompts import STRUCTURED_HEADINGS
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
from foldline.core.tokens import TokenCounter
from foldline.core.view import build_api_messages

PARTS = 4
TURNS_PER_PART = 12
NOW = "2025-06-01T12:00:00Z"
SYSTEM = "You are a helpful assistant working with the person on a software project."

KINDS = ("decision", "constraint", "person", "fact")

FIRST = ["Priya", "Tomás", "Aiko", "Dmitri", "Fatima", "Lars", "Ngozi", "Mateo", "Wen", "Olga"]
LAST = ["Raman", "Okafor", "Lindqvist", "Haddad", "Moreau", "Tanaka", "Novak", "Brennan"]
STORES = ["Redis", "Postgres", "DynamoDB", "SQLite", "Cassandra", "MongoDB"]
COLORS = ["teal", "amber", "violet", "slate", "coral", "olive"]
LANGS = ["Markdown", "AsciiDoc", "reStructuredText"]
QUEUES = ["RabbitMQ", "Kafka", "SQS", "NATS", "Celery", "Sidekiq"]

CHATTER = (
    "lol ok.",
    "ok cool, sounds good.",
    "hmm, give me a sec.",
    "sorry, was in a meeting.",
    "nice, thanks!",
    "coffee first, then we continue.",
    "haha fair enough.",
    "right, makes sense I guess.",
    "ugh, mondays.",
    "wait what did you mean by that?",
    "cool cool cool.",
    "brb, the dog needs a walk.",
)
SMALL_TALK = (
    "the weather here is grey again and the train was late this morning",
    "I spent half the morning reading about compilers for no good reason",
    "my sister visited yesterday and we cooked far too much food",
    "the coffee machine on our floor is broken again which is a tragedy",
    "I keep meaning to clean up my desk but it never happens",
    "somebody in the office is playing really loud music today",
    "we had pizza for lunch and now everyone is sleepy",
    "my laptop fan sounds like a jet engine when the tests run",
    "I was thinking about the weekend and what to do with the garden",
    "the new chairs in the office are surprisingly comfortable",
)
_FILLER_TEXT = (
    "the storage layer keeps every column while the search index needs its triggers "
    "restored after each rewrite we measured the gate on large histories and wrote the "
    "numbers down the review found a slow query in the sidebar listing so we looked at "
    "the plan and the indexes before changing anything else"
)
FILLER = _FILLER_TEXT.split()


@dataclass(frozen=True)
class Statement:
    kind: str
    text: str
    """The sentence the person writes, buried in chatter."""
    keys: tuple[str, ...]
    """What must be in the model's view for it to count as seen."""
    replaces: tuple[str, ...] = ()
    """For an override: the key phrases of the statement it supersedes."""


@dataclass(frozen=True)
class Case:
    turns: list[tuple[str, str]]
    statements: list[tuple[int, Statement]]
    """(turn, statement), superseded ones included (their `kind` is "superseded")."""


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _three(rng: random.Random, pool: list[str]) -> tuple[str, str, str]:
    a, b, c = rng.sample(pool, 3)
    return a, b, c


def make_statements(rng: random.Random) -> list[tuple[Statement, Statement | None]]:
    """17 statements: (the statement, the superseded one said earlier, if any)."""
    a, b, _ = _three(rng, STORES)
    c1, c2, _ = _three(rng, COLORS)
    q1, q2, q3 = _three(rng, QUEUES)
    feature = rng.choice(["export button", "dark mode", "bulk editor", "audit view"])
    first = rng.sample(FIRST, 4)
    ip = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
    account = f"{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    day = rng.choice(["Tuesday", "Wednesday", "Thursday"])
    hour = rng.choice(["9:30", "14:00", "16:15"])
    bucket = f"fl-{rng.choice(['archive', 'exports', 'media'])}-{rng.randint(10, 99)}"
    days = rng.choice([14, 30, 45])
    lang = rng.choice(LANGS)
    manager = _name(rng)
    out: list[tuple[Statement, Statement | None]] = [
        (
            Statement(
                "decision",
                f"Actually, forget {a} for the sessions; new plan: sessions go in {b}.",
                (f"sessions go in {b}",),
                (f"store the sessions in {a}",),
            ),
            Statement("superseded", f"Let's store the sessions in {a}.", ()),
        ),
        (
            Statement(
                "decision",
                f"Instead of {c1}, we go with {c2} for the dashboard.",
                (f"we go with {c2} for the dashboard",),
                (f"dashboard theme will be {c1}",),
            ),
            Statement("superseded", f"The dashboard theme will be {c1}.", ()),
        ),
        (
            Statement(
                "decision",
                f"Forget {q1} and {q2}; the job queue runs on {q3}.",
                (f"the job queue runs on {q3}",),
                (f"use {q1} and {q2} for the job queue",),
            ),
            Statement("superseded", f"We use {q1} and {q2} for the job queue.", ()),
        ),
        (
            Statement(
                "decision",
                f"Scratch that: the {feature} ships to everyone at once, no flag.",
                ("ships to everyone at once",),
                (f"ship the {feature} behind a feature flag",),
            ),
            Statement("superseded", f"We'll ship the {feature} behind a feature flag.", ()),
        ),
        (Statement("decision", f"We decided to write the docs in {lang}.", (lang,)), None),
        (
            Statement(
                "constraint",
                "someone decided to deploy on a Friday last year; it blew up; let's not "
                "do that this time",
                ("deploy on a Friday", "let's not do that this time"),
            ),
            None,
        ),
        (
            Statement(
                "constraint",
                "oh and the client said the invoices must never show VAT numbers, weird but ok",
                ("invoices must never show VAT numbers",),
            ),
            None,
        ),
        (
            Statement(
                "constraint",
                f"fyi legal wants the logs kept {days} days at most",
                (f"logs kept {days} days at most",),
            ),
            None,
        ),
        (
            Statement("person", f"btw {manager} is our release manager now", (manager,)),
            None,
        ),
        (
            Statement(
                "person",
                f"{first[0]} handles the billing questions",
                (f"{first[0]} handles the billing",),
            ),
            None,
        ),
        (
            Statement(
                "person",
                f"ask {first[1]} if anything's unclear on the API, she designed it",
                (f"ask {first[1]}",),
            ),
            None,
        ),
        (
            Statement("fact", f"the staging box is {ip} btw", (ip,)),
            None,
        ),
        # Said in plain words, with none of the usual markers: kept while the words fit,
        # at risk once they are condensed.
        (
            Statement(
                "decision", f"ok, {c1} it is for the header", (f"{c1} it is for the header",)
            ),
            None,
        ),
        (
            Statement(
                "person",
                f"{first[2]} is taking over the frontend from next week",
                (f"{first[2]} is taking over the frontend",),
            ),
            None,
        ),
        (
            Statement(
                "fact",
                f"the wifi password at the office is {rng.choice(['otter', 'falcon'])}-blue-seven",
                ("-blue-seven",),
            ),
            None,
        ),
        (
            Statement(
                "fact",
                f"meeting moved, the demo is on {day} at {hour} now",
                (f"{day} at {hour}",),
            ),
            None,
        ),
        (
            Statement(
                "fact",
                f"our bucket is called {bucket}, and the vendor account is {account}",
                (bucket, account),
            ),
            None,
        ),
    ]
    return out


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(FILLER) for _ in range(words)).capitalize() + "."


def _chat(rng: random.Random, turn: int) -> str:
    noise = rng.choice(["", f"Turn {turn}: ", "[[reply 200]] "])
    talk = [t.capitalize() + "." for t in rng.sample(SMALL_TALK, rng.randint(1, 3))]
    return noise + " ".join([*rng.sample(CHATTER, rng.randint(1, 2)), *talk])


def _answer(rng: random.Random) -> str:
    code = (
        "\n\n```python\ndef handler(request):\n    value = 4242\n"
        "    return render(request, value)\n```\n"
        if rng.random() < 0.3
        else ""
    )
    return _prose(rng, rng.randint(120, 220)) + code


def make_case(seed: int) -> Case:
    rng = random.Random(seed)
    pairs = make_statements(rng)
    said_turns = sorted(rng.sample(range((PARTS - 1) * TURNS_PER_PART), len(pairs) + 4))
    # Overrides come after what they replace: the first four slots take the superseded
    # statements of the four overrides, the rest are shuffled among the others.
    superseded = [old for _, old in pairs if old is not None]
    order = superseded + [s for s, _ in pairs]
    tail_slots = said_turns[len(superseded) :]
    rng.shuffle(tail_slots)
    slots = said_turns[: len(superseded)] + tail_slots
    by_turn: dict[int, Statement] = {}
    for slot, statement in zip(slots, order, strict=True):
        by_turn[slot] = statement
    # An override must come after its superseded statement: swap when it does not.
    for statement, old in pairs:
        if old is None:
            continue
        t_new = next(t for t, s in by_turn.items() if s is statement)
        t_old = next(t for t, s in by_turn.items() if s is old)
        if t_new < t_old:
            by_turn[t_new], by_turn[t_old] = old, statement
    turns = []
    statements = []
    for turn in range(PARTS * TURNS_PER_PART):
        text = _chat(rng, turn)
        if turn in by_turn:
            statement = by_turn[turn]
            statements.append((turn, statement))
            text = f"{text} {statement.text.rstrip('.')}. {rng.choice(CHATTER)}"
        turns.append((text, _answer(rng)))
    return Case(turns, statements)


# --- scoring -------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def seen(view_text: str, keys: tuple[str, ...]) -> bool:
    return all(_norm(k) in view_text for k in keys)


def contaminated(view_text: str, statements: list[tuple[int, Statement]], said: int) -> int:
    """Overrides already said whose superseded statement is in the view without them."""
    count = 0
    for turn, statement in statements:
        if turn >= said or not statement.replaces:
            continue
        if seen(view_text, statement.replaces) and not seen(view_text, statement.keys):
            count += 1
    return count


# --- summarizers ---------------------------------------------------------------------


def keeps_nothing(request: SummaryRequest) -> str:
    """A summary in the requested format with nothing specific in it."""
    if "## Active Task" not in request.prompt:
        return "The person and the assistant talked about the project."
    return "\n\n".join(
        f"## {h}\n{'The person and the assistant talked about the project.' if i == 5 else 'None.'}"
        for i, h in enumerate(STRUCTURED_HEADINGS)
    )


# --- the run -------------------------------------------------------------------------


@dataclass
class Tally:
    seen: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    cycles: int = 0
    contaminated_cycles: int = 0
    words_tokens: list[int] = field(default_factory=list)
    """The size of the person's words block after each fold."""
    cap: int = 0

    def share(self, kinds: tuple[str, ...] = KINDS) -> float:
        total = sum(self.total[k] for k in kinds)
        return sum(self.seen[k] for k in kinds) / total if total else 0.0


async def run_case(
    case: Case,
    summarize: Callable[[SummaryRequest], Awaitable[str]],
    *,
    counter: TokenCounter,
    budget: Budget,
    settings: CompactionSettings,
    tally: Tally,
) -> None:
    display: list[Message] = []
    state: CompactionState | None = None
    for part in range(PARTS):
        for text, answer in case.turns[part * TURNS_PER_PART : (part + 1) * TURNS_PER_PART]:
            display += [user(text), assistant(answer)]
        if part == PARTS - 1:
            break
        inputs = FoldInputs.of(
            display,
            state,
            counter=counter,
            system=SYSTEM,
            tools=[],
            budget=budget,
            settings=settings,
            now=NOW,
        )
        outcome = await fold(inputs, summarize=summarize, trigger="manual")
        if outcome.state is None:
            continue
        state = outcome.state
        view = _norm("\n".join(m.text for m in build_api_messages(display, state)))
        tally.cycles += 1
        said = (part + 1) * TURNS_PER_PART
        tally.contaminated_cycles += contaminated(view, case.statements, said) > 0
        block = words_block(state.person_words)
        size = counter.count_text(block) if block else 0
        tally.words_tokens.append(size)
    view = _norm("\n".join(m.text for m in build_api_messages(display, state)))
    for _, statement in case.statements:
        if statement.kind in KINDS:
            tally.total[statement.kind] += 1
            tally.seen[statement.kind] += seen(view, statement.keys)


def budget_cap(budget: Budget, settings: CompactionSettings) -> int:
    return words_cap(budget.input_budget, settings.person_words_share)


def pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def table(rows: list[tuple[str, str, Tally]]) -> str:
    out = [
        "| summarizer | window | decisions | constraints | people | facts | all "
        "| contaminated fold cycles | person's words, tokens (mean / max / cap) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, window, t in rows:
        shares = " | ".join(pct(t.share((k,))) for k in KINDS)
        mean = sum(t.words_tokens) / len(t.words_tokens) if t.words_tokens else 0
        peak = max(t.words_tokens, default=0)
        out.append(
            f"| {name} | {window} | {shares} | **{pct(t.share())}** "
            f"| {t.contaminated_cycles} of {t.cycles} "
            f"| {mean:,.0f} / {peak:,} / {t.cap:,} |"
        )
    return "\n".join(out)
