"""How much a model reasons before it answers: one setting, mapped to each provider's form.

The person picks an effort, `off`, `low`, `medium`, `high` or `max`, per model
(`[models."x"] reasoning_effort`) or per conversation (`settings.reasoning.effort`). Each
wire speaks it in the form the model takes:

- Anthropic, Claude 4.6 and later: adaptive thinking, `thinking: {"type": "adaptive"}`
  with `output_config: {"effort": ...}`; `max` only on the Opus-class models (and the
  newer Fable and Mythos ones), `high` on the others.
- Anthropic, older thinking models (Claude 3.7 to 4.5): `thinking: {"type": "enabled",
  "budget_tokens": N}`, N at least 1024 and below `max_tokens` (half of it at most, so an
  answer still fits); where `max_tokens` leaves no room for 1024 tokens, no thinking.
- OpenAI reasoning families (GPT-5, GPT-6, o-series): `reasoning.effort` on the Responses
  API, `reasoning_effort` on Chat Completions. `off` is `none` where the model takes it
  (GPT-5.1 and later, except GPT-6 Astra), else the model's lowest effort (`minimal` on
  GPT-5, `low` on the o-series and GPT-6 Astra): those models cannot stop reasoning. `max`
  is `max` on GPT-6, `xhigh` on GPT-5.2 and later, `high` on the others.

Models of no known reasoning family get nothing: a setting they cannot take is not sent.
Everything here is decided from the model's name, so it is pure and the fakes share it,
except for a Claude model of a name this catalog does not know yet: its
`[models."x"] thinking` says which of the two Anthropic forms it takes (`ThinkingForm`),
and the config refuses an effort for it without one (`config.parse_config`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

Effort = Literal["off", "low", "medium", "high", "max"]
EFFORTS: tuple[Effort, ...] = get_args(Effort)
DEFAULT_EFFORT: Effort = "medium"
"""What a model that reasons runs at unless the config or the conversation says otherwise."""

ReasoningStyle = Literal["none", "anthropic-adaptive", "anthropic-budget", "openai"]
ThinkingForm = Literal["adaptive", "budget"]
"""`[models."x"] thinking`: the Anthropic form of reasoning a model takes, for a name the
catalog does not know (adaptive: Claude 4.6 and later; budget: Claude 3.7 to 4.5)."""

ANTHROPIC_BUDGETS: dict[Effort, int] = {"low": 2048, "medium": 8192, "high": 16_384, "max": 32_000}
"""`budget_tokens` per effort on the Claude models that take a budget."""
ANTHROPIC_MIN_BUDGET = 1024
"""The smallest `budget_tokens` the API accepts."""

_CLAUDE_ADAPTIVE = re.compile(
    r"^claude-(?:(?:opus|sonnet|haiku)-4-[6-9]|(?:opus|sonnet|haiku)-[5-9]|fable|mythos)"
)
_CLAUDE_MAX = re.compile(r"^claude-(?:opus|fable|mythos)")
_CLAUDE_BUDGET = re.compile(
    r"^claude-(?:3-7-sonnet|(?:opus|sonnet|haiku)-4(?:-[0-5])?(?:$|-\d{8}|-latest))"
)
_OPENAI_REASONING = re.compile(r"^(?:gpt-5|gpt-6|o[1-9])")
_OPENAI_NOT_REASONING = re.compile(r"chat-latest|non-reasoning|^o1-mini|^o1-preview")
_OPENAI_NO_NONE = re.compile(r"^(?:gpt-5(?:-mini|-nano|-codex)?(?:$|-\d)|o[1-9]|gpt-6-astra)")
_OPENAI_MINIMAL_FLOOR = re.compile(r"^gpt-5(?:-mini|-nano)?(?:$|-\d)")
_OPENAI_GPT6 = re.compile(r"^gpt-6")
_OPENAI_XHIGH = re.compile(r"^gpt-5\.(?:[2-9]|\d\d)")
_OPENAI_CHAT_REFUSES_TOOLS = re.compile(r"^(?:gpt-5\.(?:[4-9]|\d\d)|gpt-6)")
_OPENAI_CHAT_DEFAULT_REASONS = re.compile(r"^(?:gpt-5\.(?:[6-9]|\d\d)|gpt-6)")


def _bare(model: str) -> str:
    name = model.strip().lower()
    return name.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class ReasoningSupport:
    """What one model takes: its style, and for OpenAI the efforts at the ends."""

    style: ReasoningStyle
    off: str | None = None
    """The OpenAI effort that `off` becomes (`none`, or the lowest the model takes)."""
    top: str | None = None
    """The OpenAI effort that `max` becomes; the Anthropic effort on adaptive models."""

    @property
    def reasons(self) -> bool:
        return self.style != "none"


def reasoning_support(model: str, thinking: ThinkingForm | None = None) -> ReasoningSupport:
    """How `model` reasons, from its name (a router prefix is ignored), or from the
    Anthropic form configured for it (`thinking`), which wins over the name."""
    name = _bare(model)
    if thinking == "adaptive":
        return ReasoningSupport(
            "anthropic-adaptive", top="max" if _CLAUDE_MAX.match(name) else "high"
        )
    if thinking == "budget":
        return ReasoningSupport("anthropic-budget")
    if _CLAUDE_ADAPTIVE.match(name):
        return ReasoningSupport(
            "anthropic-adaptive", top="max" if _CLAUDE_MAX.match(name) else "high"
        )
    if _CLAUDE_BUDGET.match(name):
        return ReasoningSupport("anthropic-budget")
    if _OPENAI_REASONING.match(name) and not _OPENAI_NOT_REASONING.search(name):
        if not _OPENAI_NO_NONE.match(name):
            off = "none"
        elif _OPENAI_MINIMAL_FLOOR.match(name):
            off = "minimal"
        else:
            off = "low"
        if _OPENAI_GPT6.match(name):
            top = "max"
        elif _OPENAI_XHIGH.match(name):
            top = "xhigh"
        else:
            top = "high"
        return ReasoningSupport("openai", off=off, top=top)
    return ReasoningSupport("none")


def default_effort(model: str) -> Effort:
    """The catalog's default: `medium` for a model that reasons, `off` for the others."""
    return DEFAULT_EFFORT if reasoning_support(model).reasons else "off"


