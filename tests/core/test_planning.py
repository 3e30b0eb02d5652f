"""Where a fold ends: safe split points and the preferences of `plan_split`, pinned down.

Each property compares the engine with a plain restatement of its rule, computed from
scratch (its own token sums, its own pair repair), on histories that include the awkward
shapes real providers produce: results that arrive after another message, call ids
reused across responses, interrupted batches.
"""

from __future__ import annotations

from fold_setup import COUNTER, SYSTEM, TOOLS, agent_session, fold_inputs
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from strategies import conversations, message_soups, state_at

from foldline.core.budget import Budget
from foldline.core.compaction import planned_fold_frees
from foldline.core.messages import (
    Message,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.planning import (
    SLACK_TOKENS,
    FoldPlanner,
    choose_split,
    pick_split,
    plan_split,
    safe_split_points,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, SummarizedRange
from foldline.core.view import repair_pairs, summary_to_message, view_message

# --- safe split points ----------------------------------------------------------------


def expected_safe_points(display: list[Message], start: int) -> list[int]:
    """Every i in (start, len] that no tool interaction spans, by brute force."""
    tail = display[start:]
    spanned: set[int] = set()
    for result_at, message in enumerate(tail):
        for result in message.tool_results:
            # A result answers the latest call with its id in an earlier message.
            calls = [
                at
                for at in range(result_at)
                if any(c.id == result.call_id for c in tail[at].tool_calls)
            ]
            if calls:
                spanned.update(range(calls[-1] + 1, result_at + 1))
    points = []
    for offset in range(1, len(tail) + 1):
        following = tail[offset] if offset < len(tail) else None
        if offset in spanned or (following is not None and following.role == "tool"):
            continue
        if following is None or following.role == "user" or tail[offset - 1].role == "tool":
            points.append(start + offset)
    return points


def test_a_late_result_and_a_reused_id_block_their_span() -> None:
    display = [
        user("u0"),  # 0
        assistant("", ToolCallPart(id="a", name="bash")),  # 1
        user("meanwhile"),  # 2: the result of `a` comes only after this
        tool_results(ToolResultPart(call_id="a", name="bash", output="x")),  # 3
        user("u1"),  # 4
        assistant("", ToolCallPart(id="a", name="bash")),  # 5: `a` again
        tool_results(ToolResultPart(call_id="a", name="bash", output="y")),  # 6
        user("u2"),  # 7
    ]
    # 2 and 3 lie inside the first interaction; 6 inside the second; 4 and 7 are free.
    assert safe_split_points(display, 0) == [4, 7, 8]
    assert expected_safe_points(display, 0) == [4, 7, 8]


@hyp_settings(max_examples=150, deadline=None)
@given(
    st.one_of(conversations(max_output_chars=50), message_soups()),
    st.integers(0, 4),
)
def test_safe_split_points_match_their_definition(display: list[Message], start: int) -> None:
    start = min(start, len(display))
    assert safe_split_points(display, start) == expected_safe_points(display, start)


# --- the split rule without a budget ----------------------------------------------------


def expected_pick(
    points: list[int], tail: dict[int, int], keep: int, cap: int | None
) -> int | None:
    """Keep at least `keep` (at most `cap`) tokens, as few as that allows; else fold least."""
    if not points:
        return None
    keep = keep if cap is None else min(keep, cap)
    holding = [p for p in points if tail[p] >= keep]
    if not holding:
        return points[0]
    if cap is not None and tail[holding[-1]] > cap:
        later = [p for p in points if p > holding[-1]]
        return later[0] if later else holding[-1]
    return holding[-1]


@hyp_settings(max_examples=400, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 50), min_size=0, max_size=8),
    keep=st.integers(0, 200),
    cap=st.none() | st.integers(0, 200),
)
def test_pick_split_keeps_the_smallest_tail_holding_keep(
    sizes: list[int], keep: int, cap: int | None
) -> None:
    points = list(range(1, len(sizes) + 1))
    tail = {p: sum(sizes[p - 1 :]) for p in points}
    assert pick_split(points, tail.__getitem__, keep, cap) == expected_pick(points, tail, keep, cap)


