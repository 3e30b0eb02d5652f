"""Pruning: old tool outputs replaced in the model's view by a placeholder.

Pruning is the cheap step before a fold: no model call, and nothing is deleted (the
result part only gets `compacted_at`; `view.build_api_messages` shows the placeholder).
Every prune changes the prefix of the request and so breaks the provider's prompt
cache; that is why it is batched: it acts only when a worthwhile amount can be
reclaimed, and it leaves the newest outputs and the last two user turns alone, since
those are what the model is working with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from foldline.core.messages import History, Message, ToolResultPart, as_window
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState
from foldline.core.view import PRUNED_PLACEHOLDER

PROTECT_BUDGET_SHARE = 0.25
"""At most this share of the input budget is protected as newest tool output, so that a
small-window model still has something to prune."""

MINIMUM_BUDGET_SHARE = 0.10
"""Pruning acts once at least this share of the input budget (or the configured minimum,
whichever is smaller) can be reclaimed."""

PROTECTED_USER_TURNS = 2


@dataclass(frozen=True)
class PruneTarget:
    """The results to prune in one display message (absolute display index)."""

    index: int
    call_ids: tuple[str, ...]


@dataclass(frozen=True)
class PrunePlan:
    """What a prune would do; empty when it is not worth doing.

    `reclaimable_tokens` is the net saving (output tokens minus placeholder tokens) of
    the targets, 0 when the plan is empty.
    """

    targets: tuple[PruneTarget, ...]
    reclaimable_tokens: int

    @property
    def empty(self) -> bool:
        return not self.targets


EMPTY_PLAN = PrunePlan(targets=(), reclaimable_tokens=0)


def protect_tokens(settings: CompactionSettings, input_budget: int | None) -> int:
    """The newest tool-output tokens never pruned, scaled down for small budgets."""
    if input_budget is None:
        return settings.prune_protect_tokens
    return min(settings.prune_protect_tokens, int(input_budget * PROTECT_BUDGET_SHARE))


def minimum_tokens(settings: CompactionSettings, input_budget: int | None) -> int:
    """The smallest saving worth a prune (and the cache break it causes)."""
    if input_budget is None:
        return settings.prune_minimum_tokens
    return min(settings.prune_minimum_tokens, int(input_budget * MINIMUM_BUDGET_SHARE))


def plan_prune(
    display: History,
    state: CompactionState | None,
    count_text: Callable[[str], int],
    settings: CompactionSettings,
    input_budget: int | None,
) -> PrunePlan:
    """The tool outputs to prune now, newest protected first, or an empty plan.

    Walking from the newest message back: outputs in the last two user turns are never
    pruned; the first `protect_tokens` of tool output (counted from the newest, those
    turns included) are kept; older outputs are candidates unless their tool is
    protected or they are already pruned (those count for nothing). An output identical
    to a newer output of the same tool (a file read again) is superseded: it is a
    candidate even among the newest tokens, since the newer copy says the same thing.
    The summary is not a display message and so is never a candidate. Only
    `display[api_start_index:]` is read: older messages are not in the view anyway.
    """
    if not settings.prune:
        return EMPTY_PLAN
    start = state.api_start_index if state is not None else 0
    tail = as_window(display).since(start)
    placeholder_tokens = count_text(PRUNED_PLACEHOLDER)
    protect = protect_tokens(settings, input_budget)
    protected_tools = set(settings.protected_tools)
    user_turns_seen = 0
    newest_tokens = 0
    newer_outputs: set[tuple[str, str]] = set()
    reclaimable = 0
    targets: list[PruneTarget] = []
    for offset in range(len(tail) - 1, -1, -1):
        message = tail[offset]
        if message.role == "user":
            user_turns_seen += 1
            continue
        if message.role != "tool":
            continue
        in_protected_turns = user_turns_seen < PROTECTED_USER_TURNS
        call_ids: list[str] = []
        for result in reversed(message.tool_results):
            if result.compacted_at is not None or result.name in protected_tools:
                continue
            key = (result.name, result.output)
            superseded = key in newer_outputs
            newer_outputs.add(key)
            tokens = count_text(result.output)
            if in_protected_turns:
                newest_tokens += tokens
                continue
            if not superseded:
                already_protected = newest_tokens
                newest_tokens += tokens
                # The output that crosses the protection line is protected whole.
                if already_protected < protect:
                    continue
            saving = tokens - placeholder_tokens
            if saving > 0:
                call_ids.append(result.call_id)
                reclaimable += saving
        if call_ids:
            targets.append(PruneTarget(index=start + offset, call_ids=tuple(reversed(call_ids))))
    if reclaimable < max(minimum_tokens(settings, input_budget), 1):
        return EMPTY_PLAN
    return PrunePlan(targets=tuple(reversed(targets)), reclaimable_tokens=reclaimable)


def apply_prune(message: Message, call_ids: Iterable[str], now: str) -> Message:
    """The message with the given results marked pruned at `now`; nothing is deleted.

    Idempotent: a result already pruned keeps its original `compacted_at`, and a message
    with nothing to change is returned as it is.
    """
    wanted = set(call_ids)
    if not any(
        isinstance(p, ToolResultPart) and p.call_id in wanted and p.compacted_at is None
        for p in message.parts
    ):
        return message
    parts = tuple(
        p.model_copy(update={"compacted_at": now})
        if isinstance(p, ToolResultPart) and p.call_id in wanted and p.compacted_at is None
        else p
        for p in message.parts
    )
    return message.model_copy(update={"parts": parts})
