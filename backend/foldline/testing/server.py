"""`FakeProviderServer`: the Anthropic and OpenAI HTTP APIs, faked in-process.

The real `anthropic` and `openai` SDKs talk to it over loopback HTTP, so Foldline's
providers are tested end to end: request building, SSE parsing, usage fields, error
mapping, retries. What the "model" answers comes from a responder: a `ScriptedModel`
(steps, summaries, recorded calls; the default echoes and summarizes), or any callable
`(body, wire) -> step`.

    script = ScriptedModel(text_step("hi"))
    with FakeProviderServer(script, models={"m": ModelLimits(8000, 1000)}) as server:
        client = anthropic.AsyncAnthropic(base_url=server.anthropic_url, api_key="k")
        ...
        server.fail_next("rate_limit", retry_after=2)
        assert server.requests[-1].input_tokens == ...

It runs uvicorn on 127.0.0.1, port 0 (a free port chosen by the OS), in a daemon thread;
leaving the `with` block (or `stop()`) asks uvicorn to exit and joins the thread.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

import uvicorn
from starlette.routing import Route

from foldline.providers.base import ModelRequest, Usage
from foldline.testing.codec import Wire
from foldline.testing.failures import SUMMARY_KINDS, Failure, FailureKind, RecordedRequest, Target
from foldline.testing.fake_app import Responder, build_app
from foldline.testing.fake_models import FakeModel
from foldline.testing.fake_tokenizer import Element, FakeTokenizer
from foldline.testing.local_servers import LocalPersonality
from foldline.testing.prompt_cache import PromptCache
from foldline.testing.responses_app import responses_route
from foldline.testing.scripted import ScriptedModel
from foldline.testing.steps import looks_like_summary_request, structured_summary
from foldline.testing.validation import ModelLimits

DEFAULT_LIMITS = ModelLimits(context_window=200_000, max_output_tokens=64_000)

_UNFINISHED_RESPONSE = "ASGI callable returned without completing response."


class _DropIntendedDisconnects(logging.Filter):
    """Silences uvicorn's error line for the disconnects this server makes on purpose.

    uvicorn logs an error when an app returns without finishing its response, which is
    exactly how an injected disconnect is made. Only records emitted by this server's
    own thread are dropped, so other servers in the process keep their logs.
    """

    def __init__(self, thread_name: str) -> None:
        super().__init__()
        self.thread_name = thread_name

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName == self.thread_name and record.msg == _UNFINISHED_RESPONSE)


class FakeProviderServer:
    """An in-process HTTP server speaking the Anthropic Messages and OpenAI Chat APIs."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        models: dict[str, ModelLimits] | None = None,
        default_limits: ModelLimits | None = DEFAULT_LIMITS,
        tokenizer: FakeTokenizer | None = None,
        api_key: str | None = None,
        prompt_cache: bool = True,
        delta_delay: float = 0.0,
        is_summary: Callable[[ModelRequest], bool] = looks_like_summary_request,
        startup_timeout: float = 10.0,
        listed: list[FakeModel] | None = None,
        personality: LocalPersonality | None = None,
    ) -> None:
        """
        `models` maps model names to their limits; other names get `default_limits`, or
        a 404 "model not found" when it is None. `api_key`, when set, must be sent
        (`x-api-key` / `Authorization: Bearer`) or the request gets a 401.
        `delta_delay` slows every stream; `is_summary` decides which requests count as
        summarizations (for summary failures and `RecordedRequest.is_summary`).
        `listed` is what `GET /v1/models` lists (default: every model of `models`, active,
        with its limits); a listed model also answers with its own limits.
        `personality` makes the server behave as one kind of local server (llama.cpp,
        llama-cpp-python, Ollama, LM Studio, vLLM: `foldline.testing.local_servers`): its
        native endpoints, its window, usage, overflow answers and slots.
        """
        self.personality = personality
        self.responder: Responder = responder or ScriptedModel(
            when_empty="echo", summaries=structured_summary, is_summary=is_summary
        )
        self.models: dict[str, ModelLimits] = dict(models or {})
        self.listed: list[FakeModel] | None = list(listed) if listed is not None else None
        self.listing_requests: list[tuple[Wire, str, str]] = []
        """Every models-endpoint request: (wire, path, query string)."""
        self.default_limits = default_limits
        self.tokenizer = tokenizer or FakeTokenizer()
        self.api_key = api_key
        self.delta_delay = delta_delay
        self.is_summary = is_summary
        self.errors: list[BaseException] = []
        """Exceptions a responder raised that were not ProviderErrors (answered as 500)."""
        self.cache: PromptCache | None = PromptCache() if prompt_cache else None
        self.startup_timeout = startup_timeout
        self._requests: list[RecordedRequest] = []
        self._failures: list[Failure] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._log_filter: _DropIntendedDisconnects | None = None
        self.port = 0

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        if self._thread is not None:
            raise RuntimeError("the fake provider server is already running")
        # IPPROTO_TCP so that asyncio sets TCP_NODELAY on accepted connections: without
        # it every small answer waited ~40 ms for the client's delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            build_app(self, [*self._personality_routes(), responses_route(self)]),
            log_config=None,
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http="h11",
            ws="none",
            # An open slow stream must not keep the server alive long after stop().
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        name = f"foldline-fake-provider-{self.port}"
        self._log_filter = _DropIntendedDisconnects(name)
        logging.getLogger("uvicorn.error").addFilter(self._log_filter)
        self._socket = sock
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=name, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the fake provider server did not start")
            time.sleep(0.005)
        return self

    def _personality_routes(self) -> list[Route]:
        if self.personality is None:
            return []
        return self.personality.routes(self.tokenizer, sorted(self.models))

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread; safe to call twice."""
        server, thread = self._server, self._thread
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(timeout=5)
            if thread.is_alive():
                server.force_exit = True
                thread.join(timeout=5)
        if self._socket is not None:
            self._socket.close()
        if self._log_filter is not None:
            logging.getLogger("uvicorn.error").removeFilter(self._log_filter)
        self._server = self._thread = self._socket = self._log_filter = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- addresses -------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def anthropic_url(self) -> str:
        """`base_url` for `anthropic.AsyncAnthropic` (the SDK appends `/v1/messages`)."""
        return self.url

    @property
    def openai_url(self) -> str:
        """`base_url` for `openai.AsyncOpenAI` (the SDK appends `/chat/completions`)."""
        return f"{self.url}/v1"

    def base_url(self, wire: Wire) -> str:
        return self.anthropic_url if wire == "anthropic" else self.openai_url

    def providers_toml(self, api_key: str = "k") -> str:
        """config.toml tables of three providers on this server: `fake-anthropic`
        (Anthropic Messages), `fake-openai` (OpenAI's own API: Chat Completions and the
        Responses API) and `fake-compat` (an OpenAI-compatible server), for the
        `[models."…"]` tables of a test to name."""
        return "".join(
            f'[providers.{name}]\nkind = "{kind}"\nbase_url = "{url}"\napi_key = "{api_key}"\n\n'
            for name, kind, url in (
                ("fake-anthropic", "anthropic", self.anthropic_url),
                ("fake-openai", "openai", self.openai_url),
                ("fake-compat", "openai-compatible", self.openai_url),
            )
        )

    # --- configuration and failures --------------------------------------------------

    @property
    def script(self) -> ScriptedModel:
        """The responder, when it is a ScriptedModel (the default is one)."""
        if not isinstance(self.responder, ScriptedModel):
            raise TypeError("this server's responder is not a ScriptedModel")
        return self.responder

    def limits_for(self, model: str) -> ModelLimits | None:
        if model in self.models:
            return self.models[model]
        for listed in self.listed or ():
            if listed.id == model and listed.max_input_tokens and listed.max_tokens:
                return ModelLimits(listed.max_input_tokens, listed.max_tokens)
        return self.default_limits

    def listed_models(self) -> list[FakeModel]:
        """What the models endpoints list (see `listed` in `__init__`)."""
        with self._lock:
            if self.listed is not None:
                return list(self.listed)
            names = sorted(self.models)
        return [
            FakeModel(n, self.models[n].context_window, self.models[n].max_output_tokens)
            for n in names
        ]

    def record_listing(self, wire: Wire, path: str, query: str) -> None:
        """Keep a models-endpoint request for `listing_requests`."""
        with self._lock:
            self.listing_requests.append((wire, path, query))

    def fail_next(
        self,
        kind: FailureKind,
        *,
        times: int = 1,
        on: Target | None = None,
        wire: Wire | None = None,
        retry_after: float | None = 1.0,
        after_deltas: int | None = None,
        delay: float = 0.05,
        text: str = "",
    ) -> None:
        """Queue a failure for the next matching request(s); see `FailureKind`.

        Failures are consumed in the order they were queued, each by the first request it
        applies to. Summary failures apply to summarization requests by default (`on`),
        the others to any request. `retry_after` is the header of a rate limit,
        `after_deltas` moves an HTTP error (or a disconnect) into the stream, `delay` is
        the per-delta delay of `slow`, `text` replaces the default malformed summary.
        """
        if times < 1:
            raise ValueError("times must be at least 1")
        target: Target = on or ("summary" if kind in SUMMARY_KINDS else "any")
        failure = Failure(
            kind=kind,
            on=target,
            wire=wire,
            times=times,
            retry_after=retry_after,
            after_deltas=after_deltas,
            delay=delay if kind == "slow" else 0.0,
            text=text,
        )
        with self._lock:
            self._failures.append(failure)

    @property
    def pending_failures(self) -> list[Failure]:
        with self._lock:
            return list(self._failures)

    def take_failure(self, wire: Wire, is_summary: bool) -> Failure | None:
        """The next queued failure that applies to this request, used up once."""
        with self._lock:
            for failure in self._failures:
                if failure.applies_to(wire, is_summary):
                    failure.times -= 1
                    if failure.times == 0:
                        self._failures.remove(failure)
                    return failure
        return None

    # --- records ---------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a snapshot)."""
        with self._lock:
            return list(self._requests)

    def assert_no_errors(self) -> None:
        """Fail with the first exception a responder raised (other than ProviderErrors).

        Such exceptions (a bug in a test's callable, a `ScriptExhausted`) reach the client
        as a 500, which the code under test may retry or swallow; this brings them back.
        """
        with self._lock:
            errors = list(self.errors)
        if errors:
            raise AssertionError(
                f"the fake provider's responder failed: {errors[0]!r}"
            ) from errors[0]

    def record(self, record: RecordedRequest) -> None:
        """Keep a request for `requests` (the app calls this as soon as it is parsed)."""
        with self._lock:
            self._requests.append(record)

    def reset(self) -> None:
        """Forget requests, queued failures, responder errors and the prompt cache."""
        with self._lock:
            self._requests.clear()
            self._failures.clear()
            self.errors.clear()
            self.listing_requests.clear()
        if self.cache is not None:
            self.cache.clear()

    # --- usage -----------------------------------------------------------------------

    def usage(
        self, model: str, wire: Wire, fixed: int, elements: list[Element], output_tokens: int
    ) -> Usage:
        """The usage of one call: the fake tokenizer's prompt count split by the cache."""
        total = fixed + sum(e.tokens for e in elements)
        if self.cache is None:
            return Usage(input_tokens=total, output_tokens=output_tokens)
        if wire == "anthropic":
            outcome = self.cache.anthropic(model, fixed, elements)
        else:
            outcome = self.cache.openai(model, fixed, elements)
        return Usage(
            input_tokens=outcome.uncached,
            output_tokens=output_tokens,
            cache_read_tokens=outcome.cache_read,
            cache_creation_tokens=outcome.cache_creation,
        )