def test_choose_split_never_cuts_inside_the_last_user_turn() -> None:
    display = agent_session(3)
    last_user = max(i for i, m in enumerate(display) if m.role == "user")
    for keep in (0, 10, 10**6):
        split = choose_split(display, None, COUNTER.count_message, keep)
        assert split is not None and split <= last_user
    # After a fold at 4 the earliest point is inside turn 1 (after its tool result, 7),
    # never one the fold already covered.
    state = state_at(4)
    assert choose_split(display, state, COUNTER.count_message, 10**6) == 7


# --- plan_split: the preferences of a budgeted fold ------------------------------------


Tails = tuple[dict[int, int], dict[int, int]]
_TAILS: dict[tuple[int, int], tuple[list[Message], Tails]] = {}


def _tails(display: list[Message], start: int) -> Tails:
    """(approximate, exact) tail sizes from every index, computed from scratch; kept per
    display (held alive with its sizes, so its id is not reused) for the sweeps."""
    kept = _TAILS.get((id(display), start))
    if kept is None or kept[0] is not display:
        kept = _TAILS[(id(display), start)] = (display, _compute_tails(display, start))
    return kept[1]


def _compute_tails(display: list[Message], start: int) -> Tails:
    viewed = [view_message(m) for m in display[start:]]
    approx = {
        start + o: sum(COUNTER.count_message(m) for m in viewed[o:]) for o in range(len(viewed) + 1)
    }
    exact = {
        start + o: sum(COUNTER.count_message(m) for m in repair_pairs(viewed[o:]))
        for o in range(len(viewed) + 1)
    }
    return approx, exact


def expected_plan(
    display: list[Message],
    state: CompactionState | None,
    summary_tokens: int,
    input_budget: int | None,
    settings: CompactionSettings,
    frame: int,
) -> int | None:
    """The documented preferences of `plan_split`, as sets rather than a search."""
    start = state.api_start_index if state is not None else 0
    end = max(len(display), start)
    points = safe_split_points(display, start)
    approx, exact = _tails(display, start)
    users = [i for i in range(start, len(display)) if display[i].role == "user"]
    if users:
        before = [p for p in points if p <= users[-1]]
        inside = [p for p in points if users[-1] < p < end]
    else:
        before, inside = [p for p in points if p < end], []
    keep = settings.keep_recent_tokens
    if input_budget is None:
        for candidates in (before, inside):
            chosen = expected_pick(candidates, approx, keep, None)
            if chosen is not None:
                return chosen
        return None

    overhead = COUNTER.count_request(SYSTEM, [], TOOLS) + frame + summary_tokens
    target_room = int(settings.target * input_budget) - overhead
    threshold_room = int(settings.threshold * input_budget) - overhead - 1
    budget_room = input_budget - overhead

    def largest_fitting(candidates: list[int], room: int, after: int = 0) -> int | None:
        fitting = [
            p
            for p in candidates
            if p >= after and approx[p] <= room + SLACK_TOKENS and exact[p] <= room
        ]
        return fitting[0] if fitting else None

    if before:
        # 1. Keep the last turn and at least keep_recent_tokens (as few as that allows),
        #    or the largest tail under it, at the target.
        chosen = expected_pick(before, approx, keep, max(target_room, 0))
        fitting = largest_fitting(before, target_room, after=chosen)
        if fitting is not None:
            return fitting
        # 2. Keeping the last turn, under the threshold.
        if exact[before[-1]] <= threshold_room:
            return before[-1]
    # 3. Inside the last turn: at the target, then under the threshold.
    for room in (target_room, threshold_room):
        fitting = largest_fitting(inside, room)
        if fitting is not None:
            return fitting
    # 4. and 5. Within the budget, keeping the last turn if possible.
    if before and exact[before[-1]] <= budget_room:
        return before[-1]
    fitting = largest_fitting(inside, budget_room)
    if fitting is not None:
        return fitting
    # 6. Over budget: fold everything; 7. else the smallest tail.
    summary = COUNTER.count_message(summary_to_message(state)) if state else 0
    view = COUNTER.count_request(SYSTEM, [], TOOLS) + summary + exact[start]
    if view > input_budget and end in points:
        return end
    remaining = before + inside
    return remaining[-1] if remaining else None


