"""Turning a call's reported usage into a stored `ModelCall` with its cost.

The cost is computed when the call finishes, at the model's prices of that moment, so
a later price change does not rewrite what a past turn cost. A model without a known
price (a local server, a model the catalog does not know) is stored in tokens only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from foldline.core.pricing import ModelPrices, call_cost
from foldline.providers.base import Usage
from foldline.providers.registry import ResolvedModel
from foldline.store.usage import CallPurpose, ModelCall


@dataclass(frozen=True)
class Billing:
    """Who served a call and at what prices."""

    provider: str
    model: str
    prices: ModelPrices | None

    @classmethod
    def of(cls, model: ResolvedModel) -> Billing:
        return cls(model.provider_name, model.model, model.prices)


def model_call(
    usage: Usage,
    billing: Billing,
    *,
    purpose: CallPurpose,
    turn: int,
    message_id: str | None = None,
    fold_version: int | None = None,
) -> ModelCall:
    cost = saved = None
    if billing.prices is not None:
        priced = call_cost(
            billing.prices,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_creation_tokens=usage.cache_creation_tokens,
        )
        cost, saved = priced.total, priced.saved
    return ModelCall(
        turn=turn,
        purpose=purpose,
        provider=billing.provider,
        model=billing.model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_creation_tokens=usage.cache_creation_tokens,
        cost=cost,
        saved=saved,
        message_id=message_id,
        fold_version=fold_version,
    )


def cut_off_call(
    billing: Billing,
    *,
    turn: int,
    message_id: str,
    input_tokens: int,
    output_tokens: int,
    last_call: ModelCall | None,
) -> ModelCall:
    """The call of an answer cut off before its provider reported usage (Stop, a broken
    stream), which the provider bills all the same: `input_tokens` is the view as counted,
    `output_tokens` what was written, counted. The input's cached share is the one the
    conversation's last chat call reported, at most: its prefix is likely still cached."""
    cached = 0
    if last_call is not None:
        cached = min(last_call.cache_read_tokens + last_call.cache_creation_tokens, input_tokens)
    usage = Usage(
        input_tokens=input_tokens - cached,
        output_tokens=output_tokens,
        cache_read_tokens=cached,
    )
    call = model_call(usage, billing, purpose="chat", turn=turn, message_id=message_id)
    return replace(call, estimated=True)


@dataclass
class SummaryUsage:
    """The usage of one fold's summarizer calls (chunks, merges and retries included),
    held until the fold is committed or dropped, then stored attributed to it."""

    billing: Billing
    usages: list[Usage] = field(default_factory=list)

    def add(self, usage: Usage) -> None:
        self.usages.append(usage)

    def calls(self, turn: int, fold_version: int | None) -> list[ModelCall]:
        return [
            model_call(u, self.billing, purpose="summary", turn=turn, fold_version=fold_version)
            for u in self.usages
        ]
