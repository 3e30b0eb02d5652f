"""What a running MCP call shows the person: its progress, and the server's questions.

A server's request for input (elicitation) carries no conversation: it arrives on the
server's session while one of its calls runs. `ActiveCalls` knows which calls run on
which server, so the question goes to the newest one's conversation, on that call's
card, with the server named. With no call running (a server asking out of the blue) the
answer is "cancel": nobody would see the question.

The answers are kept with the call: `RunningCall.annotate` appends them to the tool's
result, so the tool card shows what the person answered and the model knows it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from foldline.api.events import ElicitationRequired, ElicitationResolved, ToolProgress
from foldline.chat import events as ev
from foldline.chat.events import ChatEvent
from foldline.chat.tool_registry import ToolEnv, ToolOutcome
from foldline.core.messages import ToolCallPart
from foldline.mcp.elicitation import Answer, Elicitations, PendingElicitation, is_web_page

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_SECONDS = 0.2
"""Progress events are thinned to about five a second: a chatty server must not flood
the stream."""


@dataclass
class RunningCall:
    server: str
    conversation_id: str
    call_id: str
    emit: Callable[[ChatEvent], None]
    answers: list[str] = field(default_factory=list)

    def annotate(self, outcome: ToolOutcome) -> ToolOutcome:
        if not self.answers:
            return outcome
        note = "\n".join(self.answers)
        return ToolOutcome(
            f"{outcome.output}\n\n{note}",
            is_error=outcome.is_error,
            attachments=outcome.attachments,
            compact=outcome.compact,
        )


class ActiveCalls:
    """The calls running on each server, newest last, and the questions waiting."""

    def __init__(self) -> None:
        self._running: list[RunningCall] = []
        self.elicitations = Elicitations()
        self.open_url: Callable[[str], Any] | None = None

    @contextlib.contextmanager
    def running(self, server: str, env: ToolEnv, call: ToolCallPart) -> Iterator[RunningCall]:
        entry = RunningCall(server, env.conversation_id, call.id, env.emit)
        self._running.append(entry)
        try:
            yield entry
        finally:
            self._running.remove(entry)
            # A question the server left open when its call ended (Stop, a timeout) is
            # dropped: the server reads "cancel", the form goes away.
            self.elicitations.drop(env.conversation_id, call.id)

    def newest(self, server: str) -> RunningCall | None:
        return next((c for c in reversed(self._running) if c.server == server), None)


async def ask_person(calls: ActiveCalls, server: str, params: Any) -> Any:
    """A server's `elicitation/create`, shown on the chat; the person's answer back."""
    import mcp_types

    running = calls.newest(server)
    if running is None:
        log.info("MCP server %s asked a question while none of its calls ran", server)
        return mcp_types.ElicitResult(action="cancel")
    is_url = isinstance(params, mcp_types.ElicitRequestURLParams)
    if is_url and not is_web_page(params.url):
        # Never shown: accepting would hand the URL to the system's opener.
        log.warning("MCP server %s asked to open %r: refused", server, params.url[:200])
        running.answers.append(
            f"[The MCP server {server} asked the person to open {params.url[:200]!r}, "
            "which is not a web page (http or https); it was declined without asking.]"
        )
        return mcp_types.ElicitResult(action="decline")
    pending = calls.elicitations.ask(
        PendingElicitation(
            id="",
            conversation_id=running.conversation_id,
            call_id=running.call_id,
            server=server,
            message=params.message,
            mode="url" if is_url else "form",
            schema={} if is_url else dict(params.requested_schema),
            url=params.url if is_url else None,
        )
    )
    running.emit(ev.ElicitationRequired(required_event(pending)))
    answer = Answer("cancel")
    try:
        answer = await calls.elicitations.wait(pending)
    finally:
        running.emit(
            ev.ElicitationResolved(
                ElicitationResolved(
                    call_id=pending.call_id, elicitation_id=pending.id, action=answer.action
                ),
            )
        )
        running.answers.append(_answer_note(pending, answer))
    if is_url and answer.action == "accept" and calls.open_url is not None and pending.url:
        await asyncio.to_thread(calls.open_url, pending.url)
    return mcp_types.ElicitResult(action=answer.action, content=answer.content)


def required_event(pending: PendingElicitation) -> ElicitationRequired:
    return ElicitationRequired(
        call_id=pending.call_id,
        elicitation_id=pending.id,
        server=pending.server,
        message=pending.message,
        mode=pending.mode,
        requested_schema=pending.schema,
        url=pending.url,
    )


def _answer_note(pending: PendingElicitation, answer: Answer) -> str:
    what = {"accept": "answered", "decline": "declined", "cancel": "dismissed"}[answer.action]
    note = f"[The MCP server {pending.server} asked the person: {pending.message!r}; they {what}"
    if pending.mode == "url" and answer.action == "accept":
        note += " and opened the page"
    if answer.content:
        note += f": {json.dumps(answer.content, ensure_ascii=False)}"
    return note + ".]"


def progress_reporter(env: ToolEnv, call_id: str) -> Callable[..., Any]:
    """The progress callback of one call: `tool.progress` events, thinned."""
    loop = asyncio.get_running_loop()
    last = [0.0]

    async def report(progress: float, total: float | None, message: str | None) -> None:
        now = loop.time()
        finished = total is not None and progress >= total
        if now - last[0] < PROGRESS_INTERVAL_SECONDS and not finished:
            return
        last[0] = now
        env.emit(
            ev.ToolProgress(
                ToolProgress(call_id=call_id, progress=progress, total=total, message=message),
            )
        )

    return report