@hyp_settings(max_examples=250, deadline=None)
@given(
    display=conversations(max_turns=6, max_output_chars=6_000),
    folded=st.integers(0, 6),
    input_budget=st.none() | st.integers(500, 30_000),
    keep=st.sampled_from([0, 300, 2_000, 8_000]),
    target=st.sampled_from([0.3, 0.5, 0.7]),
    summary_tokens=st.sampled_from([50, 400, 2_000]),
)
def test_plan_split_follows_its_preferences(
    display: list[Message],
    folded: int,
    input_budget: int | None,
    keep: int,
    target: float,
    summary_tokens: int,
) -> None:
    points = safe_split_points(display, 0)
    fold_at = [p for p in points if p < len(display)][:folded]
    state = state_at(fold_at[-1]) if fold_at else None
    settings = CompactionSettings(keep_recent_tokens=keep, target=target)
    planner = FoldPlanner(display, state, COUNTER, SYSTEM, TOOLS)
    chosen = plan_split(
        planner, summary_tokens=summary_tokens, input_budget=input_budget, settings=settings
    )
    assert chosen == expected_plan(
        display, state, summary_tokens, input_budget, settings, planner.frame
    )


def test_the_planner_counts_what_the_tail_would_be() -> None:
    display = agent_session(4)
    planner = FoldPlanner(display, None, COUNTER, SYSTEM, TOOLS)
    approx, exact = _tails(display, 0)
    for point in planner.points:
        assert planner.approx_tail_tokens(point) == approx[point]
        assert (approx[point] > 0) == (point < len(display))
        assert planner.tail_tokens(point) == exact[point]
    assert planner.fixed == COUNTER.count_request(SYSTEM, [], TOOLS)
    # The frame holds any summary message's wrapping (degraded or not, up to a million
    # versions and a billion folded messages) plus the slack for tokens merging at joins.
    wrappings = [
        COUNTER.count_message(
            summary_to_message(
                state_at(0).model_copy(
                    update={
                        "summary_message": "",
                        "degraded": degraded,
                        "version": 999_999,
                        "summarized_range": SummarizedRange(
                            from_index=0, to_index=0, message_count=999_999_999
                        ),
                    }
                )
            )
        )
        for degraded in (False, True)
    ]
    assert max(wrappings) + SLACK_TOKENS <= planner.frame <= max(wrappings) + SLACK_TOKENS + 1


def test_a_budgeted_fold_keeps_recent_tokens_and_no_more() -> None:
    # Twelve turns of ~2.4k tokens each; the target leaves room for about six turns.
    display = agent_session(12)
    planner = FoldPlanner(display, None, COUNTER, SYSTEM, TOOLS)
    settings = CompactionSettings(keep_recent_tokens=5_000)
    split = plan_split(planner, summary_tokens=500, input_budget=40_000, settings=settings)
    approx, _ = _tails(display, 0)
    assert split is not None and approx[split] >= 5_000
    later = [p for p in planner.points if p > split]
    assert approx[later[0]] < 5_000
    # With a larger keep the fold keeps more, as long as it fits the target.
    more = plan_split(
        planner,
        summary_tokens=500,
        input_budget=40_000,
        settings=CompactionSettings(keep_recent_tokens=12_000),
    )
    assert more is not None and more < split and approx[more] >= 12_000


def test_an_over_budget_view_with_no_room_folds_everything() -> None:
    display = [user("a" * 4_000), assistant("b" * 4_000)]
    planner = FoldPlanner(display, None, COUNTER, SYSTEM, TOOLS)
    settings = CompactionSettings(keep_recent_tokens=0)
    assert plan_split(planner, summary_tokens=10, input_budget=300, settings=settings) == 2
    assert plan_split(planner, summary_tokens=10, input_budget=None, settings=settings) is None


# --- sweeps: every budget across a range, so each boundary is met exactly ---------------


