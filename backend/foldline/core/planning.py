"""Where a fold may end and where it should: split points and the sizes behind them.

Shared by the model fold (`compaction.fold`) and the emergency digest
(`digest.emergency_fold`): both keep a recent tail verbatim and must land the folded
view at the target, or failing that within the budget. A split never falls inside a
tool interaction (a call and its result stay on the same side), so the kept tail is
always a valid provider payload.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from foldline.core.messages import History, Message, ToolSpec, as_window
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, SummarizedRange, Trigger
from foldline.core.tokens import TokenCounter
from foldline.core.view import mark_unanswered, repair_pairs, summary_to_message, view_message

SLACK_TOKENS = 16
"""Room for tokens merging at string joins: tokenizers are not exactly additive."""

MAX_EXACT_CHECKS = 32
"""Exact (repaired) tail counts tried per planning step before giving up on a step."""


def safe_split_points(display: History, start: int) -> list[int]:
    """Indices i in (start, len] where a fold may end: never inside a tool interaction.

    i is safe when no tool call in `display[start:i]` has a result at or after i, the
    message at i is not a tool message, and the split lands before a user message or
    right after a tool message (a complete interaction). `len(display)` is included
    when safe (a fold of everything, used only when nothing else fits).
    """
    tail = as_window(display).since(start)
    size = len(tail)
    # Each result answers the latest call with its id before it (ids may be reused
    # across responses); offsets c+1 .. r are inside that interaction.
    latest_call: dict[str, int] = {}
    blocked = [0] * (size + 2)
    for offset, message in enumerate(tail):
        for result in message.tool_results:
            call_offset = latest_call.get(result.call_id)
            if call_offset is not None and offset > call_offset:
                blocked[call_offset + 1] += 1
                blocked[offset + 1] -= 1
        for call in message.tool_calls:
            latest_call[call.id] = offset
    points: list[int] = []
    open_interactions = blocked[0]
    for offset in range(1, size + 1):
        open_interactions += blocked[offset]
        if open_interactions:
            continue
        following = tail[offset] if offset < size else None
        if following is not None and following.role == "tool":
            continue
        if following is None or following.role == "user" or tail[offset - 1].role == "tool":
            points.append(start + offset)
    return points


def choose_split(
    display: History,
    state: CompactionState | None,
    count_message: Callable[[Message], int],
    keep_recent_tokens: int,
    must_free_to: int | None = None,
) -> int | None:
    """Where to fold: keep the recent tail by tokens, at least the last user turn.

    Among safe points up to the last user message, take the latest one whose tail holds
    at least `keep_recent_tokens` (capped by `must_free_to`); if that tail is larger than
    `must_free_to`, take the next safe point (the smallest tail the last user turn
    allows). If every tail is smaller, fold the least (the earliest safe point). None
    when no safe point lies before the last user turn.
    """
    start = state.api_start_index if state is not None else 0
    window = as_window(display)
    tail = window.since(start)
    counts = [count_message(m) for m in tail]
    suffix = [0] * (len(tail) + 1)
    for offset in range(len(tail) - 1, -1, -1):
        suffix[offset] = suffix[offset + 1] + counts[offset]
    last_user = max((start + o for o, m in enumerate(tail) if m.role == "user"), default=None)
    limit = last_user if last_user is not None else window.end - 1
    points = [p for p in safe_split_points(window, start) if p <= limit]
    return pick_split(points, lambda p: suffix[p - start], keep_recent_tokens, must_free_to)


def pick_split(
    points: Sequence[int],
    tail_tokens: Callable[[int], int],
    keep_recent_tokens: int,
    must_free_to: int | None,
) -> int | None:
    """The `choose_split` rule over given ascending candidate points."""
    if not points:
        return None
    keep = keep_recent_tokens if must_free_to is None else min(keep_recent_tokens, must_free_to)
    holding = [p for p in points if tail_tokens(p) >= keep]
    if not holding:
        return points[0]
    chosen = holding[-1]
    if must_free_to is not None and tail_tokens(chosen) > must_free_to:
        later = [p for p in points if p > chosen]
        if later:
            chosen = later[0]
    return chosen


class FoldPlanner:
    """The current view's sizes, counted once per message, for choosing a split.

    Reads only `display[start:]`. `tail_tokens(split)` is exact: it counts the tail as
    the model would see it after the fold (pruned placeholders, repaired pairs).
    `pinned_tokens` (the pins block at its largest) counts as part of the fixed request.
    """

    def __init__(
        self,
        display: History,
        state: CompactionState | None,
        counter: TokenCounter,
        system: str,
        tools: Sequence[ToolSpec],
        pinned_tokens: int = 0,
    ) -> None:
        window = as_window(display)
        self.counter = counter
        self.state = state
        self.start = state.api_start_index if state is not None else 0
        self.end = max(window.end, self.start)
        self._viewed = [view_message(m) for m in window.since(self.start)]
        # Keyed by id() with the message kept alive in the value, so ids are never reused.
        self._counts: dict[int, tuple[Message, int]] = {}
        counts = [self._count(m) for m in self._viewed]
        self._suffix = [0] * (len(counts) + 1)
        for offset in range(len(counts) - 1, -1, -1):
            self._suffix[offset] = self._suffix[offset + 1] + counts[offset]
        self._exact: dict[int, int] = {}
        self.fixed = counter.count_request(system, [], tools) + pinned_tokens
        self.points = safe_split_points(window, self.start)
        self.last_user = max(
            (self.start + o for o, m in enumerate(self._viewed) if m.role == "user"),
            default=None,
        )
        self.frame = (
            max(
                counter.count_message(summary_to_message(_frame_state(degraded)))
                for degraded in (False, True)
            )
            + SLACK_TOKENS
        )

    def _count(self, message: Message) -> int:
        cached = self._counts.get(id(message))
        if cached is None:
            cached = (message, self.counter.count_message(message))
            self._counts[id(message)] = cached
        return cached[1]

    def approx_tail_tokens(self, split: int) -> int:
        """The tail from `split` by cached per-message counts, before pair repair."""
        return self._suffix[split - self.start]

    def tail_tokens(self, split: int) -> int:
        """The tail from `split` exactly as it would be sent (repaired)."""
        if split not in self._exact:
            repaired = mark_unanswered(repair_pairs(self._viewed[split - self.start :]))
            self._exact[split] = sum(self._count(m) for m in repaired)
        return self._exact[split]

    def view_tokens(self, split: int, state: CompactionState | None) -> int:
        """The full request (system, tools, summary, tail) for a view starting at `split`."""
        summary = self.counter.count_message(summary_to_message(state)) if state else 0
        return self.fixed + summary + self.tail_tokens(split)

    def first_fitting(self, candidates: Sequence[int], room: int) -> int | None:
        """The earliest candidate (largest tail) whose exact tail is at most `room`."""
        checks = 0
        for point in candidates:
            if self.approx_tail_tokens(point) > room + SLACK_TOKENS:
                continue
            if self.tail_tokens(point) <= room:
                return point
            checks += 1
            if checks >= MAX_EXACT_CHECKS:
                break
        return None


def _frame_state(degraded: bool) -> CompactionState:
    """A state with an empty summary and long numbers: its message is the frame's size."""
    return CompactionState(
        version=10**6,
        compacted_at="",
        summary_message="",
        api_start_index=0,
        summarized_range=SummarizedRange(from_index=0, to_index=0, message_count=10**9),
        strategy="emergency",
        trigger="auto",
        tokens_before=0,
        tokens_after=0,
        degraded=degraded,
    )


