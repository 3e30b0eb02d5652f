"""Replay a synthetic agent session through Foldline's policy and emulated others.

    .venv/bin/python benchmarks/policy_sim.py            # 300 turns, 200k and 32k windows
    .venv/bin/python benchmarks/policy_sim.py --turns 60 # a quicker look
    .venv/bin/python benchmarks/policy_sim.py --one-million  # 1M window, working budget or not
    .venv/bin/python benchmarks/policy_sim.py --policies foldline --set threshold=0.8

The session (seeded RNG, generated in policy_session.py) is shaped like real agent use:
short user turns, long answers, tool rounds of 1-3 parallel calls whose outputs run from
200 to 20,000 tokens (log-uniform), and files read again. Every model request of the
session is sent through each policy; tokens are counted exactly (o200k_base, the OpenAI
Chat wire), which is the truth a provider would bill and enforce.

Policies (each with its own copy of the history; the emulated others and what every
policy shares are in policy_emulated.py):
- foldline: the default `CompactionSettings` through `decide` / `plan_prune` / `fold`.
- opencode-like, chatbox-like, claude-code-ish: emulations of those tools' rules.

Three variants of Foldline isolate its choices: pruning off, the rule shipped before
the prune ceiling (prune when that gets under the threshold), and a rule tried and not
kept (a prune must reach the target, else it folds). The "cache-priced" column prices
each request at Anthropic's prompt-cache rates: the prefix shared with the previous
request at 0.1, the rest at 1.25 (written to the cache); summarizer calls at 1.
The "real shapes" column prices each request as Foldline actually sends it on the
Anthropic wire (breakpoints on the system prompt, the fold's summary and the newest
block) through the fake provider's prompt-cache simulation (block-level, 20-block
look-back, 1,024-token minimum): the read, written and plain shares it reports, applied
to the request's exact token count, at 0.1 / 1.25 / 1.

The fake summarizer answers with a summary of realistic size:
`min(max_output, 1,500 + input / 50)` tokens. An emulated policy's summarizer request
is its folded messages + previous summary + a 400-token prompt; when that exceeds the
budget it counts as an overflow and is billed at the budget (the oldest part dropped).
A request over the budget counts as an overflow and is not billed (the provider
rejects it); the system then recovers and the request is sent again, billed: first by
its own overflow handling (opencode-like summarizes everything; the others, whose
request simply fails, are given their own compaction before the user's retry); if the
retry is rejected too, by a last-resort fold of everything but the newest message
group. A newest group that alone is over the budget (an uncapped tool output) is
"unfit": counted as an overflow and billed at the budget, the least a request that the
user cut down by hand would cost.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import random
import statistics
import sys
import time
from pathlib import Path

# benchmarks/ is a folder of scripts, not a package: the session generator and the
# emulated policies next to this file are importable only once the script's own
# directory is on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from policy_emulated import (
    COUNTER,
    NOW,
    SYSTEM,
    TOOLS,
    ChatboxLike,
    ClaudeCodeIsh,
    OpenCodeLike,
    Policy,
    Stats,
    fake_summary,
)
from policy_session import Turn, make_session

from foldline.core.budget import Budget
from foldline.core.compaction import FoldInputs, SummaryRequest, fold
from foldline.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, user
from foldline.core.policy import BreakerState, decide, record_fold
from foldline.core.pruning import apply_prune, minimum_tokens, plan_prune
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
from foldline.core.truncation import truncate_tool_output
from foldline.core.view import PRUNED_PLACEHOLDER
from foldline.providers.base import ModelRequest
from foldline.testing import FakeTokenizer, PromptCache, encode_request


class FoldlinePolicy(Policy):
    name = "foldline"
    settings = CompactionSettings()
    prune_rule = "default"
    """"default" is `decide` as shipped; the others are earlier rules, for comparison."""

    def __init__(self, budget: Budget) -> None:
        super().__init__(budget)
        self.breaker = BreakerState()

    def ingest(self, output: str, tool: str) -> str:
        cap = self.settings.tool_result_token_cap
        return truncate_tool_output(output, cap, COUNTER.count_text, tool).text

    async def summarize(self, request: SummaryRequest) -> str:
        tokens = COUNTER.count_request(request.system, [user(request.prompt)], [])
        self.stats.summarizer_input_tokens += tokens
        self.stats.summarizer_calls += 1
        final = "## Active Task" in request.prompt
        return fake_summary(tokens, request.max_output_tokens, structured=final)

    async def _fold(self, trigger: str, emergency: bool) -> None:
        inputs = FoldInputs.of(
            self.display,
            self.state,
            counter=COUNTER,
            system=SYSTEM,
            tools=TOOLS,
            budget=self.budget,
            settings=self.settings,
            now=NOW,
        )
        outcome = await fold(
            inputs,
            summarize=None if emergency else self.summarize,
            trigger=trigger,  # type: ignore[arg-type]
        )
        if outcome.state is not None:
            before, after = outcome.state.tokens_before, outcome.state.tokens_after
            self.state = outcome.state
            self.breaker = record_fold(self.breaker, before, after)
            self.stats.folds += 1

    def _decide(self, tokens: int, mid_loop: bool, reclaimable: int) -> str:
        return decide(
            tokens=tokens,
            budget=self.budget,
            settings=self.settings,
            mid_tool_loop=mid_loop,
            reclaimable_prune_tokens=reclaimable,
            breaker=self.breaker,
        ).action

    async def before_request(self, new_turn: bool, mid_loop: bool) -> None:
        tokens = COUNTER.count_request(SYSTEM, self.view(), TOOLS)
        plan = plan_prune(
            self.display, self.state, COUNTER.count_text, self.settings, self.input_budget
        )
        action = self._decide(tokens, mid_loop, plan.reclaimable_tokens)
        if self.prune_rule != "default":
            action = self._earlier_rule(tokens, mid_loop, plan.reclaimable_tokens)
        if action == "prune":
            for item in plan.targets:
                message = self.display[item.index]
                self.display[item.index] = apply_prune(message, item.call_ids, NOW)
        elif action in ("fold", "emergency_fold"):
            await self._fold("auto", action == "emergency_fold")

    def _earlier_rule(self, tokens: int, mid_loop: bool, reclaimable: int) -> str:
        """The rules `decide` had before the prune ceiling: over the threshold, prune
        when that gets under it ("under the threshold"), or only when it reaches the
        target ("to the target"); otherwise what `decide` does without pruning."""
        soft = self.settings.threshold * self.input_budget
        if tokens < soft:
            return "none"
        worth = reclaimable > 0 and reclaimable >= minimum_tokens(self.settings, self.input_budget)
        goal = (
            soft
            if self.prune_rule == "under the threshold"
            else self.settings.target * (self.input_budget)
        )
        if self.settings.prune and worth and tokens - reclaimable < goal:
            return "prune"
        return self._decide(tokens, mid_loop, 0)

    async def on_overflow(self) -> None:
        await self._fold("overflow", emergency=False)

    async def rescue(self) -> None:
        await self._fold("overflow", emergency=True)


class FoldlineNoPrune(FoldlinePolicy):
    name = "foldline, pruning off"
    settings = CompactionSettings(prune=False)


class FoldlineUnderThreshold(FoldlinePolicy):
    """The rule shipped before the prune ceiling: prune when that alone gets under the
    threshold. The view then hovers just under it."""

    name = "foldline, previous rule (prune to under the threshold)"
    prune_rule = "under the threshold"


class FoldlinePruneToTarget(FoldlinePolicy):
    """A rule tried and not kept: a prune must bring the view down to the target (as a
    fold does); when it cannot, fold instead."""

    name = "foldline, prune only to the target"
    prune_rule = "to the target"


# --- the replay ------------------------------------------------------------------------------


CACHE_READ_PRICE = 0.10
CACHE_WRITE_PRICE = 1.25
"""Anthropic's prompt-cache prices relative to plain input: reading a cached prefix costs
a tenth, writing the rest to the cache a quarter more."""


class RealShapes:
    """Prices requests as Foldline sends them, through the fake provider's cache model."""

    def __init__(self) -> None:
        self.cache = PromptCache()
        self.tokenizer = FakeTokenizer()

    def price(self, view: list[Message], state: CompactionState | None, tokens: int) -> float:
        request = ModelRequest(
            model="sim",
            system=SYSTEM,
            messages=view,
            tools=TOOLS,
            cache_key="sim",
            stable_prefix=1 if state is not None else 0,
        )
        body = encode_request(request, "anthropic")
        fixed = self.tokenizer.fixed_tokens(body, "anthropic")
        outcome = self.cache.anthropic("sim", fixed, self.tokenizer.elements(body, "anthropic"))
        read = outcome.cache_read / outcome.total
        written = outcome.cache_creation / outcome.total
        plain = 1 - read - written
        return tokens * (CACHE_READ_PRICE * read + CACHE_WRITE_PRICE * written + plain)


