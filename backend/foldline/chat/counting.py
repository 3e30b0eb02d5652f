"""Counting the model's view without recounting history.

Each stored message is counted once per tokenizer and the count is stored beside it
(`store/counts.py`); a view's count is then the framing (system prompt and tools), the
head of the view (the summary with its pins and whatever else rides after it, each a
piece of its own), and a sum over the stored counts of the messages from
`apiStartIndex` on. Pair repair can change a few of those messages; their groups are
found from the stored shapes (`core.view_counts`) and only they are repaired and
counted afresh. Calibration (`core.tokens.ScaledCounter.scale_message`) is applied on
top of the raw counts, to their text only (each count carries its media tokens: images
and PDF page images, billed by formula), so a new ratio after every call invalidates
nothing.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from foldline import __version__
from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from foldline.core.tokens import TokenCounter
from foldline.core.tokens.counter import media_tokens
from foldline.core.view import mark_unanswered, repair_pairs, view_message
from foldline.core.view_counts import irregular_spans, message_shape
from foldline.store import MessageRecord
from foldline.store.counts import NewCount


class CachedCounter:
    """A raw counter with cached counts of the system+tools framing and of the view's
    head messages (the summary: thousands of tokens, read on every load).

    It is shared by every turn on the same model, and turns load their context in worker
    threads, so the cache is guarded by a lock.
    """

    def __init__(self, inner: TokenCounter, key: str, max_entries: int = 64) -> None:
        self.inner = inner
        self.key = counter_key(key, inner)
        """Names the tokenizer in the store's `message_counts` (see `counter_key`)."""
        self.exact = inner.exact
        self._heads: OrderedDict[str, int] = OrderedDict()
        self._framing: dict[tuple[str, str], int] = {}
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)

    def count_message(self, message: Message) -> int:
        return self.inner.count_message(message)

    def media_tokens(self, message: Message) -> int:
        return media_tokens(self.inner, message)

    def count_head(self, message: Message) -> int:
        """The count of a head message, cached by its content."""
        key = message.model_dump_json()
        with self._lock:
            cached = self._heads.get(key)
            if cached is not None:
                self._heads.move_to_end(key)
                return cached
        count = self.inner.count_message(message)
        with self._lock:
            self._heads[key] = count
            if len(self._heads) > self._max_entries:
                self._heads.popitem(last=False)
        return count

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return self.inner.count_tools(tools)

    def framing(self, system: str, tools: Sequence[ToolSpec]) -> int:
        key = (system, "|".join(tool.model_dump_json() for tool in tools))
        cached = self._framing.get(key)
        if cached is None:
            cached = self._framing[key] = self.inner.count_request(system, [], tools)
        return cached

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int:
        return self.framing(system, tools) + sum(self.count_message(m) for m in messages)


PROBE = (
    Message(role="user", parts=(TextPart(text="Count me: 42, /etc/app.toml, naïve."),)),
    Message(
        role="assistant",
        parts=(
            ReasoningPart(text="Thinking it over.", signature="c2ln"),
            TextPart(text="Reading it."),
            ToolCallPart(id="call_1", name="read_file", input={"path": "a.py", "lines": [1, 2]}),
        ),
    ),
    Message(
        role="tool",
        parts=(
            ToolResultPart(call_id="call_1", name="read_file", output="print('hi')"),
            AttachmentPart(name="a.txt", media_type="text/plain", text="attached"),
            AttachmentPart(name="p.png", media_type="image/png", data_base64="iVBORw0KGgo="),
        ),
    ),
)
"""Messages of every part kind, counted to fingerprint a tokenizer's rules."""


def counter_key(name: str, counter: TokenCounter) -> str:
    """The name under which `counter`'s counts are stored: `name` (model, wire, options)
    and a fingerprint of how it counts every kind of part, so that counts stored by an
    earlier version of the counting rules are never read as current."""
    counts = ",".join(str(counter.count_message(message)) for message in PROBE)
    digest = hashlib.sha256(f"{__version__}|{counts}".encode()).hexdigest()[:12]
    return f"{name}|{digest}"


