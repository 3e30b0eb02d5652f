"""Long conversations for measuring recall: hundreds of dated messages, facts said once.

    from long_conversations import make_conversation, make_project
    talk = make_conversation(seed=1, messages=400)
    for turn in talk.turns: ...          # role, text, at (a datetime, months apart)
    for fact in talk.facts: ...          # question, answer, speaker, kind, index

Deterministic for a seed. A conversation is a series of sessions a few days apart
(months of dates in all). The person and the assistant chat about everyday things
(plain-word filler that shares many words with the questions, so a word match alone is
not enough), and facts are said ONCE, in plain words, at seeded places:

- `plain` facts by the person ("Been reading up on beekeeping lately...") and by the
  assistant ("For your commute I'd go with the Brompton folding bike..."),
- `changed` decisions: said once, then changed later in other words ("Change of plan on
  the venue: we're booking the old mill instead."); the answer is the later one,
- `date` facts: the answer is the day the message was written (`YYYY-MM-DD`), which only
  the message's own date carries.

Each fact has a question in plain words, worded differently from the statement (a
synonym, another form of a word), and the answer string a reply must contain.

`make_project` makes several conversations of one project whose facts are all
different (each template used by one conversation only), for questions asked in one
conversation about what was said in another.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

Speaker = Literal["person", "assistant"]
Kind = Literal["plain", "changed", "date"]


@dataclass(frozen=True)
class Turn:
    role: Literal["user", "assistant"]
    text: str
    at: datetime


@dataclass(frozen=True)
class Fact:
    speaker: Speaker
    kind: Kind
    question: str
    answer: str
    index: int
    """The message (display index) that states the answer."""
    conversation: int = 0
    """Which conversation of a project said it (0 for a lone conversation)."""


@dataclass(frozen=True)
class LongConversation:
    title: str
    turns: tuple[Turn, ...]
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class Template:
    """One fact: the statement (with `{x}` for the answer, and `{a}` for the first
    choice of a changed decision), the question, and the pool the answer comes from."""

    speaker: Speaker
    kind: Kind
    statement: str
    question: str
    pool: tuple[str, ...] = ("",)
    first: str = ""
    """For `changed`: the first statement, with `{a}` (a value the later one replaces)."""


PERSON: tuple[Template, ...] = (
    Template(
        "person",
        "plain",
        "Been reading up on {x} lately, always wanted to give it a go one day.",
        "What hobby did I say I was looking into?",
        ("community gardens", "beekeeping", "pottery", "bouldering", "birdwatching", "calligraphy"),
    ),
    Template(
        "person",
        "plain",
        "My sister {x} just started as a nurse at the hospital in Leeds.",
        "What is my sister's name?",
        ("Maren", "Odile", "Greta", "Ines", "Tamsin", "Ylva"),
    ),
    Template(
        "person",
        "plain",
        "Quick thing to remember, I can't eat {x}, they make me really ill.",
        "Which food am I allergic to?",
        ("peanuts", "shellfish", "sesame", "kiwi fruit", "mustard"),
    ),
    Template(
        "person",
        "plain",
        "We finally sold the old car and got a {x} instead.",
        "What vehicle did we buy to replace the car?",
        ("Skoda Octavia", "Toyota Yaris", "cargo bike", "Renault Zoe", "Kia Niro"),
    ),
    Template(
        "person",
        "plain",
        "We adopted a rescue dog last weekend, we're calling him {x}.",
        "What did we name the dog we adopted?",
        ("Biscuit", "Pepper", "Juniper", "Waffles", "Bramble"),
    ),
    Template(
        "person",
        "plain",
        "The most I can spend on the trip is {x} euros, everything included.",
        "What is my budget for the holiday?",
        ("1800", "2350", "950", "3100", "1275"),
    ),
    Template(
        "person",
        "plain",
        "My manager wants me in {x} for the kickoff in the spring.",
        "Which city does my boss want me to travel to?",
        ("Rotterdam", "Porto", "Tallinn", "Gdansk", "Ljubljana"),
    ),
    Template(
        "person",
        "plain",
        "I picked the {x} back up after ten years, my fingers are killing me.",
        "Which musical instrument did I start playing again?",
        ("cello", "trumpet", "banjo", "clarinet", "accordion"),
    ),
    Template(
        "person",
        "plain",
        "Had lunch with {x} today, she's moving to Canada in June.",
        "Which of my friends is relocating to Canada?",
        ("Harriet", "Solveig", "Beatriz", "Niamh", "Ottilie"),
    ),
    Template(
        "person",
        "plain",
        "Finished {x} on the train home, the ending wrecked me.",
        "Which novel did I finish reading?",
        (
            "The Remains of the Day",
            "Piranesi",
            "Stoner",
            "Klara and the Sun",
            "Tomorrow and Tomorrow",
        ),
    ),
    Template(
        "person",
        "plain",
        "Ran my first 10k this morning, it took {x} minutes.",
        "How long did my first 10k run take me?",
        ("52", "58", "61", "49", "66"),
    ),
    Template(
        "person",
        "plain",
        "Our landlord is a guy called {x}, he never picks up the phone.",
        "Who is our landlord?",
        ("Mr Castellano", "Mr Whitcombe", "Mr Abernathy", "Mr Okonjo"),
    ),
    Template(
        "person",
        "plain",
        "The kids go to {x} now, it's a short walk from the flat.",
        "Which school do my children attend?",
        ("St Aidan's Primary", "Hillcrest Primary", "Riverside Academy", "Larkfield School"),
    ),
    Template(
        "person",
        "plain",
        "My grandmother turns {x} next month and we're throwing her a party.",
        "How old is my grandma going to be?",
        ("ninety", "eighty-five", "ninety-five", "a hundred"),
    ),
    Template(
        "person",
        "changed",
        "Change of plan on the wedding venue: we're booking {x} instead of {a}.",
        "Which wedding venue did we settle on in the end?",
        ("the old mill", "the botanical garden", "the harbour hotel", "the village hall"),
        first="Let's go with {a} for the wedding, it has the nicest grounds.",
    ),
    Template(
        "person",
        "changed",
        "Forget the {a} tiles, we're doing {x} in the kitchen after all.",
        "What tiles are going into the kitchen in the end?",
        ("terracotta", "sage green", "charcoal", "cream", "cobalt"),
        first="For the kitchen I really want the {a} tiles.",
    ),
    Template(
        "person",
        "changed",
        "Turned down {a} after all, I'm joining {x} in March.",
        "Which company am I going to work for?",
        (
            "Fernhill Labs",
            "Quayside Analytics",
            "Northwind Freight",
            "Bluebell Health",
            "Halcyon Games",
        ),
        first="I think I'll take the offer from {a}, the team seemed lovely.",
    ),
    Template(
        "person",
        "date",
        "Handed in my notice at the bakery today, feels strange.",
        "On what date did I hand in my notice?",
    ),
    Template(
        "person",
        "date",
        "Just got back from the dentist, two fillings, ugh.",
        "When was my dentist appointment?",
    ),
    Template(
        "person",
        "date",
        "Signed the lease on the new flat this morning!",
        "What day did I sign the lease for the apartment?",
    ),
)

ASSISTANT: tuple[Template, ...] = (
    Template(
        "assistant",
        "plain",
        "For your commute I'd go with the {x} folding bike; it folds small enough for the train.",
        "Which bicycle did you recommend for getting to work?",
        ("Brompton", "Tern Link", "Dahon Mu", "Birdy"),
    ),
    Template(
        "assistant",
        "plain",
        "A good first plant for a dark room is the {x}; it barely needs any light.",
        "What plant did you suggest for the gloomy bedroom?",
        ("ZZ plant", "snake plant", "cast-iron plant", "pothos", "parlour palm"),
    ),
    Template(
        "assistant",
        "plain",
        "Keep the starter at a {x} ratio of flour to water and feed it daily.",
        "What ratio did you tell me to use for the sourdough?",
        ("1:1", "2:1", "5:4", "3:2"),
    ),
    Template(
        "assistant",
        "plain",
        "For negotiating, I'd read {x}; it is practical rather than theoretical.",
        "Which book did you recommend about negotiation?",
        (
            "Never Split the Difference",
            "Getting to Yes",
            "Bargaining for Advantage",
            "Start with No",
        ),
    ),
    Template(
        "assistant",
        "plain",
        "The recipe works fine with {x} in place of the eggs.",
        "What egg substitute did you suggest for baking?",
        ("aquafaba", "ground flaxseed", "chia seeds", "mashed banana"),
    ),
    Template(
        "assistant",
        "plain",
        "The quickest connection for that flight is a short layover in {x}.",
        "Which airport did you say makes the fastest stopover?",
        ("Frankfurt", "Reykjavik", "Doha", "Zurich", "Helsinki"),
    ),
    Template(
        "assistant",
        "plain",
        "Your spreadsheet formula fails because {x} expects a range there, not a single number.",
        "Which function did you say needs a range of cells?",
        ("VLOOKUP", "SUMIF", "XLOOKUP", "COUNTIFS"),
    ),
    Template(
        "assistant",
        "plain",
        "A sensible emergency fund for you would cover about {x} months of expenses.",
        "How many months of savings did you advise keeping?",
        ("three", "four", "six", "nine"),
    ),
    Template(
        "assistant",
        "plain",
        "To get rid of the mould, wipe it down with {x} and leave the window open.",
        "How did you tell me to clean the mould?",
        ("white vinegar", "diluted bleach", "tea tree oil", "bicarbonate of soda"),
    ),
    Template(
        "assistant",
        "plain",
        "The stretch I'd add for your lower back is {x}, twice a day.",
        "What exercise did you suggest for my back pain?",
        ("the cat-cow", "the bird-dog", "child's pose", "the pigeon pose"),
    ),
    Template(
        "assistant",
        "plain",
        "The visa that fits your plan is the {x}.",
        "Which visa did you say I should apply for?",
        (
            "Working Holiday visa",
            "Skilled Worker visa",
            "Digital Nomad visa",
            "Youth Mobility visa",
        ),
    ),
    Template(
        "assistant",
        "plain",
        "For windy campsites go for the {x}; it stays up in strong gusts.",
        "Which tent did you recommend?",
        ("Hilleberg Nallo", "MSR Hubba Hubba", "Big Agnes Copper Spur", "Nordisk Telemark"),
    ),
    Template(
        "assistant",
        "plain",
        "Pot the tomato seedlings on once they have {x} true leaves.",
        "When should I repot the tomatoes?",
        ("two", "three", "four", "five"),
    ),
    Template(
        "assistant",
        "plain",
        "For the toddler's car seat, the {x} is the one that fits a small hatchback.",
        "Which child seat did you recommend?",
        ("Maxi-Cosi Pearl", "Cybex Sirona", "Joie Spin", "Britax Dualfix"),
    ),
    Template(
        "assistant",
        "changed",
        "On reflection, {x} would suit the hallway better than {a}.",
        "What colour did you finally recommend for the hallway?",
        ("warm grey", "duck-egg blue", "olive green", "soft ochre", "dusky pink"),
        first="I'd paint the hallway in {a}; it brightens a narrow space.",
    ),
    Template(
        "assistant",
        "changed",
        "Scratch the {a}; given the damp, {x} is the better floor for the bathroom.",
        "Which flooring did you end up suggesting for the bathroom?",
        ("porcelain tile", "vinyl plank", "rubber flooring", "microcement"),
        first="For the bathroom floor, {a} would look great.",
    ),
    Template(
        "assistant",
        "date",
        "Here's how to bleed the radiators: heating off, then open the valve with the key "
        "until water comes out.",
        "On what day did you explain how to bleed the radiators?",
    ),
    Template(
        "assistant",
        "date",
        "To descale the kettle, boil half water and half vinegar, then rinse it twice.",
        "When did you tell me how to descale the kettle?",
    ),
)

PERSON_FILLER = (
    "Long day at work again, the trains were a mess this morning.",
    "Can you help me plan the week? I keep forgetting things.",
    "The weather has been all over the place, rain then sun then rain.",
    "I tried that recipe you mentioned, the kitchen smelled amazing.",
    "Thinking about the trip again, I can't decide on dates.",
    "The dog next door barked all night, I barely slept.",
    "We spent the weekend sorting out the garden shed.",
    "My boss asked for the report early, so that was fun.",
    "Any tips for staying focused in the afternoon?",
    "I need to call the bank about the car insurance at some point.",
    "The kids were up early, we went to the park and fed the ducks.",
    "I've been meaning to read more but the evenings just vanish.",
    "Should I repaint the bedroom or is that a waste of money?",
    "Had a video call with my parents, they say hi.",
    "What's a good way to keep the flat warm without huge bills?",
    "I want to cook more at home this month, nothing fancy.",
    "Work is calmer now that the big project shipped.",
    "The bike needs new brakes, it squeaks every time I stop.",
    "My back is a bit stiff from sitting all day.",
    "Could you remind me how the budget spreadsheet works?",
    "I watched a documentary about bees, weirdly relaxing.",
    "Our holiday photos are still on my phone, I should print some.",
    "The neighbours are renovating, the drilling starts at eight.",
    "I'm trying to drink less coffee, it's not going well.",
    "Plans for the weekend: nothing, and I intend to keep it that way.",
)

ASSISTANT_FILLER = (
    "That sounds like a lot; breaking the week into small blocks usually helps.",
    "A short walk after lunch often does more for focus than another coffee.",
    "For the flat, closing curtains at dusk and bleeding air out of the heating both help.",
    "It might be worth writing the dates down before you book anything for the trip.",
    "Cooking in batches on Sunday makes the weekdays much easier.",
    "If the brakes squeak, the pads may be worn or just dusty; check them first.",
    "A fresh coat of paint in a bedroom is cheap compared with new furniture.",
    "Stiffness from sitting usually eases with a few minutes of movement every hour.",
    "The spreadsheet sums each category per month and compares it with the plan.",
    "Printing a handful of favourite photos is a nice way to actually see them.",
    "Noise from renovations is tiring; earplugs and an early walk can take the edge off.",
    "Cutting coffee gradually, one cup a week, tends to work better than stopping at once.",
    "A quiet weekend is a plan too; rest is worth protecting.",
    "When a week feels crowded, pick the three things that really matter.",
    "Calling the insurer with your policy number ready makes it much quicker.",
    "Gardens need less work in winter; it is a good time to plan the beds.",
    "A tidy shed makes every later job easier, so that weekend was well spent.",
    "Evening reading comes back once it is a small habit, ten pages a night.",
    "Parents usually love a short regular call more than a long rare one.",
    "Trains in the morning are often better a little before or after the rush.",
)
# The filler shares words with the questions (trip, kitchen, garden, dog, boss, bike,
# back, budget, kids, paint, bees...), so a bare word match finds noise as well.

START = datetime(2025, 1, 6, 8, 30, tzinfo=UTC)


def _filler(rng: random.Random, bank: tuple[str, ...], low: int, high: int) -> list[str]:
    return rng.sample(bank, rng.randint(low, high))


def _dates(rng: random.Random, count: int) -> list[datetime]:
    """Message times: sessions of 6 to 16 messages, 2 to 6 days apart, minutes apart
    within a session."""
    times: list[datetime] = []
    at = START
    while len(times) < count:
        at = at.replace(hour=rng.randint(7, 20), minute=rng.randint(0, 59))
        for _ in range(rng.randint(6, 16)):
            times.append(at)
            at += timedelta(minutes=rng.randint(1, 9))
        at += timedelta(days=rng.randint(2, 6))
    return times[:count]


def make_conversation(
    seed: int,
    messages: int = 400,
    templates: tuple[Template, ...] = PERSON + ASSISTANT,
    conversation: int = 0,
    title: str | None = None,
) -> LongConversation:
    """A conversation of `messages` messages (user first, alternating) stating each
    template's fact once (a changed decision twice), at seeded places."""
    rng = random.Random(seed * 1_000 + conversation)
    times = _dates(rng, messages)
    sentences = [
        (_filler(rng, PERSON_FILLER, 2, 5) if i % 2 == 0 else _filler(rng, ASSISTANT_FILLER, 3, 8))
        for i in range(messages)
    ]
    facts: list[Fact] = []
    # The messages a fact may land in: not the last ten (the questions are about what was
    # folded), each at most one fact.
    free = {"user": list(range(0, messages - 10, 2)), "assistant": list(range(1, messages - 10, 2))}
    for pool in free.values():
        rng.shuffle(pool)
    for template in templates:
        role = "user" if template.speaker == "person" else "assistant"
        value = rng.choice(template.pool)
        place = free[role].pop()
        if template.kind == "changed":
            earlier = free[role].pop()
            place, earlier = max(place, earlier), min(place, earlier)
            first = rng.choice([v for v in template.pool if v != value])
            _insert(rng, sentences[earlier], template.first.format(a=first))
            statement = template.statement.format(x=value, a=first)
        else:
            statement = template.statement.format(x=value)
        _insert(rng, sentences[place], statement)
        answer = times[place].date().isoformat() if template.kind == "date" else value
        facts.append(
            Fact(template.speaker, template.kind, template.question, answer, place, conversation)
        )
    turns = tuple(
        Turn("user" if i % 2 == 0 else "assistant", " ".join(sentences[i]), times[i])
        for i in range(messages)
    )
    return LongConversation(title or f"Everyday chat {conversation + 1}", turns, tuple(facts))


def _insert(rng: random.Random, sentences: list[str], statement: str) -> None:
    """The statement among the message's filler sentences, at a seeded place."""
    sentences.insert(rng.randint(0, len(sentences)), statement)


def make_project(seed: int, conversations: int = 3, messages: int = 300) -> list[LongConversation]:
    """`conversations` conversations of one project; every template is used by exactly
    one of them (dealt round-robin after a seeded shuffle), so each question has one
    answer across the project."""
    rng = random.Random(seed)
    templates = list(PERSON + ASSISTANT)
    rng.shuffle(templates)
    return [
        make_conversation(
            seed,
            messages,
            tuple(templates[n::conversations]),
            conversation=n,
            title=f"Project chat {n + 1}",
        )
        for n in range(conversations)
    ]
