"""One turn: the person's message, then model calls and tool batches until the model stops.

The loop persists before it acts (the user message first, the assistant message as
`streaming` before the first delta), gates before every call and after every tool batch,
and leaves every message in a final state (`complete`, `interrupted` or `error`) however
the turn ends.

The store and the tokenizer are synchronous, and the event loop is shared with every
other request and stream, so nothing of theirs runs on it: the loop's reads (the
context, counted) run in worker threads (`asyncio.to_thread`; the store keeps one
connection per thread), its writes in the chat service's `StoreWriter`, one thread that
keeps them in order. A context is loaded once per model call: the gate's load is reused
by the call when the gate changed nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from foldline.api.events import (
    AssistantDelta,
    ErrorEvent,
    MessageEvent,
    ToolCallEventOut,
    ToolResultEventOut,
    UsageEvent,
)
from foldline.chat.answer import (
    StreamedAnswer,
    answer_usage,
    call_usage,
    continuable,
    cut_off_usage,
)
from foldline.chat.context import ContextLoader, ConversationContext, offered_tools_for
from foldline.chat.events import ChatEvent
from foldline.chat.fold_gate import ConversationFolds
from foldline.chat.folding import FoldMaker, manual_fold_settings
from foldline.chat.recall_tools import context_recall_scope
from foldline.chat.store_writer import StoreWriter
from foldline.chat.titles import DEFAULT_TITLE, BackgroundTitles, first_message_title
from foldline.chat.tool_registry import BatchRun, ToolBatch, ToolRegistry, Truncation
from foldline.chat.usage import Billing, model_call
from foldline.config import AppConfig
from foldline.core.budget import Budget
from foldline.core.calibration import update_calibration
from foldline.core.json_values import storable_tool_call, without_lone_surrogates
from foldline.core.messages import (
    AttachmentPart,
    Message,
    Part,
    ToolCallPart,
    ToolResultPart,
)
from foldline.core.policy import RequestKind
from foldline.core.view import INTERRUPTED_RESULT, continuation_view
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
from foldline.providers.registry import resolve_model
from foldline.store import MessageRecord, MessageStatus, Store

log = logging.getLogger(__name__)

MAX_MODEL_CALLS_PER_TURN = 25
"""A runaway tool loop stops here; the person can send "continue"."""
MAX_RETRIES = 3
"""Retries of one call on rate limits, overload and unavailability."""
MAX_RETRY_DELAY = 30.0
CALIBRATION_ALPHA = 0.2
MIN_MARGINAL_SAMPLE = 50
"""A marginal calibration sample over fewer estimated tokens is mostly rounding noise."""
FLUSH_INTERVAL = 0.25
"""Seconds between writes of a streaming answer: a crash loses at most this much text."""


def _file_names(message: Message) -> str:
    """A message of files only is titled by their names."""
    return ", ".join(p.name for p in message.parts if isinstance(p, AttachmentPart))


class TurnRunner:
    """Runs turns and manual folds for one conversation, yielding events."""

    def __init__(
        self,
        *,
        store: Store,
        writes: StoreWriter,
        loader: ContextLoader,
        config: AppConfig,
        conversation_id: str,
        provider: Provider,
        summarizer: tuple[Provider, str],
        folds: ConversationFolds,
        titles: BackgroundTitles,
        tools: Callable[[], ToolRegistry],
        prepare_tools: Callable[[], Awaitable[list[ChatEvent]]] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.store = store
        self.writes = writes
        self.loader = loader
        self.config = config
        self.conversation_id = conversation_id
        self.provider = provider
        self.tools = tools
        self.prepare_tools = prepare_tools
        self.sleep = sleep
        self.folds = folds
        self.titles = titles
        self.summarizer = summarizer
        summary_model = resolve_model(config, summarizer[1], listing=loader.listing)
        self.summary_billing = Billing.of(summary_model)
        self.maker = FoldMaker(
            store,
            writes,
            self.load,
            summarizer[0],
            summarizer[1],
            loader.drop_anchor,
            self.summary_billing,
            summarizer_limits=Budget(
                context_window=summary_model.context_window,
                max_output_tokens=summary_model.output_reserve,
                input_limit=summary_model.input_limit,
            ),
        )
        self.fresh: ConversationContext | None = None
        """A context loaded since the last change to the view, for the next model call."""

    def load(self) -> ConversationContext:
        return self.loader.load(self.config, self.conversation_id, wire=self.provider.wire)

    async def _load(self) -> ConversationContext:
        return await asyncio.to_thread(self.load)

    async def _message_event(self, record: MessageRecord, ctx: ConversationContext) -> MessageEvent:
        """The message as an event, with its siblings (an edit's or a regenerated answer's
        versions, for the switcher), read in a worker thread."""
        by_message = await asyncio.to_thread(
            self.store.sibling_ids, self.conversation_id, [record.id]
        )
        return MessageEvent.of(record, ctx.start_index, by_message.get(record.id))

    async def _gate(
        self,
        turn: int,
        ctx: ConversationContext | None = None,
        *,
        mid_tool_loop: bool,
        request: RequestKind = "turn",
        instructions: str | None = None,
    ) -> AsyncIterator[ChatEvent]:
        """Pass the conversation's fold gate with `ctx` (loaded when not given);
        afterwards `self.fresh` is the context still valid for the next call, or None
        when the gate changed the view."""
        ctx = ctx or await self._load()
        changed = False
        async for event in self.folds.gate(
            self.maker,
            ctx,
            turn=turn,
            mid_tool_loop=mid_tool_loop,
            request=request,
            instructions=instructions,
        ):
            changed = True
            yield event
        self.fresh = None if changed else ctx

    # --- a manual fold --------------------------------------------------------------

    async def compact(
        self, instructions: str | None, keep_recent_tokens: int | None = None
    ) -> AsyncIterator[ChatEvent]:
        ctx = await self._load()
        ctx.settings = manual_fold_settings(ctx.settings, keep_recent_tokens)
        turn = ctx.history_length
        async for event in self.folds.fold_inline(
            self.maker,
            ctx,
            trigger="manual",
            reason="Folded on request.",
            emergency=False,
            instructions=instructions,
            turn=turn,
        ):
            yield event
        yield ChatEvent("context.stats", (await self._load()).stats())
        yield ChatEvent("done")

    # --- a turn ---------------------------------------------------------------------

    async def turn(self, message: Message) -> AsyncIterator[ChatEvent]:
        """A turn answering the person's `message` (its text and files, checked)."""
        record = await self.writes.run(self.store.append_message, self.conversation_id, message)
        title = first_message_title(message.text or _file_names(message))
        if record.seq == 0 and title:  # an untitled conversation is named by its first message
            await self.writes.run(
                self.store.replace_title, self.conversation_id, DEFAULT_TITLE, title
            )
        ctx = await self._load()
        yield ChatEvent("message.created", await self._message_event(record, ctx))
        async for event in self._loop(record.seq, ctx):
            yield event

    async def edit(self, parent_id: str | None, message: Message) -> AsyncIterator[ChatEvent]:
        """A turn on a new branch: `message` follows `parent_id` (a message of the active
        path; None = a new first message) as a sibling of the message it replaces."""
        # The anchor counted the old path's messages; this path differs inside the view.
        self.loader.drop_anchor(self.conversation_id)
        record = await self.writes.run(self.store.branch, self.conversation_id, parent_id, message)
        assert record is not None
        ctx = await self._load()
        yield ChatEvent("message.created", await self._message_event(record, ctx))
        async for event in self._loop(record.seq, ctx):
            yield event

    async def regenerate(self, parent_id: str) -> AsyncIterator[ChatEvent]:
        """A new answer after `parent_id`, a sibling of the answer it replaces."""
        self.loader.drop_anchor(self.conversation_id)
        await self.writes.run(self.store.branch, self.conversation_id, parent_id)
        ctx = await self._load()
        async for event in self._loop(ctx.history_length - 1, ctx):
            yield event

    async def retry(self) -> AsyncIterator[ChatEvent]:
        """Ask the model again after a failed or stopped answer, without a new message.

        A cut-off answer with text (and no tool calls) is continued in place: the model
        is asked to go on, and its text is appended to the same message, which ends
        `complete` and marked `continued`. An empty failed answer stays in the history
        (nothing is lost), left out of the model's view by pair repair, and a new answer
        follows it. Tool calls a stopped answer made get an interrupted result first, so
        no call is ever left without one.
        """
        ctx = await self._load()
        last = ctx.records[-1] if ctx.records else None
        if last is not None and continuable(last):
            async for event in self._loop(ctx.history_length, ctx, continuing=last):
                yield event
            return
        if last is not None and last.message.role == "assistant" and last.message.tool_calls:
            await self._close_calls(last.message.tool_calls, ())
            ctx = await self._load()
        async for event in self._loop(ctx.history_length, ctx):
            yield event

    async def _close_calls(self, calls: Sequence[ToolCallPart], done: Sequence[Part]) -> None:
        """Store the results of a stopped batch: those that finished, and an interrupted
        error result for every other call. In the writer, and waited for even while the
        turn is being cancelled (the write is shielded: it lands whatever happens)."""
        answered = {part.call_id for part in done if isinstance(part, ToolResultPart)}
        missing = [
            ToolResultPart(call_id=c.id, name=c.name, output=INTERRUPTED_RESULT, is_error=True)
            for c in calls
            if c.id not in answered
        ]
        closed = self.writes.submit(
            self.store.append_message,
            self.conversation_id,
            Message(role="tool", parts=(*done, *missing)),
            status="interrupted",
        )
        await self.writes.wait(closed)

    async def _loop(
        self,
        turn: int,
        ctx: ConversationContext,
        continuing: MessageRecord | None = None,
    ) -> AsyncIterator[ChatEvent]:
        if self.prepare_tools is not None:  # tool servers start when first needed
            for event in await self.prepare_tools():
                yield event
            # A server came up: other tools, other counts.
            folded = ctx.state is not None
            if offered_tools_for(self.loader.tools(), folded, ctx.budget, ctx.counter) != ctx.tools:
                ctx = await self._load()
        async for event in self._gate(turn, ctx, mid_tool_loop=False):
            yield event
        answer = StreamedAnswer()
        for _call in range(MAX_MODEL_CALLS_PER_TURN):
            answer = StreamedAnswer()
            async for event in self._call_model(answer, turn, continuing):
                yield event
            continuing = None
            if answer.stop is None or not answer.calls:
                break
            run: BatchRun | None = None
            try:
                # One load serves the whole batch: its settings, `getContextStats` and the
                # batch's message event (nothing changes the view until it is stored).
                tool_ctx = await self._load()
                run = self._tool_batch(answer.calls, tool_ctx)
                async for event in run.events():
                    yield event
            except asyncio.CancelledError:
                # Stopped while the tools ran: no call may stay without its result.
                await self._close_calls(answer.calls, run.done if run is not None else ())
                raise
            assert run.batch is not None
            async for event in self._store_batch(run.batch, tool_ctx):
                yield event
            compact = run.batch.compact
            async for event in self._gate(
                turn,
                mid_tool_loop=True,
                request="tool" if compact is not None else "turn",
                instructions=compact.instructions if compact else None,
            ):
                yield event
        ctx = await self._load()
        if answer.stop is not None:  # the turn ended well: prepare the next fold
            await self.folds.after_turn(self.maker, ctx, turn)
            if ctx.settings.auto_title:
                provider, model = self.summarizer
                self.titles.after_turn(
                    self.conversation_id,
                    provider,
                    model,
                    self.summary_billing,
                    turn,
                    ctx.settings.reasoning_effort,
                )
            # `after_turn` changes no message, only the background fold's status and (when
            # it drops a stale summary) the bill: those are refreshed, not the whole view.
            ctx.background_fold = self.loader.fold_status(self.conversation_id)
            ctx.usage = await asyncio.to_thread(self.loader.usage, self.conversation_id, ctx.model)
        yield ChatEvent("context.stats", ctx.stats())
        yield ChatEvent("done")

    async def _call_model(
        self, answer: StreamedAnswer, turn: int, continuing: MessageRecord | None = None
    ) -> AsyncIterator[ChatEvent]:
        """One model call with retries; leaves `answer.stop` None when the call failed.
        With `continuing` (still the last message of the view), the call extends that
        cut-off answer in place instead of writing a new one."""
        ctx, self.fresh = self.fresh or await self._load(), None
        yield ChatEvent("context.stats", ctx.stats())
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
            yield ChatEvent("message.created", await self._message_event(record, ctx))
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
                )
                try:
                    async for event in self._stream(request, answer, record):
                        yield event
                except ProviderError as error:
                    if answer.empty and error.code == "context_overflow" and not overflow_retried:
                        overflow_retried = True
                        async for event in self._gate(turn, mid_tool_loop=True, request="overflow"):
                            yield event
                        ctx, self.fresh = self.fresh or await self._load(), None
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
                    yield ChatEvent(
                        "error",
                        ErrorEvent(
                            code=error.code, message=error.message, retryable=error.retryable
                        ),
                    )
                    yield ChatEvent("message.completed", await self._message_event(final, ctx))
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
        yield ChatEvent("message.completed", await self._message_event(final, ctx))

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
                yield ChatEvent(
                    "assistant.delta", AssistantDelta(message_id=record.id, kind="text", text=text)
                )
            elif isinstance(event, ReasoningDelta):
                text = without_lone_surrogates(event.text)
                answer.add_reasoning(replace(event, text=text), time.monotonic())
                if text:
                    yield ChatEvent(
                        "assistant.delta",
                        AssistantDelta(message_id=record.id, kind="reasoning", text=text),
                    )
            elif isinstance(event, ToolCallEvent):
                answer.end_reasoning(time.monotonic())
                call = storable_tool_call(event.id, event.name, event.input)
                answer.calls.append(call)
                yield ChatEvent("tool.call", ToolCallEventOut.of(record.id, call))
            elif isinstance(event, Usage):
                answer.usage = event
                yield ChatEvent(
                    "usage", UsageEvent(message_id=record.id, **dict(call_usage(event)))
                )
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

    def _tool_batch(self, calls: list[ToolCallPart], ctx: ConversationContext) -> BatchRun:
        return BatchRun(
            registry=self.tools(),
            calls=calls,
            conversation_id=self.conversation_id,
            stats=ctx.stats,
            truncation=Truncation(ctx.settings.tool_result_token_cap, ctx.counter.count_text),
            recall=context_recall_scope(ctx),
        )

    async def _store_batch(
        self, batch: ToolBatch, ctx: ConversationContext
    ) -> AsyncIterator[ChatEvent]:
        record = await self.writes.run(
            self.store.append_message,
            self.conversation_id,
            Message(role="tool", parts=batch.results),
        )
        for part in batch.results:
            if isinstance(part, ToolResultPart):
                yield ChatEvent("tool.result", ToolResultEventOut.of(record.id, part))
        yield ChatEvent("message.created", await self._message_event(record, ctx))
