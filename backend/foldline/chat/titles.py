"""Conversation titles: the first message at once, then a short one made by the summarizer.

A new conversation is named after its first message when that message is sent. After the
first exchange (the first answer ended well) the summarizer model writes a title of a few
words in a task of its own, so the turn's `done` does not wait for it. The made title
replaces the first-message title only if that is still the title: a rename by the person
in the meantime wins. A summarizer that fails or answers nothing leaves the first-message
title; its usage is stored like a fold's summarizer calls, attributed to no fold.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from foldline.chat.store_writer import StoreWriter
from foldline.chat.usage import Billing, model_call
from foldline.core.messages import user
from foldline.core.reasoning import Effort
from foldline.providers.base import ModelRequest, Provider, TextDelta, Usage
from foldline.store import MessageRecord, Store

log = logging.getLogger(__name__)

DEFAULT_TITLE = "New conversation"
FIRST_MESSAGE_TITLE_CHARS = 60
MADE_TITLE_CHARS = 80
INPUT_CHARS = 1500
"""Each of the first message and the answer's beginning is cut to this for the request."""
MAX_TITLE_OUTPUT_TOKENS = 64
FIRST_EXCHANGE_MESSAGES = 60
"""A history longer than this is past its first exchange (a tool loop included)."""

TITLE_SYSTEM = (
    "You name conversations. Reply with a title of two to six words that says what the "
    "conversation below is about, in the language of the person's message. Reply with the "
    "title only: no quotes, no trailing punctuation, no explanation."
)


def first_message_title(content: str) -> str:
    """The first line of the first message, whitespace collapsed, cut with an ellipsis."""
    lines = content.strip().split("\n")
    line = " ".join(lines[0].split()) if lines else ""
    if len(line) > FIRST_MESSAGE_TITLE_CHARS:
        return f"{line[: FIRST_MESSAGE_TITLE_CHARS - 3].rstrip()}…"
    return line


def clean_title(answer: str) -> str:
    """The summarizer's answer as a title: its first non-empty line, without a "Title:"
    label, quotes, Markdown emphasis or trailing punctuation; empty when nothing is left."""
    line = next((line for line in answer.splitlines() if line.strip()), "")
    line = re.sub(r"^\s*(#+\s*)?(title\s*:\s*)?", "", line, flags=re.IGNORECASE)
    line = " ".join(line.split()).strip("\"'`*_“”‘’«» ")
    line = line.rstrip(".!?:;,。 ").strip("\"'`*_“”‘’«» ")
    if len(line) > MADE_TITLE_CHARS:
        line = line[:MADE_TITLE_CHARS].rsplit(" ", 1)[0].rstrip(".,;: ")
    return line


def title_prompt(question: str, answer: str) -> str:
    return (
        f"The person wrote:\n{question[:INPUT_CHARS]}\n\n"
        f"The answer began:\n{answer[:INPUT_CHARS]}\n\nTitle:"
    )


def first_exchange(records: list[MessageRecord]) -> tuple[str, str] | None:
    """(first message, the answer's text) when the history is one exchange, else None."""
    users = [r for r in records if r.message.role == "user"]
    if len(users) != 1 or records[0].message.role != "user":
        return None
    answer = "\n".join(
        r.message.text for r in records if r.message.role == "assistant" and r.message.text
    )
    return users[0].message.text, answer


@dataclass
class BackgroundTitles:
    """The title requests running in the background, one per conversation at most."""

    store: Store
    writes: StoreWriter
    """The chat service's ordered writer: a title and its bill land after the turn's writes."""
    on_titled: Callable[[str], None] = lambda _conversation_id: None
    """Called (on the event loop) with a conversation that got its made title."""
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def after_turn(
        self,
        conversation_id: str,
        provider: Provider,
        model: str,
        billing: Billing,
        turn: int,
        effort: Effort = "off",
    ) -> None:
        """Start a title request if the turn that ended well was the first exchange and
        the title is still the first message's (checked in the task, off the loop).
        `effort` is `[compaction] reasoning_effort`: titles need no reasoning by default."""
        if conversation_id in self.tasks:
            return
        work = self._make(conversation_id, provider, model, billing, turn, effort)
        task = asyncio.get_running_loop().create_task(work)
        self.tasks[conversation_id] = task
        task.add_done_callback(lambda _task: self.tasks.pop(conversation_id, None))

    def _pending(self, conversation_id: str) -> tuple[str, str, str] | None:
        """(current title, first message, answer) when a title is due, else None."""
        if self.store.message_count(conversation_id) > FIRST_EXCHANGE_MESSAGES:
            return None
        exchange = first_exchange(
            self.store.list_messages(conversation_id, limit=FIRST_EXCHANGE_MESSAGES)
        )
        if exchange is None or not exchange[1].strip():
            return None
        current = self.store.get_conversation(conversation_id).title
        if current != first_message_title(exchange[0]):
            return None  # named by the person (or by an earlier title request)
        return current, *exchange

    async def _make(
        self,
        conversation_id: str,
        provider: Provider,
        model: str,
        billing: Billing,
        turn: int,
        effort: Effort = "off",
    ) -> None:
        try:
            pending = await asyncio.to_thread(self._pending, conversation_id)
        except Exception:  # deleted meanwhile, or the disk failed: no title, no harm
            log.warning("no title for %s", conversation_id, exc_info=True)
            return
        if pending is None:
            return
        expected, question, answer = pending
        request = ModelRequest(
            model=model,
            system=TITLE_SYSTEM,
            messages=[user(title_prompt(question, answer))],
            tools=[],
            max_output_tokens=MAX_TITLE_OUTPUT_TOKENS,
            reasoning_effort=effort,
        )
        chunks: list[str] = []
        usages: list[Usage] = []
        try:
            async for event in provider.stream(request):
                if isinstance(event, TextDelta):
                    chunks.append(event.text)
                elif isinstance(event, Usage):
                    usages.append(event)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("the title request of %s failed", conversation_id, exc_info=True)
            chunks = []  # a half-written title is no title
        if usages:
            calls = [model_call(u, billing, purpose="summary", turn=turn) for u in usages]
            await self.writes.run(self.store.record_calls, conversation_id, calls)
        title = clean_title("".join(chunks))
        if not title:
            return
        if await self.writes.run(self.store.replace_title, conversation_id, expected, title):
            self.on_titled(conversation_id)
        else:
            log.info("the made title of %s was dropped: renamed meanwhile", conversation_id)

    def cancel(self, conversation_id: str) -> None:
        task = self.tasks.pop(conversation_id, None)
        if task is not None:
            task.cancel()

    async def wait(self, conversation_id: str) -> None:
        task = self.tasks.get(conversation_id)
        if task is not None:
            await asyncio.wait({task})

    async def shutdown(self) -> None:
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.tasks.clear()
