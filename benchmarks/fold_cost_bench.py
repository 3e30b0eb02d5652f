"""What a long conversation bills in input, folds included, on both wires.

    .venv/bin/python benchmarks/fold_cost_bench.py                 # both scenarios, both wires
    .venv/bin/python benchmarks/fold_cost_bench.py --scenario 16k --wire anthropic
    .venv/bin/python benchmarks/fold_cost_bench.py --set target=0.35 --set threshold=0.9
    .venv/bin/python benchmarks/fold_cost_bench.py --long-messages   # pastes, fold safety

Runs Foldline's chat service and real providers (the real `anthropic` and `openai` SDKs)
against `foldline.testing.FakeProviderServer`, whose prompt cache bills like the
providers' (Anthropic: only marked prefixes, 1,024-token minimum, 20-block look-back;
OpenAI: the longest seen prefix in 128-token steps; both a 5-minute lifetime).

The scenarios: 40 turns; the person states three facts in the first three turns and
then writes ~110-token messages; the model answers ~350 tokens (16k window) or ~1,400
tokens (64k window); the model's maximum output is 8,192 tokens, so the input budget is
12,288 tokens on 16k and 57,344 on 64k. The summarizer is the conversation's model and
as fast as it (the bench waits for a background summary before the next turn), and
writes a summary of realistic size (see `sized_summary`). No pauses: the cache never
expires.

Billed input is counted in input-token equivalents at cache prices, every call
included (chat and summaries): Anthropic bills plain input at 1, cache writes at 1.25 (the
5-minute lifetime) and cache reads at 0.1; OpenAI bills plain input at 1 and cached input
at 0.1. The "1-hour lifetime" line prices the same Anthropic calls with writes at 2 (what
`"ttl": "1h"` costs): with no pause longer than 5 minutes it reads nothing more.
After the run, the final request is checked for the three facts.

`--long-messages` makes every fourth message from the fourth on a paste of 10-30% of the
input budget (the shares in `LONG_SHARES`, in turn), the case a later threshold leaves
less room for: a paste that lands between the threshold and the hard threshold, or over
the budget, before the summary is ready. It counts what the person would notice: a turn
that waited for a summary being written (`waits`), a fold written in the person's path
(`inline folds`), an emergency digest instead of a summary (`digests`), a request the
provider rejected as too long (`overflows`) and a turn that ended in an error
(`refusals`). `--slow-summaries S` streams every summary over about S seconds of real
time and no longer waits for it between turns: a summarizer slower than the model.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "chat"))


class VirtualClock:
    """The background folds' clock (their pace: how fast the view grows per second, how
    long a summary takes), advanced by the bench instead of waited for."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now


CLOCK = VirtualClock()
# `chat/background.py` reads `time.monotonic` at import (a dataclass default) and at call
# time: both become the virtual clock there, and only there.
_real_monotonic = time.monotonic
time.monotonic = CLOCK.monotonic
import foldline.chat.background  # noqa: E402

time.monotonic = _real_monotonic
foldline.chat.background.time = types.SimpleNamespace(monotonic=CLOCK.monotonic)  # type: ignore[attr-defined]

from fake_sessions import filler  # noqa: E402

from foldline.chat.service import ChatService  # noqa: E402
from foldline.config import parse_config  # noqa: E402
from foldline.core.prompts import is_fold_request  # noqa: E402
from foldline.providers.base import ModelRequest  # noqa: E402
from foldline.store import Store  # noqa: E402
from foldline.testing import (  # noqa: E402
    SUMMARY_HEADINGS,
    FakeProviderServer,
    FakeTokenizer,
    ModelLimits,
    RecordedRequest,
    Reply,
    ScriptedModel,
    request_text,
    summary_source,
)

