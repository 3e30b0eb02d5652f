"""Local servers as the chat sees them: asked what they are at first use, one slot
shared without a fight, their answers counted by their own tokenizer.

The chat service holds one `LocalServers`. For a conversation on an OpenAI-compatible
provider it

- starts asking the server about the model (`prepare`, when the turn is built) and lets
  the turn wait a moment for the answer (`before_turn`, at most `LEARN_WAIT_SECONDS`):
  a local server answers in milliseconds, and the first turn's budget is then the
  server's window instead of a guess; a server that does not answer costs that wait
  once, and the learning goes on in the background;
- wraps the provider (`wrap`) so that each request
  - takes its turn on the server's slot (`chat.slots.SlotScheduler`): the turn first,
    background summaries and titles after it, restarted rather than cut;
  - asks llama.cpp to keep its prompt cache (`cache_prompt`) and, on a server with more
    than one slot, sends background requests to the last slot (`id_slot`), so the slot
    holding the conversation's cached prompt is still warm for the next turn;
  - gets a `Usage` counted by the server's tokenizer when the server streams none
    (llama-cpp-python), so the meter, the calibration and the bill have real numbers;
  - teaches Foldline the window an overflow error states (llama.cpp's `n_ctx`,
    llama-cpp-python's "exceed context window of N").

Hosted providers are handed back unwrapped.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any, Literal

import httpx2

from foldline.chat.slots import SlotScheduler
from foldline.chat.worker_loop import calling_task
from foldline.config import AppConfig, ConfigError, effective_base_url, provider_config
from foldline.core.messages import Message, ToolSpec
from foldline.core.wire import to_openai_messages, to_openai_tools
from foldline.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    Stop,
    StreamEndedEarly,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from foldline.providers.discovery import learn_model, needs_learning
from foldline.providers.listing import ListedModel, ModelDirectory
from foldline.providers.registry import ResolvedModel, provider_name_for_model
from foldline.providers.server_facts import DISCOVERY_TIMEOUT_SECONDS
from foldline.providers.server_tokens import COUNT_TIMEOUT_SECONDS, count_chat, count_text

log = logging.getLogger(__name__)

LEARN_WAIT_SECONDS = 3.0
"""The most a turn waits for a server's first answer about its model."""
OVERFLOW_SOURCE = "the server's overflow error"
_REFUSES_TOOLS = re.compile(
    # Ollama: "registry.ollama.ai/library/x:latest does not support tools"; llama.cpp
    # without --jinja: "tools param requires --jinja flag"; vLLM without a tool parser:
    # "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser".
    r"does not support tools|tools? param\w* requires|tool choice requires|"
    r"tools? (are|is) not supported",
    re.IGNORECASE,
)


def single_slot(listed: ListedModel | None) -> bool:
    """Whether turns and background requests must take turns on the server: it said it
    has one slot, or it interrupts, or a stream of it was cut by another request. A
    server that said nothing keeps running them side by side, as before."""
    if listed is None or listed.server == "vllm":
        return False
    return bool(listed.interrupts) or listed.slots == 1


