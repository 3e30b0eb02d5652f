"""ChatService: starts turns and folds as tasks of their own, one at a time per conversation.

A turn runs in its own asyncio task and writes everything to the store as it goes, so a
client that disconnects mid-turn loses nothing: the turn finishes and is persisted, and
the client sees the result on its next load. Events go to the turn's replay buffer, which
any number of readers follow from its beginning (the SSE response of whoever started the
turn, and pages that attach later: a reload, a second window); nobody has to read it.
The buffer lives as long as the turn: once it ends, the store holds everything it did.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

from foldline.api.events import Done, ErrorEvent
from foldline.chat import events as ev
from foldline.chat.context import ContextLoader
from foldline.chat.conversation_reads import ConversationReads
from foldline.chat.events import ChatEvent
from foldline.chat.file_reading import read_while_stoppable, stopped_turn
from foldline.chat.fold_gates import FoldGates
from foldline.chat.handoff import HandoffRequest, HandoffStopped, hand_off
from foldline.chat.local_servers import LocalServers
from foldline.chat.person_message import (
    ChatUnavailable,
    TurnInProgress,
    WrongMessage,
    person_message,
)
from foldline.chat.projects import (
    conversation_config,
    conversation_project,
    model_name,
)
from foldline.chat.provider_pool import ProviderFactory, ProviderPool
from foldline.chat.recall_tools import RecallTools
from foldline.chat.store_writer import StoreWriter
from foldline.chat.titles import BackgroundTitles
from foldline.chat.tool_registry import Tool, ToolRegistry, ToolSource
from foldline.chat.tools import CONTEXT_TOOLS, WorkspaceFiles
from foldline.chat.turn import TurnRunner
from foldline.chat.turn_handle import TurnHandle
from foldline.chat.turn_setup import ConversationSetup, TurnServices
from foldline.chat.watching import ConversationWatch
from foldline.config import AppConfig
from foldline.core.messages import AttachmentPart, Message
from foldline.providers.registry import (
    ModelListing,
    provider_for_model,
)
from foldline.store import ConversationRecord, Store
from foldline.store.records import DISK_FULL_MESSAGE, is_disk_full
from foldline.uploads import IncomingFile, PdfsRead, read_pdfs_ahead

log = logging.getLogger(__name__)

T = TypeVar("T")

INTERNAL_ERROR = (
    "Something went wrong inside Foldline while answering; what was written so far is "
    "kept, and the details are in the log. Try again."
)


class Serving(NamedTuple):
    """What serves a conversation's next turn, as read from the store and config."""

    saved: AppConfig
    """The saved config (the provider pool's key)."""
    config: AppConfig
    """The conversation's view of it."""
    model: str