ASKED_TRIGGERS: frozenset[Trigger] = frozenset({"manual", "handoff"})
"""Folds the person asked for: they keep the recent tail the person chose."""


def kept_tail_tokens(
    settings: CompactionSettings, input_budget: int | None, trigger: Trigger
) -> int:
    """The recent tail a fold keeps verbatim: `keep_recent_tokens`, and for a fold the
    person did not ask for (`ASKED_TRIGGERS`), at most `keep_recent_share` of the input
    budget.

    The kept tail is written to the prompt cache again by the request after the fold
    (everything after the changed summary is a new prefix), once per fold cycle. On a
    200k window that is a few percent of what the cycle reads; on a 16k window, where a
    fold comes every few turns, an 8,000-token tail would be most of what the fold
    costs (measured in `benchmarks/fold_cost_bench.py`)."""
    keep = settings.keep_recent_tokens
    if trigger in ASKED_TRIGGERS or input_budget is None:
        return keep
    return min(keep, int(settings.keep_recent_share * input_budget))


def plan_split(
    planner: FoldPlanner,
    *,
    summary_tokens: int,
    input_budget: int | None,
    settings: CompactionSettings,
    keep_recent_tokens: int | None = None,
) -> int | None:
    """The split of a fold whose summary takes at most `summary_tokens`, keeping a
    recent tail of `keep_recent_tokens` (default: the settings').

    In order of preference, the first that exists:
    1. keeping the last user turn, a view at or under the target (`choose_split`);
    2. keeping the last user turn, a view under the threshold (no refold next turn);
    3. a split inside the last user turn (at a safe point: the user's request is then
       quoted in the summary), at the target, then under the threshold;
    4. keeping the last user turn, a view within the budget;
    5. inside the last turn, within the budget;
    6. when the current view is over budget: everything folded (`end`);
    7. otherwise the smallest tail available. None when nothing can be folded.
    """
    points = planner.points
    end = planner.end
    last_user = planner.last_user
    if last_user is None:
        before = [p for p in points if p < end]
        inside: list[int] = []
    else:
        before = [p for p in points if p <= last_user]
        inside = [p for p in points if last_user < p < end]
    keep = settings.keep_recent_tokens if keep_recent_tokens is None else keep_recent_tokens
    if input_budget is None:
        for candidates in (before, inside):
            chosen = pick_split(candidates, planner.approx_tail_tokens, keep, None)
            if chosen is not None:
                return chosen
        return None

    overhead = planner.fixed + planner.frame + summary_tokens
    target_room = int(settings.target * input_budget) - overhead
    threshold_room = int(settings.threshold * input_budget) - overhead - 1
    budget_room = input_budget - overhead

    if before:
        chosen = pick_split(before, planner.approx_tail_tokens, keep, max(target_room, 0))
        if chosen is not None:
            fitting = planner.first_fitting([p for p in before if p >= chosen], target_room)
            if fitting is not None:
                return fitting
        if planner.tail_tokens(before[-1]) <= threshold_room:
            return before[-1]
    for room in (target_room, threshold_room):
        fitting = planner.first_fitting(inside, room)
        if fitting is not None:
            return fitting
    if before and planner.tail_tokens(before[-1]) <= budget_room:
        return before[-1]
    fitting = planner.first_fitting(inside, budget_room)
    if fitting is not None:
        return fitting
    if planner.view_tokens(planner.start, planner.state) > input_budget and end in points:
        return end
    remaining = before + inside
    return remaining[-1] if remaining else None