class TailEntry(NamedTuple):
    """One stored message of the view's tail: its id and role, its stored count, shape
    and media tokens (None when not stored under this counter), and the record when
    loaded. (A tuple: ten thousand of them are made for a long view's count.)"""

    id: str
    role: str
    tokens: int | None
    shape: str | None
    media: int | None = None
    record: MessageRecord | None = None


@dataclass(frozen=True)
class TailCounts:
    counts: list[int]
    """The raw count of every message of the repaired tail, in the view's order."""
    media: list[int]
    """The media tokens of each of `counts` (formula-billed, never calibrated)."""
    new: list[NewCount]
    """Counts made now, to be stored: (message as counted, tokens, shape, media)."""


def tail_counts(
    entries: Sequence[TailEntry],
    counter: CachedCounter,
    load: Callable[[Sequence[str]], Mapping[str, MessageRecord]],
) -> TailCounts:
    """The raw counts (and media tokens) of `repair_pairs([view_message(m) for m in
    tail])`, from the stored counts where they exist; `load` fetches the records of the
    few messages that must be counted or repaired (those not already in `entries`)."""
    wanted = [e.id for e in entries if e.record is None and e.tokens is None]
    loaded = dict(load(wanted)) if wanted else {}
    new: list[NewCount] = []
    tokens: list[int] = []
    media: list[int] = []
    shapes: list[tuple[str, str]] = []
    for entry in entries:
        if entry.tokens is not None and entry.shape is not None:
            tokens.append(entry.tokens)
            media.append(entry.media or 0)
            shapes.append((entry.role, entry.shape))
            continue
        record = entry.record or loaded[entry.id]
        message = view_message(record.message)
        count, files = counter.count_message(message), counter.media_tokens(message)
        shape = message_shape(record.message)
        new.append((record, count, shape, files))
        tokens.append(count)
        media.append(files)
        shapes.append((entry.role, shape))
    spans = irregular_spans(shapes)
    if not spans:
        return TailCounts(
            _with_unanswered_notes(tokens, list(entries), counter, load, loaded), media, new
        )
    wanted = [
        e.id
        for begin, end in spans
        for e in entries[begin:end]
        if e.record is None and e.id not in loaded
    ]
    if wanted:
        loaded.update(load(wanted))
    counts: list[int] = []
    counts_media: list[int] = []
    sources: list[TailEntry | Message] = []
    done = 0
    for begin, end in spans:
        counts.extend(tokens[done:begin])
        counts_media.extend(media[done:begin])
        sources.extend(entries[done:begin])
        group = [view_message((e.record or loaded[e.id]).message) for e in entries[begin:end]]
        repaired = repair_pairs(group)
        counts.extend(counter.count_message(m) for m in repaired)
        counts_media.extend(counter.media_tokens(m) for m in repaired)
        sources.extend(repaired)
        done = end
    counts.extend(tokens[done:])
    counts_media.extend(media[done:])
    sources.extend(entries[done:])
    noted = _with_unanswered_notes(counts, sources, counter, load, loaded)
    return TailCounts(noted, counts_media, new)


def _with_unanswered_notes(
    counts: list[int],
    sources: Sequence[TailEntry | Message],
    counter: CachedCounter,
    load: Callable[[Sequence[str]], Mapping[str, MessageRecord]],
    loaded: dict[str, MessageRecord],
) -> list[int]:
    """`counts` (of the messages `sources` stand for: a stored entry, or a message as
    repaired) with each person's message that `mark_unanswered` marks in the view (one
    followed by another, the last never) counted with its note: a stored count is of the
    message alone, and the note depends on what follows it. Such messages are few (a
    failed turn's question), so they are counted afresh; `loaded` holds the records
    already loaded (and gets the ones loaded here)."""
    roles = [s.role for s in sources]
    marked = [i for i in range(len(roles) - 1) if roles[i] == "user" and roles[i + 1] == "user"]
    if not marked:
        return counts
    wanted = [
        s.id
        for i in marked
        if isinstance(s := sources[i], TailEntry) and s.record is None and s.id not in loaded
    ]
    if wanted:
        loaded.update(load(wanted))
    counts = list(counts)
    for i in marked:
        source = sources[i]
        if isinstance(source, TailEntry):
            source = view_message((source.record or loaded[source.id]).message)
        counts[i] = counter.count_message(mark_unanswered([source, source])[0])
    return counts
