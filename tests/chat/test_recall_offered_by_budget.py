"""The recall tools are offered only where their specs fit a small share of the budget.

On a 2,048 window the three specs cost about a third of the input budget (calibrated,
as a local model starts at 1.25), so a first fold freed nothing; there at most
`searchHistory` is offered. On a 16k window all three fit.
"""

from __future__ import annotations

from foldline.chat.context import offered_tools_for
from foldline.chat.recall_tools import recall_specs
from foldline.core.budget import Budget
from foldline.core.messages import ToolSpec
from foldline.core.recall import RECALL_TOOL_NAMES, offered_tools
from foldline.core.tokens import ScaledCounter
from foldline.tokenizers import counter_for

OTHER = ToolSpec(name="getContextStats", description="Context statistics.", input_schema={})
SPECS = [OTHER, *recall_specs()]
COUNTER = ScaledCounter(counter_for("smollm2-135m", "openai", exact_allowed=False), 1.25)


def names(window: int, folded: bool = True) -> list[str]:
    budget = Budget(context_window=window, max_output_tokens=512)
    return [s.name for s in offered_tools_for(SPECS, folded, budget, COUNTER)]


def test_a_2k_window_gets_no_more_than_search_history() -> None:
    offered = names(2_048)
    assert "getContextStats" in offered
    assert set(offered) & RECALL_TOOL_NAMES <= {"searchHistory"}
    assert "readHistory" not in offered and "searchConversations" not in offered


def test_a_16k_window_gets_all_three() -> None:
    assert names(16_384) == [s.name for s in SPECS]


def test_nothing_recall_before_the_first_fold() -> None:
    assert names(16_384, folded=False) == ["getContextStats"]


def test_the_choice_follows_the_share_of_the_budget() -> None:
    def cost(specs: object) -> int:
        return 100 * len(specs)  # type: ignore[arg-type]

    def chosen(budget: int) -> list[str]:
        offered = offered_tools(SPECS, True, input_budget=budget, spec_tokens=cost)
        return [s.name for s in offered]

    assert chosen(6_000) == [s.name for s in SPECS]  # 300 <= 5% of 6,000
    assert chosen(2_000) == ["getContextStats", "searchHistory"]  # 100 <= 100
    assert chosen(1_900) == ["getContextStats"]
    assert offered_tools(SPECS, True) == SPECS  # no budget: all of them