class LocalServers:
    """What the chat knows of each local server, and each server's slot order."""

    def __init__(
        self, directory_of: Callable[[], object], clock: Callable[[], float] = time.time
    ) -> None:
        self.directory_of = directory_of
        """The model lists' cache, where what a server said is kept (the app may set it
        after the service was built, so it is looked up each time)."""
        self.clock = clock
        self.schedulers: dict[str, SlotScheduler] = {}
        self.grace = SlotScheduler.grace
        """How long a background request still holds back for a turn that is not
        streaming (see `SlotScheduler.grace`)."""
        self._learning: dict[tuple[str, str], asyncio.Task[Any]] = {}
        self._conversations: dict[str, tuple[str, str, str]] = {}
        """conversation id → (base URL, provider, model) of its last turn."""
        self._client: httpx2.AsyncClient | None = None
        self._base_urls: dict[str, str] = {}
        self._counting = CountingLoop()

    @property
    def directory(self) -> ModelDirectory | None:
        found = self.directory_of()
        return found if isinstance(found, ModelDirectory) else None

    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(timeout=DISCOVERY_TIMEOUT_SECONDS)
        return self._client

    async def aclose(self) -> None:
        for task in list(self._learning.values()):
            task.cancel()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await asyncio.to_thread(self._counting.close)

    def scheduler(self, base_url: str) -> SlotScheduler:
        return self.schedulers.setdefault(base_url, SlotScheduler(grace=self.grace))

    def slot_timing(self, conversation_id: str) -> tuple[float, float] | None:
        """On a server of the conversation that runs one request at a time: how long a
        background request holds it and how long it stays free between turns (both
        observed); None elsewhere or before both were seen."""
        found = self._conversations.get(conversation_id)
        scheduler = None if found is None else self.schedulers.get(found[0])
        if scheduler is None or not scheduler.single:
            return None
        held, free = scheduler.background_seconds, scheduler.free_seconds
        return None if held is None or free is None else (held, free)

    def one_request_at_a_time(self, conversation_id: str) -> bool:
        """Whether the server of the conversation's last turn is known to run one request
        at a time (`single_slot`: what it said of its slots, or a stream of it cut by
        another request), before any of its requests was timed. Called from worker
        threads too: it reads only dictionaries and the model list (locked)."""
        found = self._conversations.get(conversation_id)
        return found is not None and single_slot(self.known(found[1], found[2]))

    def known(self, provider: str, model: str) -> ListedModel | None:
        """What the server said about `model`, if it was asked."""
        directory = self.directory
        if directory is None:
            return None
        listed = directory.find(provider, model)
        return listed if listed is not None and listed.learned_at is not None else None

    # --- learning ------------------------------------------------------------------

    def prepare(self, conversation_id: str, config: AppConfig, model: str) -> None:
        """The turn of `conversation_id` will use `model`: remember its server and start
        asking it, unless it was asked within a day. On the event loop; never waits."""
        try:
            provider = provider_name_for_model(config, model)
            kind = provider_config(config, provider).kind
        except ConfigError:
            return
        base_url, _ = effective_base_url(config, provider)
        if kind != "openai-compatible" or not base_url:
            self._conversations.pop(conversation_id, None)
            return
        self._conversations[conversation_id] = (base_url, provider, model)
        self._base_urls[provider] = base_url
        key = (provider, model)
        running = self._learning.get(key)
        directory = self.directory
        if directory is None or (running is not None and not running.done()):
            return
        if not needs_learning(directory, provider, model, self.clock()):
            return
        task = asyncio.get_running_loop().create_task(
            learn_model(
                directory, config, provider, model, clock=self.clock, http_client=self.client()
            )
        )
        self._learning[key] = task
        task.add_done_callback(lambda done: self._learning.pop(key, None))

    async def before_turn(self, conversation_id: str, task: asyncio.Task[Any]) -> None:
        """A turn of `conversation_id` starts in `task`: it goes first on its server, and
        waits a moment for what the server is being asked about its model."""
        found = self._conversations.get(conversation_id)
        if found is None:
            return
        base_url, provider, model = found
        self.scheduler(base_url).turn_started(task)
        learning = self._learning.get((provider, model))
        if learning is not None and not learning.done():
            # Shielded: the turn stops waiting, the learning goes on.
            await asyncio.wait({learning}, timeout=LEARN_WAIT_SECONDS)

    def learn_window(self, provider: str, model: str, window: int) -> None:
        """An overflow error stated the server's window: keep it as the server's word."""
        directory = self.directory
        if directory is None:
            return
        listed = self.known(provider, model)
        if listed is not None and listed.context_window == window:
            return
        directory.record_learned(
            provider,
            "openai-compatible",
            model,
            {"context_window": window, "window_source": OVERFLOW_SOURCE},
            self.clock(),
        )
        log.info("%s states a window of %d tokens for %s", provider, window, model)

    def learn_refuses_tools(self, provider: str, model: str) -> None:
        """The server refused a request for its tools: from now on it gets none."""
        directory = self.directory
        if directory is None:
            return
        directory.record_learned(
            provider, "openai-compatible", model, {"refuses_tools": True}, self.clock()
        )
        log.info("%s refuses tools for %s: turns go without them", provider, model)

    def learn_single_slot(self, provider: str, model: str) -> None:
        """A stream was cut off for another request: from now on, turns and background
        requests take turns on this server."""
        directory = self.directory
        listed = self.known(provider, model)
        if directory is None or (listed is not None and listed.interrupts):
            return
        directory.record_learned(
            provider, "openai-compatible", model, {"slots": 1, "interrupts": True}, self.clock()
        )
        log.info("%s cut a stream for another request: one slot from now on", provider)

    def count_view(
        self, model: ResolvedModel, system: str, view: list[Message], tools: list[ToolSpec]
    ) -> int | None:
        """The request's prompt tokens, counted by the model's server where it can count
        (`providers.server_tokens`); None elsewhere. Called from the context loader's
        worker threads (never on the event loop): the count runs on the counting loop,
        a thread of its own with one HTTP client kept open, and the caller waits for it."""
        if model.provider_kind != "openai-compatible":
            return None
        listed = self.known(model.provider_name, model.model)
        base_url = self._base_urls.get(model.provider_name)
        if listed is None or not listed.tokenizer or base_url is None:
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return None  # on an event loop: never block it for a count
        messages = to_openai_messages(system, view)
        specs = to_openai_tools(tools) if tools else []
        tokenizer = listed.tokenizer

        async def count(client: httpx2.AsyncClient) -> int | None:
            return await count_chat(client, base_url, tokenizer, model.model, messages, tools=specs)

        try:
            return self._counting.run(count)
        except (httpx2.HTTPError, OSError, ValueError, TimeoutError):
            return None

    # --- requests ------------------------------------------------------------------

    def wrap(self, provider: Provider, model: str) -> Provider:
        """`provider` with the local server's manners (the module text); hosted
        providers are returned as they are."""
        base_url = getattr(provider, "base_url", None)
        if not getattr(provider, "compatible", False) or not base_url:
            return provider
        return LocalModelProvider(self, provider, base_url)


