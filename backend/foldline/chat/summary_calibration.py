"""Calibration from the summarizer's calls, not only from chat turns.

A conversation whose first model call is a summary (an imported conversation folded
before its first turn, a background fold after a model switch) would otherwise be
counted with the unsampled ratio until a chat turn reports usage: `UNSAMPLED_RATIO`
errs high, so such a view kept only about three quarters of the words it could. A
summary request is as good a sample as a chat request when the summarizer is the
conversation's own model: the same provider, tokenizer and wire (its tools counted when it
is asked after the conversation's view). It is a
whole-request sample (a summary call has no anchor), taken out of images and page
images like the chat's (`media_tokens`), and written through the conversation's
ordered `StoreWriter`, never on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from foldline.chat.store_writer import StoreWriter
from foldline.chat.usage import Billing
from foldline.core.calibration import DEFAULT_ALPHA, update_calibration
from foldline.core.messages import Message, ToolSpec
from foldline.core.tokens import ScaledCounter, TokenCounter
from foldline.core.tokens.counter import media_tokens
from foldline.providers.base import ModelRequest, Usage
from foldline.store import Store

SummaryCallObserver = Callable[[ModelRequest, Usage], None]
"""Told each summarizer call's request and the usage its provider reported."""


def calibrate_from_call(
    store: Store,
    billing: Billing,
    counter: TokenCounter,
    system: str,
    messages: Sequence[Message],
    usage: Usage,
    tools: Sequence[ToolSpec] = (),
) -> None:
    """Fold one summarizer call's reported input into the model's calibration. Exact
    counters learn nothing; the sample compares the reported input with the base
    (unscaled) estimate of the same request, formula-billed media out of both."""
    if not isinstance(counter, ScaledCounter) or usage.total_input <= 0:
        return
    base = counter.base
    media = sum(media_tokens(base, m) for m in messages)
    estimate = base.count_request(system, list(messages), list(tools)) - media
    actual = usage.total_input - media
    current = store.get_calibration(billing.provider, billing.model)
    # Early samples are averaged, later ones enter the moving average, as for turns.
    alpha = max(DEFAULT_ALPHA, 1 / (current.samples + 1))
    updated = update_calibration(current, actual=actual, estimate=estimate, alpha=alpha)
    store.set_calibration(billing.provider, billing.model, updated)


def summary_calibrator(
    store: Store,
    writes: StoreWriter,
    summarizer: Billing,
    conversation_model: Billing,
    counter: TokenCounter,
) -> SummaryCallObserver | None:
    """What to do with each summarizer call of a conversation: a calibration sample when
    the summarizer is the conversation's own model (its counter counts that model's
    requests); None for another `[compaction] model`, whose tokenizer `counter` does
    not stand for."""
    same = (summarizer.provider, summarizer.model) == (
        conversation_model.provider,
        conversation_model.model,
    )
    if not same or not isinstance(counter, ScaledCounter):
        return None

    def observe(request: ModelRequest, usage: Usage) -> None:
        writes.submit(
            calibrate_from_call,
            store,
            summarizer,
            counter,
            request.system,
            request.messages,
            usage,
            request.tools,
        )

    return observe