class ChatService(ConversationReads):
    def __init__(
        self,
        store: Store,
        config_provider: Callable[[], AppConfig],
        *,
        provider_factory: ProviderFactory = provider_for_model,
        files_root: Path | None = None,
        tool_sources: Sequence[ToolSource] = (),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        listing: ModelListing | None = None,
    ) -> None:
        self.store = store
        self.writes = StoreWriter()
        """Every turn's writes, in one thread, in order (see `StoreWriter`)."""
        self.config_provider = config_provider
        self.providers = ProviderPool(provider_factory)
        """One client per model for the service's life: its connection pool is reused by
        every turn and by the summaries written in the background."""
        self.files = WorkspaceFiles(files_root) if files_root else None
        self.tool_sources = list(tool_sources)
        self.recall = RecallTools(store)
        """The recall tools (offered once the conversation has a fold)."""
        self.loader = ContextLoader(store, lambda: self.tool_registry().specs(), listing=listing)
        self.sleep = sleep
        self.running: dict[str, TurnHandle] = {}
        self.watch = ConversationWatch()
        """Tells the pages that show a conversation of every turn and change in it."""
        self.background = FoldGates(store, self.writes, self.is_running)
        """Every conversation's fold gate: its breaker, back-off, pace and the summary
        prepared in the background."""
        # A re-summary committed while the conversation is idle changes its fold.
        self.background.on_idle_commit = lambda conversation_id: self.watch.changed(
            conversation_id, "fold"
        )
        # A summary prepared in the background changes the meter: the prepared fold's
        # status, and the count (its calls refine the calibration).
        self.background.on_prepared = lambda conversation_id: self.watch.changed(
            conversation_id, "context"
        )
        self.loader.fold_status = self.background.status
        # A made title changes what every page's list shows.
        self.titles = BackgroundTitles(
            store,
            self.writes,
            on_titled=lambda conversation_id: self.watch.changed(conversation_id, "updated"),
        )
        self.local_servers = LocalServers(lambda: self.loader.listing)
        """Local servers: asked what they are at first use, their slot shared in order."""
        self.background.slot_of = self.local_servers.slot_timing
        self.background.one_request_at_a_time = self.local_servers.one_request_at_a_time
        self.loader.server_count = self.local_servers.count_view

    async def warm_up(self) -> None:
        """Build the default model's client and load its tokenizer at launch, in the
        background (`ProviderPool.warm_up`)."""
        await self.providers.warm_up(self.config_provider)

    def tool_registry(self) -> ToolRegistry:
        """The tools offered now: the built-in ones, the workspace reader, then the tool
        sources' (MCP servers) in their configured order."""
        tools: list[Tool] = [*CONTEXT_TOOLS, *self.recall.tools()]
        if self.files is not None:
            tools.extend(self.files.tools())
        for source in self.tool_sources:
            tools.extend(source.tools())
        return ToolRegistry(tools)

    async def prepare_tools(self) -> list[ChatEvent]:
        events: list[ChatEvent] = []
        for source in self.tool_sources:
            events.extend(await source.prepare())
        return events

    # --- starting work --------------------------------------------------------------

    async def _checked_runner(
        self, conversation_id: str, check: Callable[[], T]
    ) -> tuple[T, TurnRunner]:
        """The store's half of starting work in a worker thread (`check`, then what
        serves the conversation), and its runner built back on the event loop."""
        self._check_idle(conversation_id)

        def checked() -> tuple[T, Serving]:
            return check(), self._serving(conversation_id)

        result, serving = await asyncio.to_thread(checked)
        # Another turn may have started while this one was checked.
        self._check_idle(conversation_id)
        return result, self._runner_for(conversation_id, serving)

    def _serving(self, conversation_id: str) -> Serving:
        """The store's half of starting a turn (in a worker thread): the conversation's
        config and model, checked, and its project within its cap."""
        saved = self.config_provider()
        conversation = self.store.get_conversation(conversation_id)
        project = conversation_project(self.store, conversation)
        config = conversation_config(saved, conversation, project)
        model = model_name(config, conversation, project)
        if not model:
            raise ChatUnavailable("Choose a model for this conversation first (Settings).")
        if conversation.project_id:
            self.check_project_cap(conversation_id)
        return Serving(saved, config, model)

    def _runner_for(self, conversation_id: str, serving: Serving) -> TurnRunner:
        """The turn's runner, on the event loop: the provider clients are the loop's
        (a stale one is closed in a task of it)."""
        saved, config, model = serving
        try:
            provider = self.providers.get(config, model, base=saved)
            summary_model = config.compaction.model or model
            summarizer = (
                provider
                if summary_model == model
                else self.providers.get(config, summary_model, base=saved)
            )
        except Exception as error:  # a missing key or provider is the person's to fix
            raise ChatUnavailable(str(error)) from error
        self.local_servers.prepare(conversation_id, config, model)
        provider = self.local_servers.wrap(provider, model)
        summarizer = self.local_servers.wrap(summarizer, summary_model)
        return TurnRunner(
            TurnServices(
                store=self.store,
                writes=self.writes,
                loader=self.loader,
                titles=self.titles,
                tools=self.tool_registry,
                prepare_tools=self.prepare_tools,
                sleep=self.sleep,
            ),
            ConversationSetup(
                conversation_id=conversation_id,
                config=config,
                provider=provider,
                summarizer=summarizer,
                summary_model=summary_model,
                folds=self.background.of(conversation_id),
            ),
        )

    def _start(self, conversation_id: str, work: AsyncIterator[ChatEvent]) -> TurnHandle:
        handle = TurnHandle(conversation_id)
        self.running[conversation_id] = handle

        async def drive() -> None:
            try:
                this = asyncio.current_task()
                assert this is not None  # drive() always runs as a task
                await self.local_servers.before_turn(conversation_id, this)
                async for event in work:
                    handle.publish(event)
            except asyncio.CancelledError:
                handle.publish(ev.Done(Done(cancelled=True)))
            except Exception as error:
                if is_disk_full(error):
                    log.error("turn stopped: disk full (%s)", error)
                    failure = ErrorEvent(
                        code="disk_full", message=DISK_FULL_MESSAGE, retryable=True
                    )
                else:
                    log.exception("turn failed")
                    # The exception's text can hold paths, data or a library's internals:
                    # it goes to the log, and the person reads a plain sentence.
                    failure = ErrorEvent(code="internal", message=INTERNAL_ERROR, retryable=True)
                handle.publish(ev.Error(failure))
                handle.publish(ev.Done())
            finally:
                handle.close()
                if self.running.get(conversation_id) is handle:
                    del self.running[conversation_id]
                    self.background.idle(conversation_id)
                self.watch.finished(conversation_id)

        handle.task = asyncio.get_running_loop().create_task(drive())
        self.watch.started(conversation_id)
        return handle

    def _check_idle(self, conversation_id: str) -> None:
        if conversation_id in self.running:
            raise TurnInProgress(
                "A reply is still being written in this conversation; wait or press Stop."
            )

    async def start_turn(
        self, conversation_id: str, content: str, files: Sequence[IncomingFile] = ()
    ) -> TurnHandle:
        """A turn answering the person's message: its checks and its files are read off
        the event loop, and Stop during the reading of files ends it with nothing stored
        (`chat/file_reading.py`)."""
        self._check_idle(conversation_id)

        def checked(pdfs: PdfsRead | None) -> tuple[Message, Serving]:
            message = self._person_message(conversation_id, content, files, (), pdfs)
            return message, self._serving(conversation_id)

        if files:

            async def read() -> tuple[Message, Serving]:
                return await asyncio.to_thread(checked, await read_pdfs_ahead(files))

            read_and_checked = await read_while_stoppable(self.running, conversation_id, read)
            if read_and_checked is None:
                return stopped_turn(conversation_id)
        else:
            read_and_checked = await asyncio.to_thread(checked, None)
        message, serving = read_and_checked
        # Another turn may have started while this one was checked.
        self._check_idle(conversation_id)
        runner = self._runner_for(conversation_id, serving)
        return self._start(conversation_id, runner.turn(message))

    def _person_message(
        self,
        conversation_id: str,
        content: str,
        files: Sequence[IncomingFile],
        kept: Sequence[AttachmentPart] = (),
        pdfs: PdfsRead | None = None,
    ) -> Message:
        return person_message(
            lambda: self._load(conversation_id), content, files, kept=kept, pdfs=pdfs
        )

    async def start_retry(self, conversation_id: str) -> TurnHandle:
        """Run the model again on the history as it is (after an error or a stop)."""
        _, runner = await self._checked_runner(
            conversation_id, lambda: self._check_retryable(conversation_id)
        )
        return self._start(conversation_id, runner.retry())

    def _check_retryable(self, conversation_id: str) -> None:
        """ChatUnavailable unless the last message is a failed or unanswered one (after
        NotFound for an unknown conversation)."""
        self.store.get_conversation(conversation_id)
        last = self.store.list_messages(
            conversation_id, offset=max(self.store.message_count(conversation_id) - 1, 0), limit=1
        )
        finished = (
            last
            and last[0].message.role == "assistant"
            and last[0].status == "complete"
            # A complete answer whose calls have no results (the app stopped during its
            # tool batch) is unanswered: a retry gives the calls results and goes on.
            and not last[0].message.tool_calls
        )
        if not last or finished:
            raise ChatUnavailable("There is no failed or unanswered message to retry.")

    async def start_edit(
        self,
        conversation_id: str,
        message_id: str,
        content: str,
        files: Sequence[IncomingFile] = (),
        keep: Sequence[str] = (),
    ) -> TurnHandle:
        """A new version of the person's message `message_id` (on the active path): a
        sibling that becomes the tip of the active path, and a turn answering it. The
        message and its files are read off the event loop, and stoppable, as in
        `start_turn`.

        `files` are new files; `keep` the sha256s of the old version's files that stay
        (their bytes are stored already, so they are not sent again)."""
        self._check_idle(conversation_id)

        def checked(pdfs: PdfsRead) -> tuple[str | None, Message, Serving]:
            parent_id, message = self._edited(
                conversation_id, message_id, content, files, keep, pdfs
            )
            return parent_id, message, self._serving(conversation_id)

        async def read() -> tuple[str | None, Message, Serving]:
            return await asyncio.to_thread(checked, await read_pdfs_ahead(files))

        edited = await read_while_stoppable(self.running, conversation_id, read)
        if edited is None:
            return stopped_turn(conversation_id)
        parent_id, message, serving = edited
        self._check_idle(conversation_id)
        runner = self._runner_for(conversation_id, serving)
        return self._start(conversation_id, runner.edit(parent_id, message))

    def _edited(
        self,
        conversation_id: str,
        message_id: str,
        content: str,
        files: Sequence[IncomingFile],
        keep: Sequence[str],
        pdfs: PdfsRead | None = None,
    ) -> tuple[str | None, Message]:
        """(the parent of the edited message, its new version), checked (NotFound first
        for an unknown conversation)."""
        self.store.get_conversation(conversation_id)
        record = self.store.message_on_path(conversation_id, message_id)
        if record.message.role != "user":
            raise WrongMessage("Only your own messages can be edited; regenerate an answer.")
        wanted = set(keep)
        kept = [
            part
            for part in self.store.hydrate([record.message])[0].parts
            if isinstance(part, AttachmentPart) and part.sha256 in wanted
        ]
        message = self._person_message(conversation_id, content, files, kept, pdfs)
        return record.parent_id, message

    async def start_regenerate(self, conversation_id: str, message_id: str) -> TurnHandle:
        """A new answer in place of the answer `message_id` (on the active path), written
        as its sibling; the old answer stays, one switch away."""

        def answered() -> str:
            self.store.get_conversation(conversation_id)  # NotFound for an unknown one
            record = self.store.message_on_path(conversation_id, message_id)
            if record.message.role != "assistant" or record.parent_id is None:
                raise WrongMessage("Only an answer can be regenerated; edit your own message.")
            return record.parent_id

        parent_id, runner = await self._checked_runner(conversation_id, answered)
        return self._start(conversation_id, runner.regenerate(parent_id))

    async def switch_branch(self, conversation_id: str, message_id: str) -> ConversationRecord:
        """Make the leaf last used under `message_id` the active leaf (not during a turn),
        written in order with the turns' writes."""
        self._check_idle(conversation_id)
        record = await self.writes.run(self.store.switch_branch, conversation_id, message_id)
        self.loader.drop_anchor(conversation_id)
        return record

    async def start_compaction(
        self,
        conversation_id: str,
        instructions: str | None,
        keep_recent_tokens: int | None = None,
    ) -> TurnHandle:
        """A manual fold: everything before the last exchange, unless asked to keep the
        recent messages holding `keep_recent_tokens` verbatim."""
        _, runner = await self._checked_runner(conversation_id, lambda: None)
        return self._start(
            conversation_id, runner.compact(instructions or None, keep_recent_tokens)
        )

    async def hand_off(self, conversation_id: str, request: HandoffRequest) -> ConversationRecord:
        """A hand-off ("New conversation from here"): a conversation continuing this one (see
        `chat/handoff.py`); refused while a turn runs, so the point cannot move."""
        _, runner = await self._checked_runner(conversation_id, lambda: None)
        # Registered as running work like a turn, so sends, edits, regenerations, folds,
        # pins and a second hand-off wait for it, and Stop or a delete ends it.
        handle = TurnHandle(conversation_id, kind="handoff")
        self.running[conversation_id] = handle
        try:
            ctx = await asyncio.to_thread(self._load, conversation_id)
            task = asyncio.get_running_loop().create_task(
                hand_off(
                    self.store,
                    ctx,
                    request,
                    maker=runner.maker,
                )
            )
            handle.task = task
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.cancelled():  # stopped, not this request going away
                    raise HandoffStopped("The hand-off was stopped.") from None
                task.cancel()
                raise
        finally:
            handle.close()
            if self.running.get(conversation_id) is handle:
                del self.running[conversation_id]
                self.background.idle(conversation_id)

    def cancel(self, conversation_id: str) -> bool:
        handle = self.running.get(conversation_id)
        if handle is None or handle.task is None:
            return False
        handle.task.cancel()
        return True

    def running_turn(self, conversation_id: str) -> TurnHandle | None:
        """The turn or fold running in this conversation, to follow its events."""
        return self.running.get(conversation_id)

    def is_running(self, conversation_id: str) -> bool:
        return conversation_id in self.running

    async def shutdown(self) -> None:
        """Cancel running turns (their partial answers are kept, marked interrupted)."""
        await self.background.shutdown()
        await self.titles.shutdown()
        handles = list(self.running.values())
        for handle in handles:
            if handle.task is not None:
                handle.task.cancel()
        for handle in handles:
            if handle.task is not None:
                await asyncio.gather(handle.task, return_exceptions=True)
        await self.providers.aclose()
        await self.local_servers.aclose()
        for source in self.tool_sources:
            await source.shutdown()
        await asyncio.to_thread(self.writes.close)