MODEL = {"anthropic": "claude-fake-fold-cost", "openai": "gpt-fake-fold-cost"}
FACTS = (
    "The launch code is PINEAPPLE-42.",
    "The staging box is 10.4.2.17, keep it out of the public DNS.",
    "Never deploy on a Friday; Lars Raman signs every release.",
)
TURNS = 40
PAUSE_SECONDS = 30.0
"""The person reads the answer and writes the next message."""
TOKENS_PER_SECOND = 60.0
"""The model's (and so the summarizer's) writing speed."""
VERBOSE = False
MAX_OUTPUT = 8192
LONG_SHARES = (0.10, 0.15, 0.20, 0.25, 0.30)
"""The sizes of the person's pastes in `--long-messages`, as shares of the input budget."""
TOKENS_PER_WORD = 1.33
"""The fake tokenizer's tokens per word of `filler`."""


@dataclass
class Options:
    """How a run differs from the plain scenario."""

    compaction: dict[str, str]
    long_messages: bool = False
    slow_summary_seconds: float = 0.0


@dataclass(frozen=True)
class Scenario:
    name: str
    window: int
    answer_words: int
    """Words of filler in an answer: ~1.33 tokens a word in the fake tokenizer."""

    @property
    def answer_seconds(self) -> float:
        return self.answer_words * TOKENS_PER_WORD / TOKENS_PER_SECOND

    @property
    def input_budget(self) -> int:
        return self.window - MAX_OUTPUT


SCENARIOS = {
    "16k": Scenario("16k window, ~350-token answers", 16_384, 262),
    "64k": Scenario("64k window, ~1,400-token answers", 65_536, 1_050),
}
TOKENIZER = FakeTokenizer()


