"""Pruning old tool outputs: what is protected, when it acts, and that it is idempotent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from strategies import CharCounter, conversations, message_soups, state_at

from foldline.core.messages import (
    HistoryWindow,
    Message,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.pruning import (
    PrunePlan,
    PruneTarget,
    apply_prune,
    minimum_tokens,
    plan_prune,
    protect_tokens,
)
from foldline.core.settings import CompactionSettings
from foldline.core.view import PRUNED_PLACEHOLDER, build_api_messages

COUNT = CharCounter().count_text
NOW = "2025-06-01T12:00:00Z"
SMALL = CompactionSettings(prune_protect_tokens=1000, prune_minimum_tokens=500)


def round_trip(i: int, tokens: int, name: str = "read_file") -> list[Message]:
    """One tool interaction whose output is about `tokens` tokens."""
    call = ToolCallPart(id=f"c{i}", name=name, input={"path": f"f{i}.py"})
    out = ToolResultPart(call_id=f"c{i}", name=name, output=f"{i:04d}" + "y" * (tokens * 4 - 4))
    return [assistant("", call), tool_results(out)]


def history(outputs: list[int], *, turns_after: int = 2, name: str = "read_file") -> list[Message]:
    messages: list[Message] = [user("start")]
    for i, tokens in enumerate(outputs):
        messages += round_trip(i, tokens, name)
    for j in range(turns_after):
        messages += [user(f"next {j}"), assistant("ok")]
    return messages


def apply_plan(display: list[Message], plan: PrunePlan) -> list[Message]:
    out = list(display)
    for target in plan.targets:
        out[target.index] = apply_prune(out[target.index], target.call_ids, NOW)
    return out


def test_old_outputs_beyond_the_protected_newest_are_pruned() -> None:
    display = history([600, 600, 600, 600])  # 2400 tokens; the newest 1000 protected
    plan = plan_prune(display, None, COUNT, SMALL, input_budget=None)
    pruned_ids = {cid for t in plan.targets for cid in t.call_ids}
    assert pruned_ids == {"c0", "c1"}  # c3 protected, c2 crosses the line: kept whole
    assert plan.reclaimable_tokens == 2 * (600 - COUNT(PRUNED_PLACEHOLDER))
    assert [t.index for t in plan.targets] == [2, 4]


def test_a_file_read_again_supersedes_its_older_copy() -> None:
    display = history([900, 100, 100])
    reread = ToolResultPart(call_id="again", name="read_file", output=display[2].parts[0].output)
    display += [
        assistant("", ToolCallPart(id="again", name="read_file", input={"path": "f0.py"})),
        tool_results(reread),
    ]
    # Every output is within the newest 2000 protected tokens, but the first read is
    # superseded by the identical read at the end.
    config = SMALL.model_copy(update={"prune_protect_tokens": 2000})
    plan = plan_prune(display, None, COUNT, config, input_budget=None)
    assert [(t.index, t.call_ids) for t in plan.targets] == [(2, ("c0",))]
    # In the last two user turns nothing is pruned, superseded or not.
    recent = [user("x"), *display[1:3], user("y"), *display[-2:]]
    assert plan_prune(recent, None, COUNT, config, None).empty


def test_nothing_below_the_minimum() -> None:
    display = history([200, 200, 1200])  # ~344 reclaimable, under the 500 minimum
    assert plan_prune(display, None, COUNT, SMALL, input_budget=None) == PrunePlan((), 0)


def test_last_two_user_turns_are_never_pruned() -> None:
    display = history([2000, 2000, 2000], turns_after=0)
    display += [user("second to last"), *round_trip(10, 3000), user("last")]
    display += round_trip(11, 3000)
    plan = plan_prune(display, None, COUNT, SMALL, input_budget=None)
    pruned_ids = {cid for t in plan.targets for cid in t.call_ids}
    assert "c10" not in pruned_ids and "c11" not in pruned_ids
    # The protected turns' outputs count as the newest tokens: everything older goes.
    assert pruned_ids == {"c0", "c1", "c2"}


def test_protected_tools_are_never_pruned() -> None:
    display = history([800, 800, 800, 800], name="getContextStats")
    assert plan_prune(display, None, COUNT, SMALL, input_budget=None).empty


def test_prune_disabled() -> None:
    display = history([5000] * 5)
    off = SMALL.model_copy(update={"prune": False})
    assert plan_prune(display, None, COUNT, off, input_budget=None).empty


def test_thresholds_scale_with_a_small_budget() -> None:
    defaults = CompactionSettings()
    assert protect_tokens(defaults, 8000) == 2000
    assert minimum_tokens(defaults, 8000) == 800
    assert protect_tokens(defaults, 1_000_000) == 40_000
    assert minimum_tokens(defaults, None) == 20_000
    # An 8k model with the default settings still prunes.
    display = history([900, 900, 900, 900])
    assert not plan_prune(display, None, COUNT, defaults, input_budget=8000).empty
    assert plan_prune(display, None, COUNT, defaults, input_budget=None).empty


def test_only_the_view_after_the_fold_is_considered() -> None:
    display = history([800] * 6)  # c3 at index 7-8; c4 crosses the protection line
    state = state_at(7)
    plan = plan_prune(display, state, COUNT, SMALL, input_budget=None)
    assert all(t.index >= 7 for t in plan.targets)
    assert {cid for t in plan.targets for cid in t.call_ids} == {"c3"}
    # Only the rows from the fold on need to be loaded.
    assert plan_prune(HistoryWindow(7, display[7:]), state, COUNT, SMALL, None) == plan


def test_apply_prune_marks_and_never_deletes() -> None:
    message = tool_results(
        ToolResultPart(call_id="a", name="bash", output="one"),
        ToolResultPart(call_id="b", name="bash", output="two"),
    )
    pruned = apply_prune(message, ["a"], NOW)
    assert pruned.parts[0].compacted_at == NOW and pruned.parts[0].output == "one"
    assert pruned.parts[1] == message.parts[1]
    again = apply_prune(pruned, ["a"], "later")
    assert again is pruned
    view = build_api_messages(
        [
            user("u"),
            assistant("", ToolCallPart(id="a", name="bash"), ToolCallPart(id="b", name="bash")),
            pruned,
        ],
        None,
    )
    assert view[2].parts[0].output == PRUNED_PLACEHOLDER


@hyp_settings(max_examples=100, deadline=None)
@given(conversations(max_output_chars=6000), st.integers(2000, 60_000))
def test_pruning_is_idempotent_and_respects_its_protections(
    display: list[Message], input_budget: int
) -> None:
    config = CompactionSettings(prune_protect_tokens=1500, prune_minimum_tokens=300)
    plan = plan_prune(display, None, COUNT, config, input_budget)
    pruned = apply_plan(display, plan)
    # Idempotent: planning again finds nothing; applying again changes nothing.
    assert plan_prune(pruned, None, COUNT, config, input_budget).empty
    assert apply_plan(pruned, plan) == pruned

    user_indices = [i for i, m in enumerate(display) if m.role == "user"]
    protected_from = user_indices[-2] if len(user_indices) >= 2 else 0
    newly = [
        (i, j, r)
        for i, m in enumerate(pruned)
        for j, (r, before) in enumerate(zip(m.tool_results, display[i].tool_results, strict=True))
        if r.compacted_at == NOW and before.compacted_at is None
    ]
    assert sum(COUNT(r.output) - COUNT(PRUNED_PLACEHOLDER) for _, _, r in newly) == (
        plan.reclaimable_tokens
    )
    if newly:
        assert plan.reclaimable_tokens >= minimum_tokens(config, input_budget)
    protect = protect_tokens(config, input_budget)
    for index, position, result in newly:
        assert index < protected_from
        assert result.name not in config.protected_tools
        later = [*display[index].tool_results[position + 1 :]]
        later += [r for m in display[index + 1 :] for r in m.tool_results]
        if any(r.name == result.name and r.output == result.output for r in later):
            continue  # superseded by an identical newer output
        # Unpruned outputs at or after this one hold at least the protected amount.
        newer = sum(
            COUNT(r.output)
            for r in later
            if r.compacted_at is None and r.name not in config.protected_tools
        )
        assert newer >= protect
    # Nothing but `compacted_at` changed: no output is ever deleted.
    for before, after in zip(display, pruned, strict=True):
        for a, b in zip(before.tool_results, after.tool_results, strict=True):
            assert a.output == b.output and a.call_id == b.call_id


# --- the plan, restated ---------------------------------------------------------------


def expected_plan(
    display: list[Message],
    start: int,
    settings: CompactionSettings,
    input_budget: int | None,
) -> PrunePlan:
    """`plan_prune` by its docstring: newest first, the last two user turns and the newest
    `protect` tokens kept (the output crossing the line whole), superseded copies and
    outputs larger than the placeholder taken."""
    if not settings.prune:
        return PrunePlan(targets=(), reclaimable_tokens=0)
    if input_budget is None:
        protect, minimum = settings.prune_protect_tokens, settings.prune_minimum_tokens
    else:
        protect = min(settings.prune_protect_tokens, int(input_budget * 0.25))
        minimum = min(settings.prune_minimum_tokens, int(input_budget * 0.10))
    placeholder = COUNT(PRUNED_PLACEHOLDER)
    newest = 0
    newer: set[tuple[str, str]] = set()
    chosen: dict[int, list[str]] = {}
    reclaimable = 0
    for index in range(len(display) - 1, start - 1, -1):
        message = display[index]
        if message.role != "tool":
            continue
        recent = sum(m.role == "user" for m in display[index + 1 :]) < 2
        for result in reversed(message.tool_results):
            if result.compacted_at is not None or result.name in settings.protected_tools:
                continue
            superseded = (result.name, result.output) in newer
            newer.add((result.name, result.output))
            tokens = COUNT(result.output)
            protected = recent or (not superseded and newest < protect)
            if recent or not superseded:
                newest += tokens
            if not protected and tokens > placeholder:
                chosen.setdefault(index, []).insert(0, result.call_id)
                reclaimable += tokens - placeholder
    if reclaimable < max(minimum, 1):
        return PrunePlan(targets=(), reclaimable_tokens=0)
    targets = tuple(PruneTarget(index=i, call_ids=tuple(ids)) for i, ids in sorted(chosen.items()))
    return PrunePlan(targets=targets, reclaimable_tokens=reclaimable)


@st.composite
def prune_settings(draw: st.DrawFn) -> CompactionSettings:
    return CompactionSettings(
        prune=draw(st.integers(0, 9)) > 0,
        prune_protect_tokens=draw(st.sampled_from([0, 40, 300, 1_500, 40_000])),
        prune_minimum_tokens=draw(st.sampled_from([0, 1, 60, 300, 20_000])),
        protected_tools=draw(st.sampled_from([("getContextStats",), ("bash", "grep"), ()])),
    )


@hyp_settings(max_examples=300, deadline=None)
@given(
    display=st.one_of(conversations(max_output_chars=2_000), message_soups(max_size=16)),
    settings=prune_settings(),
    input_budget=st.none() | st.sampled_from([400, 3_000, 20_000, 10**6]),
    start=st.integers(0, 6),
)
def test_plan_prune_follows_its_rules(
    display: list[Message], settings: CompactionSettings, input_budget: int | None, start: int
) -> None:
    start = min(start, len(display))
    state = state_at(start) if start else None
    assert plan_prune(display, state, COUNT, settings, input_budget) == expected_plan(
        display, start, settings, input_budget
    )


def test_one_tool_message_mixing_protected_pruned_and_prunable_results() -> None:
    big = "z" * 4_000  # 1,000 tokens
    display = [
        user("first"),
        assistant(
            "",
            ToolCallPart(id="a", name="read_file"),
            ToolCallPart(id="b", name="getContextStats"),
            ToolCallPart(id="c", name="read_file"),
            ToolCallPart(id="d", name="grep"),
        ),
        tool_results(
            ToolResultPart(call_id="a", name="read_file", output="a" + big),
            ToolResultPart(call_id="b", name="getContextStats", output="b" + big),
            ToolResultPart(call_id="c", name="read_file", output="c" + big, compacted_at=NOW),
            ToolResultPart(call_id="d", name="grep", output="d" + big),
        ),
        user("second"),
        user("third"),
    ]
    config = CompactionSettings(prune_protect_tokens=0, prune_minimum_tokens=1)
    plan = plan_prune(display, None, COUNT, config, None)
    # The protected tool and the already pruned result stay out; the others go, in order.
    assert plan.targets == (PruneTarget(index=2, call_ids=("a", "d")),)
    saving = 2 * (COUNT("a" + big) - COUNT(PRUNED_PLACEHOLDER))
    assert plan.reclaimable_tokens == saving
    # With one token protected, `d` (the newest) crosses the line and is kept whole.
    config = config.model_copy(update={"prune_protect_tokens": 1})
    assert plan_prune(display, None, COUNT, config, None).targets == (
        PruneTarget(index=2, call_ids=("a",)),
    )


def test_minimum_and_protection_scale_with_the_budget() -> None:
    config = CompactionSettings(prune_protect_tokens=40_000, prune_minimum_tokens=20_000)
    assert protect_tokens(config, None) == 40_000 and minimum_tokens(config, None) == 20_000
    assert protect_tokens(config, 100_000) == 25_000 and minimum_tokens(config, 100_000) == 10_000
    assert protect_tokens(config, 1_000_000) == 40_000
    assert minimum_tokens(config, 1_000_000) == 20_000
    # Truncated, not rounded.
    assert protect_tokens(config, 1_003) == 250 and minimum_tokens(config, 1_009) == 100


def test_every_output_of_the_protected_turns_counts_toward_protection() -> None:
    def outputs(call_ids: str, size: int) -> list[Message]:
        calls = [ToolCallPart(id=c, name="read_file") for c in call_ids]
        results = [ToolResultPart(call_id=c, name="read_file", output=c * size) for c in call_ids]
        return [assistant("", *calls), tool_results(*results)]

    display = [
        user("old"),
        *outputs("o", 2_400),  # 600 tokens, outside the last two user turns
        user("recent"),
        *outputs("ab", 2_400),  # two outputs of 600 tokens in the protected turns
        user("now"),
    ]
    config = CompactionSettings(prune_protect_tokens=1_000, prune_minimum_tokens=1)
    # Both recent outputs (1,200 tokens) fill the protection: the old one is pruned.
    plan = plan_prune(display, None, COUNT, config, None)
    assert plan.targets == (PruneTarget(index=2, call_ids=("o",)),)


def test_a_tool_message_first_in_the_window_is_a_candidate() -> None:
    display = [
        tool_results(ToolResultPart(call_id="x", name="bash", output="x" * 4_000)),
        user("one"),
        user("two"),
    ]
    config = CompactionSettings(prune_protect_tokens=0, prune_minimum_tokens=1)
    assert plan_prune(display, None, COUNT, config, None).targets == (
        PruneTarget(index=0, call_ids=("x",)),
    )


def test_the_minimum_saving_is_inclusive_and_a_zero_saving_is_no_target() -> None:
    placeholder = COUNT(PRUNED_PLACEHOLDER)
    same_size = "p" * (placeholder * 4)  # exactly as many tokens as the placeholder
    display = [
        assistant("", ToolCallPart(id="s", name="bash"), ToolCallPart(id="t", name="bash")),
        tool_results(
            ToolResultPart(call_id="s", name="bash", output=same_size),
            ToolResultPart(call_id="t", name="bash", output="t" * (placeholder * 4 + 4)),
        ),
        user("one"),
        user("two"),
    ]
    assert COUNT(same_size) == placeholder
    # `t` saves exactly one token; `s` would save none and is left alone.
    config = CompactionSettings(prune_protect_tokens=0, prune_minimum_tokens=1)
    plan = plan_prune(display, None, COUNT, config, None)
    assert plan == PrunePlan(targets=(PruneTarget(index=1, call_ids=("t",)),), reclaimable_tokens=1)
    # A minimum of 0 still needs a saving of one token.
    assert (
        plan_prune(
            display, None, COUNT, config.model_copy(update={"prune_minimum_tokens": 0}), None
        )
        == plan
    )
    # The minimum is inclusive: a saving of exactly 1 meets a minimum of 1, not of 2.
    assert plan_prune(
        display, None, COUNT, config.model_copy(update={"prune_minimum_tokens": 2}), None
    ).empty