def _common_prefix(previous: list[Message], current: list[Message]) -> int:
    """The number of leading messages the two requests share."""
    shared = 0
    for a, b in zip(previous, current, strict=False):
        if not (a is b or a == b):
            break
        shared += 1
    return shared


def _verbatim_tokens(view: list[Message], state: CompactionState | None) -> int:
    total = 0
    for i, message in enumerate(view):
        if i == 0 and state is not None:
            continue
        total += COUNTER.count_message(message)
        for part in message.tool_results:
            if part.output == PRUNED_PLACEHOLDER:
                total -= COUNTER.count_text(PRUNED_PLACEHOLDER)
    return total


async def replay(policy: Policy, session: list[Turn], real_shapes: bool = False) -> Stats:
    stats = policy.stats
    previous: list[Message] | None = None
    shapes = RealShapes() if real_shapes else None

    async def request(new_turn: bool, mid_loop: bool) -> None:
        nonlocal previous
        await policy.before_request(new_turn, mid_loop)
        view = policy.view()
        tokens = COUNTER.count_request(SYSTEM, view, TOOLS)
        stats.requests += 1
        # A request over the budget is rejected by the provider (not billed); the
        # system recovers and the request is sent again (billed). First its own
        # overflow handling; if the retry is rejected too, the user retries after a
        # last-resort fold of everything but the newest message group.
        for recover in (policy.on_overflow, policy.rescue):
            if tokens <= policy.input_budget:
                break
            stats.overflows += 1
            await recover()
            view = policy.view()
            tokens = COUNTER.count_request(SYSTEM, view, TOOLS)
        if tokens > policy.input_budget:
            # The newest message group alone is over the budget: nothing a fold can do.
            # The user has to cut it down by hand; billed at the budget (the least a
            # request that gets through costs).
            stats.overflows += 1
            stats.unfit += 1
            tokens = policy.input_budget
        stats.input_tokens += tokens
        policy.last_request_tokens = tokens
        cached = 0
        if previous is not None:
            shared = _common_prefix(previous, view)
            if shared < len(previous):
                stats.cache_breaks += 1
            cached = min(COUNTER.count_request(SYSTEM, view[:shared], TOOLS), tokens)
        stats.cache_priced += CACHE_READ_PRICE * cached + CACHE_WRITE_PRICE * (tokens - cached)
        if shapes is not None:
            stats.real_shape_priced += shapes.price(view, policy.state, tokens)
        previous = view
        stats.verbatim.append(_verbatim_tokens(view, policy.state))

    for turn in session:
        policy.display.append(user(turn.request))
        for number, (text, calls) in enumerate(turn.rounds):
            await request(new_turn=number == 0, mid_loop=number > 0)
            parts: tuple = ((TextPart(text=text),) if text else ()) + tuple(
                ToolCallPart(id=c.call_id, name=c.tool, input={"path": c.path}) for c in calls
            )
            policy.display.append(Message(role="assistant", parts=parts))
            results = tuple(
                ToolResultPart(
                    call_id=c.call_id,
                    name=c.tool,
                    output=policy.ingest(c.output, c.tool),
                    full_output=None,
                )
                for c in calls
            )
            policy.display.append(Message(role="tool", parts=results))
        await request(new_turn=not turn.rounds, mid_loop=bool(turn.rounds))
        policy.display.append(Message(role="assistant", parts=(TextPart(text=turn.answer),)))
    return stats