def _last_turn_tool_loop() -> list[Message]:
    """Four turns; the last is a long tool loop, so points exist inside the last turn."""
    display = agent_session(3, output_chars=2_000)
    display.append(user("final request: please finish the whole task"))
    for i in range(4):
        call = ToolCallPart(id=f"loop{i}", name="read_file", input={"path": f"src/l{i}.py"})
        display.append(assistant(f"Step {i}.", call))
        output = ToolResultPart(call_id=f"loop{i}", name="read_file", output="q" * 1_600)
        display.append(tool_results(output))
    display.append(assistant("All done."))
    return display


def _interrupted_history() -> list[Message]:
    """A history with calls that never got a result: exact tails exceed approximate ones."""
    display: list[Message] = []
    for i in range(6):
        display.append(user(f"request {i} " + "w" * 300))
        display.append(assistant("Trying.", ToolCallPart(id=f"x{i}", name="bash")))
    display.append(user("and now?"))
    return display


def _boundary_budgets(planner: FoldPlanner, display: list[Message], summary: int) -> set[int]:
    """Budgets at which some tail meets a room exactly (target, threshold, budget), ±2."""
    approx, exact = _tails(display, 0)
    overhead = planner.fixed + planner.frame + summary
    budgets: set[int] = set()
    for point in planner.points:
        for size in (approx[point], exact[point], approx[point] - SLACK_TOKENS):
            for share in (0.5, 0.8, 1.0):
                center = int((size + overhead) / share)
                budgets.update(range(max(center - 2, 1), center + 3))
    view = planner.fixed + exact[0]
    budgets.update(range(max(view - 2, 1), view + 3))
    return budgets


def test_plan_split_follows_its_preferences_at_every_boundary() -> None:
    for display in (_last_turn_tool_loop(), _interrupted_history(), agent_session(5)):
        planner = FoldPlanner(display, None, COUNTER, SYSTEM, TOOLS)
        budgets = _boundary_budgets(planner, display, 120)
        for keep in (0, 700, 3_000):
            settings = CompactionSettings(keep_recent_tokens=keep)
            for input_budget in sorted(budgets):
                chosen = plan_split(
                    planner, summary_tokens=120, input_budget=input_budget, settings=settings
                )
                expected = expected_plan(display, None, 120, input_budget, settings, planner.frame)
                assert chosen == expected, (keep, input_budget)


class ZeroCounter:
    """Counts only synthetic `[interrupted]` results (1 token each): approximate tails are
    0 while exact ones count the unanswered calls after the split."""

    exact = False

    def count_text(self, text: str) -> int:
        return 0

    def count_message(self, message: Message) -> int:
        return sum(r.output.startswith("[interrupted]") for r in message.tool_results)

    def count_tools(self, tools: object) -> int:
        return 0

    def count_request(self, system: str, messages: list[Message], tools: object) -> int:
        return sum(self.count_message(m) for m in messages)


def test_first_fitting_gives_up_after_its_exact_checks() -> None:
    # 40 unanswered calls: from the k-th point (k from 0) the exact tail is 40 - k.
    display: list[Message] = []
    for i in range(40):
        display += [user(f"u{i}"), assistant("", ToolCallPart(id=f"c{i}", name="bash"))]
    planner = FoldPlanner(display, None, ZeroCounter(), "", [])
    candidates = [p for p in planner.points if p % 2 == 0 and p < len(display)]
    assert [planner.tail_tokens(p) for p in candidates[:3]] == [39, 38, 37]
    # The 32nd candidate fits a room of 8: found after 31 failed checks.
    assert planner.first_fitting(candidates, 39 - 31) == candidates[31]
    # The 33rd would fit a room of 7, but the planner stops after 32 exact checks.
    assert planner.first_fitting(candidates, 39 - 32) is None
    # Approximate sizes over the room (plus slack) are skipped without an exact check.
    assert planner.first_fitting(candidates, -SLACK_TOKENS - 1) is None