def sized_summary(request: ModelRequest, seconds: float = 0.0) -> Reply:
    """A structured summary of realistic size: 300 tokens plus a tenth of what it read,
    within the request's `max_output_tokens`; every fact the input states is carried into
    it, once (a faithful summarizer). `seconds`: how long it streams."""
    source = request_text(summary_source(request))
    read = TOKENIZER.count_text(source)
    size = min(request.max_output_tokens, 300 + read // 10)
    facts = [fact for fact in FACTS if fact in source]  # each stated once
    body = {heading: "- (none recorded)" for heading in SUMMARY_HEADINGS}
    body["Constraints & Requirements"] = "\n".join(f"- {f}" for f in facts) or "- none"
    text = "\n\n".join(f"## {h}\n{b}" for h, b in body.items())
    # The narrative retells the end of what it read, in its words: a faithful summary
    # shares the source's words and never repeats itself more than the source does
    # (filler long enough to cycle is what the summary judge refuses as a loop).
    words = max(size - TOKENIZER.count_text(text), 8) * 3 // 4
    answer = f"{text}\n\n" + " ".join(source.split()[-words:])
    while words > 8 and TOKENIZER.count_text(answer) > size:
        # Within its output limit, as a model stops there (an answer over it would be cut).
        words = words * 9 // 10
        answer = f"{text}\n\n" + " ".join(source.split()[-words:])
    chunk = Reply().chunk_chars
    return Reply(text=answer, delay=seconds * chunk / len(answer))


def make_service(
    server: FakeProviderServer, store: Store, window: int, **compaction: str
) -> ChatService:
    extra = "".join(f"{key} = {value}\n" for key, value in compaction.items())
    config = parse_config(
        f"""
[providers.fake-anthropic]
kind = "anthropic"
base_url = "{server.anthropic_url}"
api_key = "k"

[providers.fake-openai]
kind = "openai"
base_url = "{server.openai_url}"
api_key = "k"

[models."{MODEL["anthropic"]}"]
provider = "fake-anthropic"
context_window = {window}
max_output_tokens = {MAX_OUTPUT}

[models."{MODEL["openai"]}"]
provider = "fake-openai"
context_window = {window}
max_output_tokens = {MAX_OUTPUT}

[compaction]
auto_title = false
{extra}"""
    )

    async def no_sleep(_seconds: float) -> None:
        return None

    return ChatService(store, lambda: config, sleep=no_sleep)


def equivalents(record: RecordedRequest, write: float) -> float:
    usage = record.usage
    assert usage is not None
    plain = usage.total_input - usage.cache_read_tokens - usage.cache_creation_tokens
    return plain + write * usage.cache_creation_tokens + 0.1 * usage.cache_read_tokens


def person_message(turn: int, scenario: Scenario, long_messages: bool) -> str:
    """The person's message of `turn`: a fact in the first turns, ~110 tokens, and with
    `long_messages` every fourth one from the fourth on a paste of a share of the budget."""
    text = f"Turn {turn}. " + (FACTS[turn] + " " if turn < len(FACTS) else "")
    if long_messages and turn % 4 == 3:
        share = LONG_SHARES[(turn // 4) % len(LONG_SHARES)]
        return text + filler(turn, int(share * scenario.input_budget / TOKENS_PER_WORD))
    return text + filler(turn, 80)


@dataclass
class Noticed:
    """What the person would notice of the folds (see `--long-messages`)."""

    folds: int = 0
    waits: int = 0
    inline: int = 0
    digests: int = 0
    refusals: int = 0

    def see(self, name: str, data: dict) -> None:
        if name == "compaction.started" and data["trigger"] == "auto":
            if data["waiting"]:
                self.waits += 1
            elif not data["prepared"]:
                self.inline += 1
        elif name == "compaction.completed":
            self.folds += 1
            self.digests += bool(data["degraded"])
        elif name == "error":
            self.refusals += 1


async def session(wire: str, scenario: Scenario, options: Options) -> dict[str, str]:
    limits = ModelLimits(context_window=scenario.window, max_output_tokens=MAX_OUTPUT)
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(7, scenario.answer_words)),
        summaries=lambda request: sized_summary(request, options.slow_summary_seconds),
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeProviderServer(model, models={MODEL[wire]: limits}, api_key="k") as server,
    ):
        store = Store(Path(tmp) / "db.sqlite")
        service = make_service(server, store, scenario.window, **options.compaction)
        conversation = store.create_conversation(model=MODEL[wire])
        noticed = Noticed()
        shapes: list[str] = []
        clock = CLOCK
        for turn in range(TURNS):
            clock.now += scenario.answer_seconds  # the answer streams
            text = person_message(turn, scenario, options.long_messages)
            async for event in (await service.start_turn(conversation.id, text)).events():
                data = event.data
                noticed.see(event.name, data)
                if event.name == "compaction.completed":
                    shapes.append(f"t{turn}:{data['tokensBefore']}->{data['tokensAfter']}")
                assert options.long_messages or event.name != "error", data
            # A summary started after the turn takes as long as an answer; the person
            # then pauses. A slow summarizer is not waited for.
            clock.now += scenario.answer_seconds
            if not options.slow_summary_seconds:
                await service.background.wait(conversation.id)
            clock.now += PAUSE_SECONDS
        await service.background.wait(conversation.id)
        await service.shutdown()
        store.close()
        records = [r for r in server.requests if r.status == 200 and r.usage is not None]
        overflows = [r for r in server.requests if r.status != 200]
        assert options.long_messages or not overflows, [(r.status, r.error) for r in overflows]
    chat = [r for r in records if not r.is_summary]
    write = 1.25 if wire == "anthropic" else 1.0
    summaries = [r for r in records if r.is_summary]
    chat_billed = sum(equivalents(r, write) for r in chat)
    summary_billed = sum(equivalents(r, write) for r in summaries)
    last = request_text(chat[-1].model_request.messages)  # type: ignore[union-attr]
    kept = sum(fact in last for fact in FACTS)
    chat_input = sum(r.usage.total_input for r in chat)  # type: ignore[union-attr]
    row = {
        "folds": str(noticed.folds),
        "summarizer calls": str(len(summaries)),
        "chat input tokens": f"{chat_input:,}",
        "read from cache": f"{sum(r.usage.cache_read_tokens for r in chat) / chat_input:.0%}",
        "written to cache": f"{sum(r.usage.cache_creation_tokens for r in chat):,}",
        "billed, chat": f"{chat_billed / 1000:.1f}k",
        "billed, summaries": f"{summary_billed / 1000:.1f}k",
        "billed input (equivalents)": f"{(chat_billed + summary_billed) / 1000:.1f}k",
        "facts in the last request": f"{kept}/{len(FACTS)}",
    }
    after_view = [r for r in summaries if is_fold_request(r.model_request.messages[-1].text)]  # type: ignore[union-attr]
    summary_input = sum(r.usage.total_input for r in summaries)  # type: ignore[union-attr]
    summary_read = sum(r.usage.cache_read_tokens for r in summaries)  # type: ignore[union-attr]
    row["summaries after the view"] = f"{len(after_view)}/{len(summaries)}"
    row["summaries' input read from cache"] = (
        f"{summary_read / summary_input:.0%}" if summary_input else "—"
    )
    if options.long_messages:
        row["waits"] = str(noticed.waits)
        row["inline folds"] = str(noticed.inline)
        row["digests"] = str(noticed.digests)
        row["overflows"] = str(len(overflows))
        row["refusals"] = str(noticed.refusals)
    if wire == "anthropic":
        hour = sum(equivalents(r, 2.0) for r in records)
        row["same, 1-hour lifetime (writes 2×)"] = f"{hour / 1000:.1f}k"
    else:
        row["same, 1-hour lifetime (writes 2×)"] = "—"
    if VERBOSE:
        print(wire, scenario.name, " ".join(shapes), file=sys.stderr)
        order = "".join("S" if r.is_summary else "c" for r in records)
        print(f"  calls in order: {order}", file=sys.stderr)
        for r in summaries:
            u = r.usage
            assert u is not None
            print(
                f"  summary {u.total_input}: read {u.cache_read_tokens} written "
                f"{u.cache_creation_tokens} output {u.output_tokens}",
                file=sys.stderr,
            )
        for r in chat:
            first = r.model_request.messages[0].text  # type: ignore[union-attr]
            if first.startswith("[Conversation summary"):
                summary, _, rest = first.partition("</summary>")
                words = rest.partition("</person-words>")[0]
                print(
                    f"  request {r.usage.total_input}: summary {TOKENIZER.count_text(summary)}, "
                    f"words {TOKENIZER.count_text(words)}, "
                    f"read {r.usage.cache_read_tokens} written {r.usage.cache_creation_tokens}",
                    file=sys.stderr,
                )
    return row


def table(rows: dict[str, dict[str, str]]) -> str:
    columns = list(rows)
    keys = list(next(iter(rows.values())))
    lines = ["| metric | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(rows[c][key] for c in columns) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--wire", choices=[*MODEL, "all"], default="all")
    parser.add_argument(
        "--set", action="append", default=[], help="a [compaction] knob, e.g. target=0.35"
    )
    parser.add_argument("--verbose", action="store_true", help="each fold's before and after")
    parser.add_argument(
        "--long-messages", action="store_true", help="every fourth message a 10-30%% paste"
    )
    parser.add_argument(
        "--slow-summaries",
        type=float,
        default=0.0,
        metavar="S",
        help="stream each summary over ~S s and do not wait for it between turns",
    )
    args = parser.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    compaction = dict(item.split("=", 1) for item in args.set)
    options = Options(compaction, args.long_messages, args.slow_summaries)
    settings = (compaction or "defaults", "long messages" if args.long_messages else "")
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; {settings}")
    rows = {}
    for key in SCENARIOS if args.scenario == "all" else (args.scenario,):
        for wire in MODEL if args.wire == "all" else (args.wire,):
            rows[f"{wire}, {key}"] = asyncio.run(session(wire, SCENARIOS[key], options))
    print("\n" + table(rows))


if __name__ == "__main__":
    main()