def micro_benchmark(messages: int = 10_000, repeats: int = 300) -> float:
    """Median ms of one gate before a model call on a long view: sum the cached
    per-message counts, then `decide` (the worst branch: over the threshold, mid-loop)."""
    rng = random.Random(1)
    counts = [rng.randint(20, 3_000) for _ in range(messages)]
    args = {
        "budget": Budget(context_window=200_000, max_output_tokens=8_000),
        "settings": CompactionSettings(),
        "mid_tool_loop": True,
        "reclaimable_prune_tokens": 30_000,
        "breaker": BreakerState(),
    }
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        decide(tokens=5_000 + sum(counts), **args)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


POLICIES: tuple[type[Policy], ...] = (
    FoldlinePolicy,
    OpenCodeLike,
    ChatboxLike,
    ClaudeCodeIsh,
    FoldlineNoPrune,
    FoldlineUnderThreshold,
    FoldlinePruneToTarget,
)


ONE_MILLION_PRICES = {
    # Per million tokens: input (reads are 0.1x, 5-minute writes 1.25x of it), output.
    "claude-sonnet-5": (2.0, 10.0),
    "claude-opus-4-6": (5.0, 25.0),
}


def working_budget_figure(session: list[Turn]) -> None:
    """Foldline on a 1M-token window, with the default 200k working budget and without
    one (folding at 80% of the whole window), priced at Anthropic's cache rates."""
    from foldline.providers.registry import DEFAULT_WORKING_BUDGET

    window, reserve = 1_000_000, 125_000
    print(
        f"\n### window {window:,}: working budget {DEFAULT_WORKING_BUDGET:,} vs the whole window\n"
    )
    print(
        "| budget | requests | folds | input tokens | cache-priced input tokens | mean request "
        "| largest request | "
        + " | ".join(f"{model} input $ (per turn)" for model in ONE_MILLION_PRICES)
        + " |"
    )
    print(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | "
        + " | ".join("---:" for _ in ONE_MILLION_PRICES)
        + " |"
    )
    for label, working in (
        (f"working budget {DEFAULT_WORKING_BUDGET:,}", DEFAULT_WORKING_BUDGET),
        ("whole window (no working budget)", None),
    ):
        budget = Budget(context_window=window, max_output_tokens=reserve, working_budget=working)
        policy = FoldlinePolicy(budget)
        sizes: list[int] = []
        original = policy.before_request

        async def recording(
            new_turn: bool, mid_loop: bool, _original=original, _policy=policy, _sizes=sizes
        ) -> None:
            await _original(new_turn, mid_loop)
            _sizes.append(COUNTER.count_request(SYSTEM, _policy.view(), TOOLS))

        policy.before_request = recording  # type: ignore[method-assign]
        stats = asyncio.run(replay(policy, session))
        priced = stats.cache_priced + stats.summarizer_input_tokens
        dollars = [
            f"${priced * price / 1e6:,.2f} (${priced * price / 1e6 / len(session):.3f})"
            for price, _ in ONE_MILLION_PRICES.values()
        ]
        print(
            f"| {label} | {stats.requests} | {stats.folds} | "
            f"{stats.input_tokens + stats.summarizer_input_tokens:,} | {priced:,.0f} | "
            f"{statistics.mean(sizes):,.0f} | {max(sizes):,} | " + " | ".join(dollars) + " |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--policies", default="", help="comma-separated names to run (default: all)"
    )
    parser.add_argument(
        "--real-shapes",
        action="store_true",
        help="also price Foldline's real Anthropic request shapes through the cache model",
    )
    parser.add_argument(
        "--one-million",
        action="store_true",
        help="only the 1M-token window, with and without the default working budget",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        help="a [compaction] knob for Foldline's default policy, e.g. threshold=0.8",
    )
    args = parser.parse_args(argv)
    if args.set:
        knobs = dict(item.split("=", 1) for item in args.set)
        FoldlinePolicy.settings = CompactionSettings.model_validate(
            FoldlinePolicy.settings.model_dump() | knobs
        )
        print(f"foldline's settings: {knobs}")
    chosen = [p for p in POLICIES if not args.policies or p.name in args.policies.split(",")]
    session = make_session(args.turns, args.seed)
    if args.one_million:
        working_budget_figure(session)
        return
    tool_tokens = [COUNTER.count_text(c.output) for t in session for _, r in t.rounds for c in r]
    print(
        f"machine: {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}; session: {args.turns} turns, seed {args.seed}, "
        f"{len(tool_tokens)} tool outputs of {min(tool_tokens):,}-{max(tool_tokens):,} tokens "
        f"({sum(tool_tokens):,} in all)"
    )
    for window, max_output in ((200_000, 8_000), (32_768, 4_096)):
        budget = Budget(context_window=window, max_output_tokens=max_output)
        print(f"\n### window {window:,} (input budget {budget.input_budget:,})\n")
        print(
            "| policy | requests | overflows (unfit) | folds | summarizer calls | input tokens "
            "(of which summarizer) | vs foldline | cache breaks | cache-priced input "
            "| vs foldline | mean verbatim tokens |"
            + (" real shapes, cache-priced | vs foldline |" if args.real_shapes else "")
        )
        print(
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            + (" ---: | ---: |" if args.real_shapes else "")
        )
        baseline: tuple[int, float, float] | None = None
        for policy_type in chosen:
            started = time.perf_counter()
            stats = asyncio.run(replay(policy_type(budget), session, args.real_shapes))
            total = stats.input_tokens + stats.summarizer_input_tokens
            priced = stats.cache_priced + stats.summarizer_input_tokens
            real = stats.real_shape_priced + stats.summarizer_input_tokens
            baseline = baseline or (total, priced, real)
            extra = f" {real:,.0f} | {real / baseline[2]:.2f}× |" if args.real_shapes else ""
            print(
                f"| {policy_type.name} | {stats.requests} | {stats.overflows} ({stats.unfit}) | "
                f"{stats.folds} | "
                f"{stats.summarizer_calls} | {total:,} ({stats.summarizer_input_tokens:,}) | "
                f"{total / baseline[0]:.2f}× | {stats.cache_breaks} | {priced:,.0f} | "
                f"{priced / baseline[1]:.2f}× | {statistics.mean(stats.verbatim or [0]):,.0f} |"
                + extra,
                flush=True,
            )
            print(
                f"<!-- {policy_type.name}: {time.perf_counter() - started:.1f} s -->",
                file=sys.stderr,
            )
    print(
        f"\nmicro-benchmark, 10,000-message view: summing cached counts + decide "
        f"{micro_benchmark():.3f} ms (median of 300)"
    )


if __name__ == "__main__":
    main()
