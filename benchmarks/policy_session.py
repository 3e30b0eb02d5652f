"""The synthetic agent session that `policy_sim.py` replays through each policy.

It lives apart from the policies so the replay reads as "session in, costs out", and so
the generator can be reused by another benchmark without pulling in the emulations.
The session is shaped like real agent use: short user turns, long answers, tool rounds
of 1-3 parallel calls whose outputs run from 200 to 20,000 tokens (log-uniform), and
files read again. A seeded RNG makes every run replay the same session, which is what
lets two policies, or two versions of one policy, be compared number for number.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    tool: str
    path: str
    output: str


@dataclass(frozen=True)
class Turn:
    request: str
    rounds: tuple[tuple[str, tuple[ToolCall, ...]], ...]
    answer: str


def _pools(rng: random.Random) -> tuple[str, str]:
    """Prose (~4.4 characters a token in o200k_base) and Python-like code (~3.6), the
    ratios of real English text and source code."""
    common = "the a to of and in is that it for on with as this be by not are we"
    tech = (
        "configuration parser request handler middleware timeout retries asynchronously "
        "serialization deprecated regression fixture dependency migration schema endpoint "
        "latency throughput idempotent refactor invariant callback coroutine allocator "
        "tokenizer checksum payload authentication"
    )
    common_words, tech_words = common.split(" "), tech.split(" ")

    def ident() -> str:
        verb = rng.choice(["get", "set", "parse", "load", "build", "make", "is", "has"])
        noun = rng.choice(["Header", "Config", "_value", "_items", "Token", "Path", "_cache"])
        return f"{verb}{noun}{rng.randint(0, 99)}"

    sentences = []
    for _ in range(25_000):
        words = []
        for _ in range(rng.randint(6, 18)):
            x = rng.random()
            if x < 0.5:
                words.append(rng.choice(common_words))
            elif x < 0.85:
                words.append(rng.choice(tech_words))
            elif x < 0.93:
                words.append(f"`{ident()}()`")
            else:
                words.append(str(rng.randint(2, 40_000)))
        sentence = " ".join(words)
        sentences.append(sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ",", ":"]))
    lines = []
    for _ in range(40_000):
        indent = "    " * rng.randint(0, 3)
        kind, a, b = rng.random(), ident(), ident()
        if kind < 0.25:
            lines.append(f"{indent}def {a}(self, {b}: dict[str, int] | None = None) -> list[str]:")
        elif kind < 0.5:
            word = rng.choice(tech_words)
            lines.append(f'{indent}{a} = self.{b}.get("{word}", {rng.randint(0, 999)}) or []')
        elif kind < 0.65:
            lines.append(f"{indent}if not {a} and len({b}) > {rng.randint(1, 64)}:")
        elif kind < 0.8:
            cut = f"{rng.randint(0, 9)}:{rng.randint(10, 99)}"
            lines.append(f'{indent}return {{"{a}": {b}[{cut}], "ok": True}}')
        else:
            words = " ".join(
                rng.choice(common_words + tech_words) for _ in range(rng.randint(3, 10))
            )
            lines.append(f"{indent}# {words}")
    return " ".join(sentences), "\n".join(lines)


def _slice(pool: str, tokens: int, rng: random.Random, chars_per_token: float) -> str:
    size = max(int(tokens * chars_per_token), 8)
    start = rng.randrange(0, max(len(pool) - size, 1))
    return pool[start : start + size]


def make_session(turns: int, seed: int = 7) -> list[Turn]:
    rng = random.Random(seed)
    prose, code = _pools(rng)
    files: dict[str, str] = {}
    session: list[Turn] = []
    ids = 0
    for t in range(turns):
        request = _slice(prose, rng.randint(20, 200), rng, 4.4)
        rounds = []
        n_rounds = 0 if rng.random() < 0.3 else min(int(rng.expovariate(1 / 2.5)) + 1, 8)
        for _ in range(n_rounds):
            batch = rng.choices([1, 2, 3], weights=[70, 20, 10])[0]
            calls = []
            for _ in range(batch):
                ids += 1
                tool = rng.choices(["read_file", "bash", "grep"], weights=[50, 25, 25])[0]
                tokens = int(math.exp(rng.uniform(math.log(200), math.log(20_000))))
                if tool == "read_file" and files and rng.random() < 0.35:
                    path = rng.choice(sorted(files))  # the same file read again
                else:
                    path = f"src/pkg_{t}_{ids}.py"
                    if tool == "read_file":
                        files[path] = _slice(code, tokens, rng, 3.6)
                output = files[path] if tool == "read_file" else _slice(code, tokens, rng, 3.6)
                calls.append(ToolCall(f"call_{ids}", tool, path, output))
            rounds.append((_slice(prose, rng.randint(0, 60), rng, 4.4), tuple(calls)))
        answer = _slice(prose, rng.randint(300, 2_000), rng, 4.4)
        session.append(Turn(request, tuple(rounds), answer))
    return session