def anthropic_thinking_fields(
    model: str, effort: Effort, max_tokens: int, thinking: ThinkingForm | None = None
) -> dict[str, object]:
    """The Messages API fields (`thinking`, `output_config`) for `effort`; {} for none.
    `thinking`: the form configured for the model, else it is told by its name."""
    support = reasoning_support(model, thinking)
    if effort == "off" or not support.reasons:
        return {}
    if support.style == "anthropic-adaptive":
        level = support.top if effort == "max" else effort
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}
    if support.style == "anthropic-budget":
        budget = min(ANTHROPIC_BUDGETS[effort], max_tokens // 2)
        if budget < ANTHROPIC_MIN_BUDGET:
            return {}
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    return {}


def openai_effort(model: str, effort: Effort) -> str | None:
    """The OpenAI `reasoning.effort` / `reasoning_effort` for `effort`; None when the model
    does not reason (the parameter is then not sent at all)."""
    support = reasoning_support(model)
    if support.style != "openai":
        return None
    if effort == "off":
        return support.off
    if effort == "max":
        return support.top
    return effort


def compatible_effort(effort: Effort) -> str | None:
    """`reasoning_effort` for an OpenAI-compatible server, whatever the model's name:
    vLLM, Ollama and llama.cpp pass it to the models that reason (gpt-oss, Qwen3,
    DeepSeek-R1), which no catalog of names can list. Off is not sent at all; `max`
    becomes `high`, the most those servers take."""
    if effort == "off":
        return None
    return "high" if effort == "max" else effort


def chat_refuses_tools_with_reasoning(model: str) -> bool:
    """True for the OpenAI families whose Chat Completions refuse function tools together
    with any reasoning effort but `none` (GPT-5.4 and later, GPT-6)."""
    return bool(_OPENAI_CHAT_REFUSES_TOOLS.match(_bare(model)))


def chat_reasons_by_default(model: str) -> bool:
    """True where Chat Completions reasons when no effort is sent (GPT-5.6, GPT-6), so a
    request with tools must say `none` explicitly."""
    return bool(_OPENAI_CHAT_DEFAULT_REASONS.match(_bare(model)))


def prefers_responses_api(model: str) -> bool:
    """OpenAI's own models that reason are reached through the Responses API by default:
    it takes tools together with reasoning, which Chat Completions refuses on the newer
    families, and it hands the reasoning back (encrypted) for the tool loop."""
    return reasoning_support(model).style == "openai"


def effort_from_settings(settings: object) -> Effort | None:
    """A conversation's `settings.reasoning.effort`, or None when it sets none."""
    if not isinstance(settings, dict):
        return None
    reasoning = settings.get("reasoning")
    if not isinstance(reasoning, dict):
        return None
    effort = reasoning.get("effort")
    return effort if effort in EFFORTS else None
