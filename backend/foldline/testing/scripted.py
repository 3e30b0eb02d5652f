"""`ScriptedModel`: a fake `Provider` that answers from a queue of scripted steps.

In the style of pydantic-ai's `FunctionModel`/`TestModel` and openai-agents-python's
`FakeModel`: a test lists what the model will answer, runs the code under test, then
inspects `.calls` (every `ModelRequest` the model received) and calls
`assert_complete()` to prove every scripted answer was used.

    model = ScriptedModel(
        tool_step(call("read_file", {"path": "a.txt"})),
        text_step("The file says hello."),
        summaries=structured_summary,
    )
    ... run a turn with `model` as the provider ...
    assert model.calls[1].messages[-1].role == "tool"
    model.assert_complete()

Summarization requests (recognised by `is_summary`, by default
`looks_like_summary_request`) are answered by `summaries` when it is given, without
consuming the queue, so a test can script the conversation and let folds happen
whenever the code under test decides.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Literal, TypeAlias

from foldline.providers.base import (
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    Stop,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from foldline.testing.codec import Wire
from foldline.testing.fake_tokenizer import FakeTokenizer
from foldline.testing.steps import (
    Reply,
    Step,
    echo_reply,
    looks_like_summary_request,
    resolve_step,
)

WhenEmpty: TypeAlias = Literal["error", "echo"] | Callable[[ModelRequest], Step]
"""What a script answers once its queue is empty: raise `ScriptExhausted`, echo the last
user message, or whatever a function of the request returns."""

SummaryAnswer: TypeAlias = str | Callable[[ModelRequest], Step]
"""A canned summary text, or a function of the summarization request."""


class ScriptExhausted(AssertionError):
    """A scripted model received a request after its last step.

    An AssertionError, because it means the code under test made more model calls than
    the test expected; it is raised from the model call so the test fails right there.
    """


class ScriptedModel:
    """A fake `Provider`: scripted answers streamed as provider events; records calls."""

    def __init__(
        self,
        *steps: Step,
        wire: Wire = "openai",
        name: str = "scripted",
        when_empty: WhenEmpty = "error",
        summaries: SummaryAnswer | None = None,
        is_summary: Callable[[ModelRequest], bool] = looks_like_summary_request,
        tokenizer: FakeTokenizer | None = None,
    ) -> None:
        self.name = name
        self.wire: Wire = wire
        self.when_empty = when_empty
        self.summaries = summaries
        self.is_summary = is_summary
        self.tokenizer = tokenizer or FakeTokenizer()
        self.calls: list[ModelRequest] = []
        """Every request received, in order (summaries included)."""
        self.summary_calls: list[ModelRequest] = []
        """The requests answered by `summaries` (a subset of `calls`)."""
        self._steps: deque[Step] = deque(steps)
        self._call_ids = itertools.count(1)
        # The fake HTTP server takes steps on its own thread while the test thread may
        # add more between requests; the lock keeps queue and records consistent.
        self._lock = threading.Lock()

    # --- the script ------------------------------------------------------------------

    def add(self, *steps: Step) -> ScriptedModel:
        """Append steps to the queue; returns self so calls can be chained."""
        with self._lock:
            self._steps.extend(steps)
        return self

    @property
    def remaining(self) -> int:
        """How many scripted steps have not been used yet."""
        with self._lock:
            return len(self._steps)

    def assert_complete(self) -> None:
        """Fail when scripted steps remain: the code under test made fewer calls."""
        with self._lock:
            left = list(self._steps)
        if left:
            shown = ", ".join(_describe(s) for s in left[:5])
            more = f" and {len(left) - 5} more" if len(left) > 5 else ""
            raise AssertionError(
                f"{len(left)} scripted step(s) never used after {len(self.calls)} call(s): "
                f"{shown}{more}"
            )

    def reset(self, *steps: Step) -> None:
        """Forget the calls and replace the queue by `steps`."""
        with self._lock:
            self._steps = deque(steps)
            self.calls.clear()
            self.summary_calls.clear()

    def next_step(self, request: ModelRequest) -> Reply | BaseException:
        """Record `request` and decide its answer (a Reply, or an exception to raise)."""
        with self._lock:
            self.calls.append(request)
            if self.summaries is not None and self.is_summary(request):
                self.summary_calls.append(request)
                step: Step = self.summaries
            elif self._steps:
                step = self._steps.popleft()
            elif self.when_empty == "echo":
                step = echo_reply
            elif self.when_empty == "error":
                step = ScriptExhausted(
                    f"the script is empty but the model received call {len(self.calls)} "
                    f"(model={request.model!r}, {len(request.messages)} message(s))"
                )
            else:
                step = self.when_empty
        # Dynamic steps run outside the lock: they may inspect this model (e.g. `.calls`).
        # Tool-call ids are left to the transport: `stream` and the fake server give ids
        # in their own style to calls scripted without one.
        return resolve_step(step, request)

    def _next_call_id(self) -> str:
        return f"call_scripted_{next(self._call_ids)}"

    # --- the Provider interface -------------------------------------------------------

    def usage_for(self, request: ModelRequest, reply: Reply) -> Usage:
        """The usage reported for `reply`: the scripted one, else the fake tokenizer's."""
        if reply.usage is not None:
            return reply.usage
        return Usage(
            input_tokens=self.tokenizer.count_model_request(request, self.wire),
            output_tokens=self.tokenizer.count_output(reply),
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Stream the next scripted answer as provider events.

        Order: reasoning deltas (then one empty delta carrying the signature), text
        deltas, the scripted error if any, tool calls, usage, stop. Every delta is
        preceded by an await, so a consumer can be cancelled in the middle of a stream.
        """
        outcome = self.next_step(request)
        if isinstance(outcome, BaseException):
            raise outcome
        reply = outcome.with_call_ids(self._next_call_id)
        for chunk in reply.reasoning_chunks():
            await asyncio.sleep(reply.delay)
            yield ReasoningDelta(text=chunk)
        if reply.reasoning:
            yield ReasoningDelta(text="", signature=reply.reasoning_signature)
        for chunk in reply.text_chunks():
            await asyncio.sleep(reply.delay)
            yield TextDelta(text=chunk)
        if reply.error is not None:
            raise reply.error
        for tool_call in reply.tool_calls:
            yield ToolCallEvent(id=tool_call.id, name=tool_call.name, input=dict(tool_call.input))
        yield self.usage_for(request, reply)
        yield Stop(reason=reply.stop_reason, raw=reply.stop_reason)

    def warm_up(self) -> None:
        """Nothing to build: no SDK behind it."""

    async def aclose(self) -> None:
        """No connections to close."""


def _describe(step: Step) -> str:
    if isinstance(step, Reply):
        if step.error is not None:
            return f"error {step.error!r}"
        if step.tool_calls:
            return "tool calls " + ", ".join(c.name for c in step.tool_calls)
        return f"text {step.text[:30]!r}"
    if isinstance(step, str):
        return f"text {step[:30]!r}"
    if isinstance(step, BaseException):
        return f"error {step!r}"
    return f"dynamic {getattr(step, '__name__', repr(step))}"
