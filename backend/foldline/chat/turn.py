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
import logging
from collections.abc import AsyncIterator, Sequence

from foldline.api.events import (
    MessageEvent,
    ToolResultEventOut,
)
from foldline.chat import events as ev
from foldline.chat.answer import (
    StreamedAnswer,
    continuable,
)
from foldline.chat.context import ConversationContext, offered_tools_for
from foldline.chat.events import ChatEvent
from foldline.chat.folding import FoldMaker, manual_fold_settings
from foldline.chat.model_call import ModelCall
from foldline.chat.recall_tools import context_recall_scope
from foldline.chat.titles import DEFAULT_TITLE, first_message_title
from foldline.chat.tool_registry import BatchRun, ToolBatch, Truncation
from foldline.chat.turn_setup import ConversationSetup, TurnServices, message_event
from foldline.chat.usage import Billing
from foldline.core.budget import Budget
from foldline.core.gate import RequestKind
from foldline.core.messages import (
    AttachmentPart,
    Message,
    Part,
    ToolCallPart,
    ToolResultPart,
)
from foldline.core.view import INTERRUPTED_RESULT
from foldline.providers.registry import resolve_model
from foldline.store import MessageRecord

log = logging.getLogger(__name__)

MAX_MODEL_CALLS_PER_TURN = 25
"""A runaway tool loop stops here; the person can send "continue"."""


def _file_names(message: Message) -> str:
    """A message of files only is titled by their names."""
    return ", ".join(p.name for p in message.parts if isinstance(p, AttachmentPart))


class TurnRunner:
    """Runs turns and manual folds for one conversation, yielding events."""

    def __init__(self, services: TurnServices, conversation: ConversationSetup) -> None:
        self.store = services.store
        self.writes = services.writes
        self.loader = services.loader
        self.tools = services.tools
        self.prepare_tools = services.prepare_tools
        self.titles = services.titles
        self.config = conversation.config
        self.conversation_id = conversation.conversation_id
        self.provider = conversation.provider
        self.folds = conversation.folds
        self.summarizer = (conversation.summarizer, conversation.summary_model)
        summary_model = resolve_model(
            self.config, conversation.summary_model, listing=self.loader.listing
        )
        self.summary_billing = Billing.of(summary_model)
        self.maker = FoldMaker(
            self.store,
            self.writes,
            self.load,
            conversation.summarizer,
            conversation.summary_model,
            self.loader.drop_anchor,
            self.summary_billing,
            summarizer_limits=Budget(
                context_window=summary_model.context_window,
                max_output_tokens=summary_model.output_reserve,
                input_limit=summary_model.input_limit,
            ),
        )
        self.calls = ModelCall(services, self.conversation_id, self.provider)
        """The turn's model calls, each with its retries."""
        self.fresh: ConversationContext | None = None
        """A context loaded since the last change to the view, for the next model call."""

    def load(self) -> ConversationContext:
        return self.loader.load(self.config, self.conversation_id, wire=self.provider.wire)

    async def _load(self) -> ConversationContext:
        return await asyncio.to_thread(self.load)

    async def _message_event(self, record: MessageRecord, ctx: ConversationContext) -> MessageEvent:
        return await message_event(self.store, self.conversation_id, record, ctx)

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
        if await self.folds.settled():
            ctx = None  # a fold landed in the pause meanwhile: the view changed
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
        yield ev.ContextStats((await self._load()).stats())
        yield ev.Done()

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
        yield ev.MessageCreated(await self._message_event(record, ctx))
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
        yield ev.MessageCreated(await self._message_event(record, ctx))
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
            ctx.background_fold = self.loader.fold_status(self.conversation_id, None)
            ctx.usage = await asyncio.to_thread(self.loader.usage, self.conversation_id, ctx.model)
        yield ev.ContextStats(ctx.stats())
        yield ev.Done()

    async def _call_model(
        self, answer: StreamedAnswer, turn: int, continuing: MessageRecord | None = None
    ) -> AsyncIterator[ChatEvent]:
        """One model call with retries (`ModelCall`); with `continuing`, it extends that
        cut-off answer in place."""

        def overflow() -> AsyncIterator[ChatEvent]:
            return self._gate(turn, mid_tool_loop=True, request="overflow")

        async for event in self.calls.call(
            answer, turn, continuing, context=self._take_fresh, overflow=overflow
        ):
            yield event

    async def _take_fresh(self) -> ConversationContext:
        """The context for the next model call: the gate's when it changed nothing, else
        loaded now. Taken once: the call's own writes change the view."""
        ctx, self.fresh = self.fresh or await self._load(), None
        return ctx

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
                yield ev.ToolResult(ToolResultEventOut.of(record.id, part))
        yield ev.MessageCreated(await self._message_event(record, ctx))
