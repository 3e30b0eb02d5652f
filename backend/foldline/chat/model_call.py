"""One model call of a turn: the request, its stream into the answer, and its retries.

The call writes the answer as `streaming` before the first delta and flushes it every
`FLUSH_INTERVAL`; it retries rate limits, overload and unavailability (honouring
`retry-after`), folds once on a context overflow, and however it ends leaves the answer
in a final state (`complete`, `interrupted` or `error`), with its usage and its billed
call. Every store call runs in the service's `StoreWriter`, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from foldline.api.events import (
    AssistantDelta,
    ErrorEvent,
    MessageEvent,
    ToolCallEventOut,
    UsageEvent,
)
from foldline.chat import events as ev
from foldline.chat.answer import StreamedAnswer, answer_usage, call_usage, cut_off_usage
from foldline.chat.context import ConversationContext
from foldline.chat.events import ChatEvent
from foldline.chat.turn_setup import TurnServices, message_event
from foldline.chat.usage import Billing, model_call
from foldline.core.calibration import update_calibration
from foldline.core.json_values import storable_tool_call, without_lone_surrogates
from foldline.core.messages import Message
from foldline.core.view import continuation_view
from foldline.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ReasoningDelta,
    Stop,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from foldline.store import MessageRecord, MessageStatus

log = logging.getLogger(__name__)

MAX_RETRIES = 3
"""Retries of one call on rate limits, overload and unavailability."""
MAX_RETRY_DELAY = 30.0
CALIBRATION_ALPHA = 0.2
MIN_MARGINAL_SAMPLE = 50
"""A marginal calibration sample over fewer estimated tokens is mostly rounding noise."""
FLUSH_INTERVAL = 0.25
"""Seconds between writes of a streaming answer: a crash loses at most this much text."""


class ModelCall:
    """The model calls of one conversation's turn, each with its retries."""

    def __init__(self, services: TurnServices, conversation_id: str, provider: Provider) -> None:
        self.store = services.store
        self.writes = services.writes
        self.loader = services.loader
        self.sleep = services.sleep
        self.conversation_id = conversation_id
        self.provider = provider

    async def _message_event(self, record: MessageRecord, ctx: ConversationContext) -> MessageEvent:
        return await message_event(self.store, self.conversation_id, record, ctx)

    async def call(
        self,
        answer: StreamedAnswer,
        turn: int,
        continuing: MessageRecord | None,
        *,
        context: Callable[[], Awaitable[ConversationContext]],
        overflow: Callable[[], AsyncIterator[ChatEvent]],
    ) -> AsyncIterator[ChatEvent]:
        """One model call with retries; leaves `answer.stop` None when the call failed.
        With `continuing` (still the last message of the view), the call extends that
        cut-off answer in place instead of writing a new one.

        `context` gives the view to send (again after a fold); `overflow` passes the fold
        gate after the provider refused the request as too long (once a call)."""
        ctx = await context()
        yield ev.ContextStats(ctx.stats())
        messages = ctx.view
        if continuing is not None and ctx.records and ctx.records[-1].id == continuing.id:
            # Set before the write is queued: a Stop landing while it waits then keeps the
            # text the answer already had, not an empty message.
            answer.before = continuing.message.parts
            created = self.writes.submit(self.store.begin_continuation, continuing.id)
            messages = continuation_view(ctx.view)
        else:
            continuing = None
            created = self.writes.submit(
                self.store.append_message,
                self.conversation_id,
                Message(role="assistant"),
                status="streaming",
            )
        overflow_retried = False
        attempt = 0
        # A Stop can land anywhere below: while the row is written, in the stream, in a
        # retry's back-off, or in the fold after an overflow. Wherever it lands, the
        # answer so far is kept, marked.
        try:
            record = await self.writes.wait(created)
            # For a continuation this is the existing message (same id and index), which
            # the deltas then extend.
            yield ev.MessageCreated(await self._message_event(record, ctx))
            while True:
                request = ModelRequest(
                    model=ctx.model.model,
                    system=ctx.system,
                    messages=messages,
                    tools=ctx.tools,
                    max_output_tokens=ctx.answer_tokens,
                    temperature=ctx.temperature,
                    cache_key=self.conversation_id,
                    images=ctx.model.vision,
                    stable_prefix=1 if ctx.state else 0,
                    reasoning_effort=ctx.reasoning_effort,
                    thinking=ctx.model.thinking,
                )
                try:
                    async for event in self._stream(request, answer, record):
                        yield event
                except ProviderError as error:
                    if answer.empty and error.code == "context_overflow" and not overflow_retried:
                        overflow_retried = True
                        async for event in overflow():
                            yield event
                        ctx = await context()
                        messages = continuation_view(ctx.view) if continuing else ctx.view
                        continue
                    if answer.empty and error.retryable and attempt < MAX_RETRIES:
                        attempt += 1
                        await self.sleep(self._delay(error, attempt))
                        continue
                    final = await self.writes.run(
                        self._keep_cut_off,
                        ctx,
                        answer,
                        turn,
                        record,
                        status="error" if answer.empty and not answer.before else "interrupted",
                        error=error.message,
                    )
                    yield ev.Error(
                        ErrorEvent(
                            code=error.code, message=error.message, retryable=error.retryable
                        ),
                    )
                    yield ev.MessageCompleted(await self._message_event(final, ctx))
                    answer.stop = None
                    return
                break
        except (asyncio.CancelledError, Exception):
            # Stopped, or failed in a way no provider error describes: the answer so far
            # is kept, marked. Queued after the row's append and after every flush, so it
            # lands last; when the store itself failed, this write may fail too, and the
            # first failure is the one reported.
            interrupt = self.writes.submit(self._interrupt, ctx, answer, turn, created)
            with contextlib.suppress(Exception):
                await self.writes.wait(interrupt)
            raise
        final = await self._finish_answer(ctx, answer, turn, record, continuing)
        yield ev.MessageCompleted(await self._message_event(final, ctx))

    async def _finish_answer(
        self,
        ctx: ConversationContext,
        answer: StreamedAnswer,
        turn: int,
        record: MessageRecord,
        continuing: MessageRecord | None,
    ) -> MessageRecord:
        """Store a whole answer: its calibration sample, its call and the message
        `complete`; the stored message."""
        # The answer is whole: its final writes are all queued before the first wait, so a
        # Stop landing from here on (the answer just finished) still stores it complete.
        queued: list[Future[Any]] = []
        if continuing is None:
            queued.append(self.writes.submit(self._calibrate, ctx, answer.usage))
        else:
            # The request held the prompt to go on, and the next view holds this answer
            # grown in place (not a new message after the anchored ones): an anchor on
            # this call would miss the growth, and a sample would count the prompt.
            self.loader.drop_anchor(self.conversation_id)
        if answer.usage is not None:
            call = model_call(
                answer.usage, Billing.of(ctx.model), purpose="chat", turn=turn, message_id=record.id
            )
            queued.append(self.writes.submit(self.store.record_calls, self.conversation_id, [call]))
        completed = self.writes.submit(
            self.store.update_message,
            record.id,
            message=answer.message(),
            status="complete",
            usage=(
                answer_usage(answer.usage, record.usage, answer.reasoning_seconds, answer.speed())
                if answer.usage
                else None
            ),
        )
        final = await self.writes.wait(completed)
        for write in queued:
            write.result()  # done before `completed`; a failure (a full disk) ends the turn
        return final

    def _interrupt(
        self,
        ctx: ConversationContext,
        answer: StreamedAnswer,
        turn: int,
        created: Future[MessageRecord],
    ) -> None:
        """In the writer, after the append `created`: keep the answer so far, marked
        `interrupted` (nothing to keep when the append itself failed)."""
        if created.exception() is None:
            self._keep_cut_off(ctx, answer, turn, created.result(), status="interrupted")

    def _keep_cut_off(
        self,
        ctx: ConversationContext,
        answer: StreamedAnswer,
        turn: int,
        record: MessageRecord,
        *,
        status: MessageStatus,
        error: str | None = None,
    ) -> MessageRecord:
        """In the writer: store an answer cut off (Stop, a failed stream) as it stands,
        with its usage so far, and its call, which the provider bills all the same."""
        usage, call = None, None
        try:  # the answer is kept whatever its count does
            usage, call = cut_off_usage(
                answer,
                record,
                ctx.counter.count_text,
                Billing.of(ctx.model),
                turn=turn,
                view_tokens=ctx.tokens,
                last_call=lambda: self.store.last_chat_call(self.conversation_id),
            )
        except Exception:
            log.exception("the usage of an interrupted answer could not be counted")
        final = self.store.update_message(
            record.id, message=answer.message(), status=status, error=error, usage=usage
        )
        if call is not None:
            self.store.record_calls(self.conversation_id, [call])
        return final

    @staticmethod
    def _delay(error: ProviderError, attempt: int) -> float:
        if error.retry_after is not None:
            return min(max(error.retry_after, 0.0), MAX_RETRY_DELAY)
        return min(0.5 * 2 ** (attempt - 1), MAX_RETRY_DELAY)

    async def _stream(
        self, request: ModelRequest, answer: StreamedAnswer, record: MessageRecord
    ) -> AsyncIterator[ChatEvent]:
        last_flush = time.monotonic()
        answer.sent_at = last_flush
        flush: Future[MessageRecord] | None = None
        async for event in self.provider.stream(request):
            if isinstance(event, TextDelta | ReasoningDelta | ToolCallEvent):
                answer.arrived(time.monotonic())
            if isinstance(event, TextDelta):
                text = without_lone_surrogates(event.text)
                answer.text += text
                answer.end_reasoning(time.monotonic())
                yield ev.AssistantDelta(
                    AssistantDelta(message_id=record.id, kind="text", text=text)
                )
            elif isinstance(event, ReasoningDelta):
                text = without_lone_surrogates(event.text)
                answer.add_reasoning(replace(event, text=text), time.monotonic())
                if text:
                    yield ev.AssistantDelta(
                        AssistantDelta(message_id=record.id, kind="reasoning", text=text),
                    )
            elif isinstance(event, ToolCallEvent):
                answer.end_reasoning(time.monotonic())
                call = storable_tool_call(event.id, event.name, event.input)
                answer.calls.append(call)
                yield ev.ToolCall(ToolCallEventOut.of(record.id, call))
            elif isinstance(event, Usage):
                answer.usage = event
                yield ev.Usage(UsageEvent(message_id=record.id, **dict(call_usage(event))))
            elif isinstance(event, Stop):
                answer.stop = event
            if time.monotonic() - last_flush >= FLUSH_INTERVAL and (flush is None or flush.done()):
                # Not waited for: the writer keeps it ahead of the write that finishes the
                # message. One at a time, so a slow disk skips flushes instead of queueing
                # them; a failed one (a full disk) ends the turn like a failed write.
                if flush is not None:
                    flush.result()
                flush = self.writes.submit(
                    self.store.update_message,
                    record.id,
                    message=answer.message(),
                    status="streaming",
                )
                last_flush = time.monotonic()
        answer.end_reasoning(time.monotonic())
        if answer.stop is None:
            answer.stop = Stop(reason="other")

    def _calibrate(self, ctx: ConversationContext, usage: Usage | None) -> None:
        """Learn how far the estimate is from what the provider reported for ONE call.

        With a valid anchor the sample is marginal: the growth of the reported input since
        the anchored call against the estimate of the messages added since. That is the
        part the anchored count actually estimates, and it is free of fixed overheads
        (tool-use system prompts, framing) that a whole-request ratio would smear over the
        messages. Without an anchor (the first call, or just after a fold) the sample is
        the whole request. Early samples are averaged, later ones enter an EMA.
        """
        if usage is None or ctx.counter.exact or usage.total_input <= 0:
            return
        self.loader.set_anchor(ctx, usage.total_input)
        ratio = ctx.ratio
        # Images and PDF page images are billed by formula, not by the tokenizer the
        # ratio corrects: they are taken out of both sides.
        if ctx.anchor_tokens is not None and ctx.added_estimate >= MIN_MARGINAL_SAMPLE:
            actual = usage.total_input - ctx.anchor_tokens - ctx.added_media
            estimate = round((ctx.added_estimate - ctx.added_media) / ratio)
        else:
            actual = usage.total_input - ctx.media
            estimate = round((ctx.estimate - ctx.media) / ratio)
        provider = ctx.model.provider_name
        current = self.store.get_calibration(provider, ctx.model.model)
        alpha = max(CALIBRATION_ALPHA, 1 / (current.samples + 1))
        updated = update_calibration(current, actual=actual, estimate=estimate, alpha=alpha)
        self.store.set_calibration(provider, ctx.model.model, updated)
