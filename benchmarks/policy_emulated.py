"""The policies `policy_sim.py` compares Foldline with, and what every policy shares.

Each keeps its own copy of the history (`display`) and its own fold state, counts
exactly (o200k_base, the OpenAI Chat wire) and folds with a fake summarizer of
realistic size (`fake_summary`). The emulated others:
- opencode-like: tool output cut at 2,000 lines / 50 KB; after every user turn old tool
  outputs pruned (newest 40k protected, at least 20k reclaimed, last two turns kept);
  when the last call's usage (its input plus its output) passed the usable limit, or on
  an overflow error, the whole conversation is summarized and the model continues from
  the summary alone.
- chatbox-like: when the context reaches 0.85 - 0.10 = 0.75 of the window, everything
  but the last 6 messages is summarized. No tool-output limit.
- claude-code-ish: context estimated as characters / 3.5; at 0.75 of the window,
  everything but the last min(10, 30% of the view's) messages is summarized; tool
  output cut at 30,000 characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from foldline.core.budget import Budget
from foldline.core.messages import Message, ToolSpec
from foldline.core.prompts import STRUCTURED_HEADINGS
from foldline.core.pruning import apply_prune, plan_prune
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, SummarizedRange
from foldline.core.tokens import OpenAIChatCounter
from foldline.core.view import build_api_messages
from foldline.tokenizers import get_encoder

SYSTEM = "You are a coding agent. Use the tools to read, search and run code. " * 20
TOOLS = [
    ToolSpec(name="read_file", description="Read a file", input_schema={"type": "object"}),
    ToolSpec(name="bash", description="Run a shell command", input_schema={"type": "object"}),
    ToolSpec(name="grep", description="Search files", input_schema={"type": "object"}),
]
NOW = "2025-01-01T00:00:00Z"
EMULATED_PROMPT_TOKENS = 400


# --- counting --------------------------------------------------------------------------


class CachedCounter:
    """The exact OpenAI counter with per-message and per-text caches (messages are
    immutable values, so a count never goes stale)."""

    exact = True

    def __init__(self) -> None:
        self.inner = OpenAIChatCounter(get_encoder("o200k_base"))
        self._messages: dict[int, tuple[Message, int]] = {}
        self._texts: dict[str, int] = {}
        self._bases: dict[tuple[str, tuple[str, ...]], int] = {}

    def count_text(self, text: str) -> int:
        found = self._texts.get(text)
        if found is None:
            found = self.inner.count_text(text)
            if len(text) > 64:
                self._texts[text] = found
        return found

    def count_message(self, message: Message) -> int:
        found = self._messages.get(id(message))
        if found is None or found[0] is not message:
            found = (message, self.inner.count_message(message))
            self._messages[id(message)] = found
        return found[1]

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return self.inner.count_tools(tools)

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        key = (system, tuple(t.name for t in tools))
        base = self._bases.get(key)
        if base is None:
            base = self._bases[key] = self.inner.count_request(system, [], tools)
        return base + sum(self.count_message(m) for m in messages)


COUNTER = CachedCounter()


def message_chars(message: Message) -> int:
    return sum(
        len(getattr(p, "text", "") or getattr(p, "output", "") or str(getattr(p, "input", "")))
        for p in message.parts
    )


# --- the fake summarizer -------------------------------------------------------------------


def fake_summary(input_tokens: int, max_output: int, structured: bool) -> str:
    tokens = min(max_output, 1_500 + input_tokens // 50)
    filler = "The work so far: read files, ran tests, fixed errors. " * (tokens // 10 + 1)
    if not structured:
        return filler[: tokens * 5]
    head = "\n\n".join(f"## {h}\n- noted" for h in STRUCTURED_HEADINGS)
    return head + "\n\n" + filler[: max(tokens - 60, 10) * 5]


# --- policies ------------------------------------------------------------------------------


@dataclass
class Stats:
    requests: int = 0
    overflows: int = 0
    unfit: int = 0
    folds: int = 0
    summarizer_calls: int = 0
    input_tokens: int = 0
    summarizer_input_tokens: int = 0
    cache_breaks: int = 0
    cache_priced: float = 0.0
    real_shape_priced: float = 0.0
    verbatim: list[int] = field(default_factory=list)


class Policy:
    name = "base"

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.input_budget = budget.input_budget or 0
        self.display: list[Message] = []
        self.state: CompactionState | None = None
        self.stats = Stats()
        self.last_request_tokens = 0

    def ingest(self, output: str, tool: str) -> str:
        return output

    def view(self) -> list[Message]:
        return build_api_messages(self.display, self.state)

    async def before_request(self, new_turn: bool, mid_loop: bool) -> None:
        return None

    async def on_overflow(self) -> None:
        return None

    async def rescue(self) -> None:
        """The last resort after a rejected retry: fold everything but the newest
        message group (the last user message, or the last tool call and its results)."""
        if self.display[-1].role == "tool":
            self.fold_to(len(self.display) - 2)
        else:
            self.fold_to(len(self.display) - 1)

    def fold_to(self, keep_from: int) -> None:
        """An emulated fold: summarize display[start:keep_from] with the fake summarizer."""
        start = self.state.api_start_index if self.state else 0
        keep_from = max(keep_from, start)
        if keep_from == start and self.state is not None:
            return
        folded = build_api_messages(self.display[:keep_from], self.state)
        tokens = COUNTER.count_request("", folded, []) + EMULATED_PROMPT_TOKENS
        if tokens > self.input_budget:
            self.stats.overflows += 1
            tokens = self.input_budget
        self.stats.summarizer_calls += 1
        self.stats.summarizer_input_tokens += tokens
        self.stats.folds += 1
        self.state = CompactionState(
            version=(self.state.version if self.state else 0) + 1,
            compacted_at=NOW,
            summary_message=fake_summary(tokens, 8_000, structured=False),
            api_start_index=keep_from,
            summarized_range=SummarizedRange(
                from_index=start, to_index=keep_from, message_count=keep_from - start
            ),
            strategy="narrative",
            trigger="auto",
            tokens_before=0,
            tokens_after=0,
        )


class OpenCodeLike(Policy):
    name = "opencode-like"
    settings = CompactionSettings(prune_protect_tokens=40_000, prune_minimum_tokens=20_000)

    def ingest(self, output: str, tool: str) -> str:
        lines = output.splitlines(keepends=True)
        if len(lines) <= 2_000 and len(output.encode()) <= 50_000:
            return output
        kept = "".join(lines[:2_000]).encode()[:50_000].decode(errors="ignore")
        return kept + "\n(Output truncated: it exceeded 2000 lines or 50 KB.)"

    async def before_request(self, new_turn: bool, mid_loop: bool) -> None:
        if new_turn:
            plan = plan_prune(self.display, self.state, COUNTER.count_text, self.settings, None)
            for target in plan.targets:
                message = self.display[target.index]
                self.display[target.index] = apply_prune(message, target.call_ids, NOW)
        # The check uses the last call's usage: its input plus its output (the newest
        # assistant message), not the tool results or the user message added since.
        if self.last_request_tokens + self._last_output_tokens() > self.input_budget:
            self.fold_to(len(self.display))

    def _last_output_tokens(self) -> int:
        for message in reversed(self.display):
            if message.role == "assistant":
                return COUNTER.count_message(message)
        return 0

    async def on_overflow(self) -> None:
        self.fold_to(len(self.display))


class ChatboxLike(Policy):
    name = "chatbox-like"

    async def before_request(self, new_turn: bool, mid_loop: bool) -> None:
        tokens = COUNTER.count_request(SYSTEM, self.view(), TOOLS)
        if tokens >= 0.75 * self.budget.context_window:
            self.fold_to(len(self.display) - 6)

    async def on_overflow(self) -> None:
        self.fold_to(len(self.display) - 6)


class ClaudeCodeIsh(Policy):
    name = "claude-code-ish"

    def ingest(self, output: str, tool: str) -> str:
        if len(output) <= 30_000:
            return output
        return output[:15_000] + "\n... [output truncated] ...\n" + output[-15_000:]

    def _estimate(self) -> float:
        view = self.view()
        chars = len(SYSTEM) + sum(message_chars(m) for m in view)
        return chars / 3.5

    def _keep(self) -> int:
        in_view = len(self.display) - (self.state.api_start_index if self.state else 0)
        return min(10, max(1, int(0.3 * in_view)))

    async def before_request(self, new_turn: bool, mid_loop: bool) -> None:
        if self._estimate() >= 0.75 * self.budget.context_window:
            self.fold_to(len(self.display) - self._keep())

    async def on_overflow(self) -> None:
        self.fold_to(len(self.display) - self._keep())