def test_choose_split_without_a_user_message_in_the_window() -> None:
    display = [
        user("u0"),
        assistant("", ToolCallPart(id="a", name="bash")),
        tool_results(ToolResultPart(call_id="a", name="bash", output="x" * 400)),
        assistant("", ToolCallPart(id="b", name="bash")),
        tool_results(ToolResultPart(call_id="b", name="bash", output="y" * 400)),
        assistant("done"),
    ]
    state = state_at(1)
    # From 1 on there is no user message: any safe point up to the last message counts,
    # never the end (that would fold everything).
    assert safe_split_points(display, 1) == [3, 5, 6]
    assert choose_split(display, state, COUNTER.count_message, 0) == 5
    assert choose_split(display, state, COUNTER.count_message, 10**6) == 3
    # Without the fold the only user message is the first: nothing lies before it.
    assert choose_split(display, None, COUNTER.count_message, 0) is None


def test_choose_split_keeps_exactly_keep_recent_tokens_when_a_point_has_them() -> None:
    display = agent_session(4)
    last_user = max(i for i, m in enumerate(display) if m.role == "user")
    points = [p for p in safe_split_points(display, 0) if p <= last_user]
    for point in points:
        exact_tail = sum(COUNTER.count_message(m) for m in display[point:])
        assert choose_split(display, None, COUNTER.count_message, exact_tail) == point
        later = choose_split(display, None, COUNTER.count_message, exact_tail + 1)
        assert later == max([p for p in points if p < point], default=points[0])


def test_choose_split_caps_the_kept_tail_at_must_free_to() -> None:
    display = agent_session(10)
    count = COUNTER.count_message
    split = choose_split(display, None, count, keep_recent_tokens=5_000, must_free_to=3_000)
    assert split is not None and sum(count(m) for m in display[split:]) <= 3_000
    uncapped = choose_split(display, None, count, keep_recent_tokens=5_000)
    assert uncapped is not None and uncapped < split


def test_when_nothing_fits_but_the_view_does_the_smallest_tail_is_kept() -> None:
    display = agent_session(3)
    planner = FoldPlanner(display, None, COUNTER, SYSTEM, TOOLS)
    view = planner.view_tokens(0, None)
    last_user = max(i for i, m in enumerate(display) if m.role == "user")
    settings = CompactionSettings(keep_recent_tokens=0)
    # A summary as large as the budget leaves no room for any tail; the view itself is
    # within the budget (exactly at it), so nothing is folded wholesale.
    chosen = plan_split(planner, summary_tokens=view, input_budget=view, settings=settings)
    assert chosen == max(p for p in planner.points if p < len(display))
    assert chosen > last_user
    # One token less and the view is over budget: everything is folded.
    over = plan_split(planner, summary_tokens=view, input_budget=view - 1, settings=settings)
    assert over == len(display)


def test_an_over_budget_view_counts_the_current_summary() -> None:
    display = agent_session(3)
    state = state_at(4).model_copy(update={"summary_message": "s" * 4_000})
    planner = FoldPlanner(display, state, COUNTER, SYSTEM, TOOLS)
    summary = COUNTER.count_message(summary_to_message(state))
    with_summary = planner.view_tokens(4, state)
    assert with_summary == planner.fixed + summary + planner.tail_tokens(4)
    assert planner.view_tokens(4, None) == planner.fixed + planner.tail_tokens(4)
    settings = CompactionSettings(keep_recent_tokens=0)
    # Over budget only because of the summary: still everything is folded.
    budget = with_summary - 1
    assert planner.view_tokens(4, None) <= budget
    chosen = plan_split(planner, summary_tokens=budget, input_budget=budget, settings=settings)
    assert chosen == len(display)


def test_a_fold_planned_early_frees_little_and_one_planned_late_frees_much() -> None:
    """`planned_fold_frees` tells a fold worth preparing from one that would fold next
    to nothing: the same conversation, early and late, on the same small budget."""
    budget = Budget(context_window=44_000, max_output_tokens=4_000)
    early = fold_inputs(agent_session(2), budget=budget)
    late = fold_inputs(agent_session(12), budget=budget)
    late_view = COUNTER.count_request(SYSTEM, list(late.window.since(0)), TOOLS)
    assert planned_fold_frees(early) < planned_fold_frees(late)
    assert planned_fold_frees(late) > late_view // 4
    assert planned_fold_frees(fold_inputs([], budget=budget)) == 0
