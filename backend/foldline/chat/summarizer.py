"""The summarizer a fold calls: its requests shaped after the conversation's own.

`make_summarizer` turns an engine `SummaryRequest` into a model request: a tool-less one
of its own, or, for a summary asked after the view, the conversation's own request
(`ConversationPrefix`) with the question last, so the provider's prompt cache (or a
local server's kept prompt) reads the view back. `within_summarizer_window` writes a fold
again within a smaller budget when the summarizer refused a request as too large.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from foldline.chat.context import ConversationContext
from foldline.chat.local_servers import LocalModelProvider
from foldline.chat.summary_calibration import SummaryCallObserver
from foldline.core.compaction import Summarizer, SummaryRequest, summary_max_tokens
from foldline.core.fold_inputs import FoldInputs
from foldline.core.messages import Message, TextPart, ToolSpec
from foldline.core.reasoning import Effort
from foldline.providers.base import ModelRequest, Provider, ProviderError, TextDelta, Usage

OVERFLOW_ATTEMPTS = 5
"""Summaries tried after the summarizer refused a request as larger than its window,
each within a smaller budget (so in more, smaller parts)."""

T = TypeVar("T")


@dataclass(frozen=True)
class ConversationPrefix:
    """What the conversation's turn sends before its new message: a summary asked after
    the view sends exactly this (the same system prompt, tools, view, cache key and
    breakpoints), so the provider's prompt cache reads it back."""

    system: str
    tools: list[ToolSpec]
    view: list[Message]
    cache_key: str
    stable_prefix: int
    images: bool
    reasoning_effort: Effort

    def request(self, model: str, request: SummaryRequest) -> ModelRequest:
        """The conversation's request with `request.prompt` as its last user message.
        After a person's message or tool results, the prompt joins that message: the
        wire's turns keep alternating, and the bytes before it are unchanged."""
        ask = TextPart(text=request.prompt)
        view = list(self.view)
        if view and view[-1].role == "user":
            last = view[-1]
            view[-1] = last.model_copy(update={"parts": (*last.parts, ask)})
        else:
            view.append(Message(role="user", parts=(ask,)))
        return self.view_request(model, request.max_output_tokens, view)

    def view_request(
        self, model: str, max_output_tokens: int, view: list[Message] | None = None
    ) -> ModelRequest:
        """The conversation's request with `view` (its own view when None)."""
        return ModelRequest(
            model=model,
            system=self.system,
            messages=list(self.view) if view is None else view,
            tools=list(self.tools),
            max_output_tokens=max_output_tokens,
            cache_key=self.cache_key,
            images=self.images,
            stable_prefix=self.stable_prefix,
            reasoning_effort=self.reasoning_effort,
        )


def local_prefix_cache(provider: Provider, model: str) -> bool:
    """The provider is a local server that keeps the conversation's prompt cached."""
    return isinstance(provider, LocalModelProvider) and provider.keeps_prompt_prefix(model)


def conversation_prefix(
    ctx: ConversationContext,
    provider: Provider,
    summarizer_model: str,
    *,
    keeps_prompt: bool | None = None,
) -> ConversationPrefix | None:
    """The prefix a summary may be asked after, or None when it must be asked on its own:
    the summarizer is another model (it has no cache of this conversation); the provider
    is a compatible server not known to keep its last prompt (no prompt cache: the whole
    view would be evaluated again for the summary); or, on Anthropic, the summary's
    reasoning effort differs from the turn's (a change of the thinking settings drops
    the cached messages). A recognised local server keeps the prompt the last turn sent,
    so there the summary after the view is the cheap one (`keeps_prompt_prefix`).
    `keeps_prompt`: `local_prefix_cache` as the caller already asked it (None: ask)."""
    if summarizer_model != ctx.model.model:
        return None
    if getattr(provider, "compatible", False):
        if keeps_prompt is None:
            keeps_prompt = local_prefix_cache(provider, summarizer_model)
        if not keeps_prompt:
            return None
    effort = ctx.settings.reasoning_effort
    if provider.wire == "anthropic" and effort != ctx.reasoning_effort:
        return None
    return ConversationPrefix(
        system=ctx.system,
        tools=list(ctx.tools),
        view=list(ctx.view),
        cache_key=ctx.conversation.id,
        stable_prefix=1 if ctx.state else 0,
        images=ctx.model.vision,
        reasoning_effort=effort,
    )


def make_summarizer(
    provider: Provider,
    model: str,
    on_usage: Callable[[Usage], None] | None = None,
    effort: Effort = "off",
    on_call: SummaryCallObserver | None = None,
    prefix: ConversationPrefix | None = None,
) -> Summarizer:
    """An engine `Summarizer` that asks the provider with a tool-less request, or, for a
    request after the view, with the conversation's own request (`prefix`) and the
    prompt last; each call's usage goes to `on_usage` (so a fold's cost can be stored
    with it). `effort` is `[compaction] reasoning_effort`: summaries are made without
    reasoning by default. Tool calls in an answer are ignored: only its text counts."""

    async def summarize(request: SummaryRequest) -> str:
        if request.after_view and prefix is not None:
            model_request = prefix.request(model, request)
        else:
            model_request = ModelRequest(
                model=model,
                system=request.system,
                messages=[request.message()],
                tools=[],
                max_output_tokens=request.max_output_tokens,
                # The request holds files only for a summarizer that reads them.
                images=bool(request.files),
                reasoning_effort=effort,
            )
        chunks: list[str] = []
        async for event in provider.stream(model_request):
            if isinstance(event, TextDelta):
                chunks.append(event.text)
            elif isinstance(event, Usage):
                if on_usage is not None:
                    on_usage(event)
                if on_call is not None:  # a calibration sample (chat/summary_calibration.py)
                    on_call(model_request, event)
        return "".join(chunks)

    return summarize


async def within_summarizer_window(
    write: Callable[[FoldInputs, Summarizer], Awaitable[T]],
    inputs: FoldInputs,
    summarize: Summarizer,
    failed: Callable[[T], bool],
) -> T:
    """`write(inputs, summarize)`, written again within a smaller summarizer budget
    while it `failed` because the summarizer refused a request as larger than its window
    (a summarizer whose window is smaller than known, or an estimate that ran low): the
    room the error names, else half the budget before. The last result is returned."""
    overflows: list[ProviderError] = []

    async def noting_overflows(request: SummaryRequest) -> str:
        try:
            return await summarize(request)
        except ProviderError as error:
            if error.code == "context_overflow":
                overflows.append(error)
            raise

    summary_max = summary_max_tokens(inputs)
    capacity = inputs.summarizer_budget
    if capacity is None and inputs.budget.input_budget is not None:
        capacity = inputs.budget.input_budget - summary_max
    result = await write(inputs, noting_overflows)
    for _attempt in range(OVERFLOW_ATTEMPTS - 1):
        if not overflows or not failed(result):
            return result
        smaller = (capacity or 1 << 20) // 2
        limit = overflows[-1].context_limit
        if limit:
            smaller = min(smaller, (limit - summary_max) * 3 // 4)
        if smaller < 1024:
            return result
        capacity = smaller
        overflows.clear()
        result = await write(replace(inputs, summarizer_budget=capacity), noting_overflows)
    return result