class CountingLoop:
    """An event loop in a thread of its own, with one HTTP client, for counts asked from
    worker threads: a new loop and client per count cost more than the count itself."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx2.AsyncClient | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="foldline-server-counts", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, count: Callable[[httpx2.AsyncClient], Awaitable[int | None]]) -> int | None:
        """`count(client)` on the counting loop; the calling thread waits for it."""
        loop = self._started()

        async def counted() -> int | None:
            if self._client is None:
                self._client = httpx2.AsyncClient(timeout=COUNT_TIMEOUT_SECONDS)
            return await count(self._client)

        future = asyncio.run_coroutine_threadsafe(counted(), loop)
        return future.result(timeout=COUNT_TIMEOUT_SECONDS * 2)

    def close(self) -> None:
        """Close the client and stop the loop (from any thread but the loop's)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        client, self._client = self._client, None
        if client is not None:
            asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()


class LocalModelProvider:
    """A provider for a local server, wrapped (see `LocalServers`)."""

    def __init__(self, servers: LocalServers, inner: Provider, base_url: str) -> None:
        self.servers = servers
        self.inner = inner
        self.base_url = base_url
        self.name = inner.name
        self.compatible = True

    @property
    def wire(self) -> Literal["anthropic", "openai", "openai-responses"]:
        return self.inner.wire

    def warm_up(self) -> None:
        self.inner.warm_up()

    def keeps_prompt_prefix(self, model: str) -> bool:
        """Whether the server is known to keep the prompt it last evaluated and to reuse
        its common prefix for the next request: llama.cpp (`cache_prompt`), llama-cpp-
        python (its one context), Ollama and LM Studio (llama.cpp inside) and vLLM
        (prefix caching). A summary asked after the conversation's view then costs the
        server only its question, and the next turn finds the view still cached; a
        summary sent on its own would evaluate the folded text again and replace the
        cached prompt. A server not recognised is treated as keeping nothing."""
        listed = self.servers.known(self.name, model)
        return listed is not None and listed.server is not None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        listed = self.servers.known(self.name, request.model)
        scheduler = self.servers.scheduler(self.base_url)
        scheduler.single = single_slot(listed)
        # A fold written at a turn's gate calls from a task of its own (`worker_loop`):
        # it is the turn's request all the same, never held back behind the turn.
        task = calling_task()
        is_turn = task is None or scheduler.is_turn(task)
        request = replace(request, server_options=self._options(request, listed, is_turn))
        if listed is not None and listed.refuses_tools and request.tools:
            request = replace(request, tools=[])
        if is_turn:
            async with scheduler.turn_call():
                async for event in self._counted(request, listed):
                    yield event
            return
        for event in await scheduler.background(lambda: self._counted(request, listed)):
            yield event

    @staticmethod
    def _options(
        request: ModelRequest, listed: ListedModel | None, is_turn: bool
    ) -> dict[str, Any]:
        options = dict(request.server_options)
        if listed is None or listed.server != "llama.cpp":
            return options
        # llama.cpp keeps each slot's last prompt and reuses its common prefix
        # (`cache_prompt`, tools/server/README.md). A background request sent to the last
        # slot leaves the conversation's prompt in the others for the next turn.
        options["cache_prompt"] = True
        if not is_turn and (listed.slots or 1) > 1:
            options["id_slot"] = (listed.slots or 1) - 1
        return options

    async def _counted(
        self, request: ModelRequest, listed: ListedModel | None
    ) -> AsyncIterator[ProviderEvent]:
        """`_answer`, sent again once without tools when the server refuses them (and
        remembered: later requests go without them)."""
        try:
            async for event in self._answer(request, listed):
                yield event
        except ProviderError as error:
            if not (
                request.tools
                and error.code == "bad_request"
                and _REFUSES_TOOLS.search(error.message)
            ):
                raise
            self.servers.learn_refuses_tools(self.name, request.model)
            async for event in self._answer(replace(request, tools=[]), listed):
                yield event

    async def _answer(
        self, request: ModelRequest, listed: ListedModel | None
    ) -> AsyncIterator[ProviderEvent]:
        """The inner stream; a `Usage` counted by the server when it sent none, and the
        window an overflow error states, learned."""
        seen_usage = False
        written: list[str] = []
        try:
            async for event in self.inner.stream(request):
                if isinstance(event, Usage):
                    seen_usage = True
                elif isinstance(event, TextDelta | ReasoningDelta):
                    written.append(event.text)
                elif isinstance(event, ToolCallEvent):
                    written.append(str(event.input))
                elif isinstance(event, Stop) and not seen_usage:
                    usage = await self._server_usage(request, listed, "".join(written))
                    if usage is not None:
                        yield usage
                yield event
        except StreamEndedEarly as error:
            if error.code == "unavailable" and not error.empty:
                # Cut off for another request: the server has one slot and interrupts.
                self.servers.learn_single_slot(self.name, request.model)
            raise
        except ProviderError as error:
            if error.code == "context_overflow" and error.context_limit:
                self.servers.learn_window(self.name, request.model, error.context_limit)
            raise

    async def _server_usage(
        self, request: ModelRequest, listed: ListedModel | None, answer: str
    ) -> Usage | None:
        if listed is None or not listed.tokenizer:
            return None
        client = self.servers.client()
        messages = to_openai_messages(request.system, request.messages)
        tools = to_openai_tools(request.tools) if request.tools and listed.tools else []
        prompt = await count_chat(
            client, self.base_url, listed.tokenizer, request.model, messages, tools=tools
        )
        if prompt is None:
            return None
        written = await count_text(client, self.base_url, listed.tokenizer, request.model, answer)
        return Usage(input_tokens=prompt, output_tokens=written or 0)
