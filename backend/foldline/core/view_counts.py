"""A view's count as a sum of stored per-message counts.

The model's view is `[head] + repair_pairs(view_message(m) for m in tail)`, where the
head is the summary message (with the pins the fold moved out of the view) and the
tail the display messages from `apiStartIndex`. Counting it from scratch encodes every
message again; instead each stored message's count (of `view_message(m)`, what the
view holds for it) is written once beside it, and a view's count is a sum over the
range plus the head, counted as its own pieces.

Pair repair is the one step that can make the view differ from the stored messages,
and it works group by group: a user message alone, an assistant message with the run
of tool messages after it, a stray tool message. Each stored message therefore also
keeps its *shape* (its call ids, its result ids, or a mark that repair would change it
whatever its neighbours), and `irregular_spans` finds from the shapes alone the few
groups repair would change. Only those are loaded and repaired; every other message
counts as stored. So the sum is exactly the count of the view `build_api_messages`
makes, at the cost of reading a few bytes per message instead of decoding it.
"""

from __future__ import annotations

from collections.abc import Sequence

from foldline.core.messages import Message, ToolCallPart, ToolResultPart

ALTERED = "!"
"""The shape of a message pair repair changes whatever comes before or after it."""
SEPARATOR = "\x1f"
"""Between the ids of a shape (an id holding it makes the message `ALTERED`: counted
afresh, never wrongly)."""


def _ids(ids: list[str]) -> str:
    if any(SEPARATOR in i or i == ALTERED for i in ids):
        return ALTERED
    return SEPARATOR.join(ids)


def message_shape(message: Message) -> str:
    """What pair repair looks at in `message`, as a short string: its call ids
    (assistant; '' for none), its result ids (tool), '' (user), or `ALTERED`."""
    calls = [p.id for p in message.parts if isinstance(p, ToolCallPart)]
    results = [p.call_id for p in message.parts if isinstance(p, ToolResultPart)]
    if message.role == "user":
        return ALTERED if calls or results else ""
    if message.role == "assistant":
        if results or not message.parts or len(set(calls)) != len(calls):
            return ALTERED
        return _ids(calls)
    if calls or not results:
        return ALTERED
    return _ids(results)


def _group_regular(shapes: Sequence[str]) -> bool:
    """Whether repair leaves an assistant message and its tool run (`shapes[0]` and
    the rest) unchanged: every call answered exactly once, nothing else answered."""
    if any(shape == ALTERED for shape in shapes):
        return False
    calls = shapes[0].split(SEPARATOR) if shapes[0] else []
    answered = [call_id for shape in shapes[1:] for call_id in shape.split(SEPARATOR)]
    return len(answered) == len(set(answered)) and set(answered) == set(calls)


def irregular_spans(rows: Sequence[tuple[str, str]]) -> list[tuple[int, int]]:
    """The [begin, end) index ranges of `rows` (role, shape), in order, that pair
    repair would change: each a whole repair group, to be repaired and counted afresh."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(rows):
        role, shape = rows[i]
        end = i + 1
        if role == "assistant":
            while end < len(rows) and rows[end][0] == "tool":
                end += 1
            # The common case first: an answer without calls, nothing after it.
            regular = shape == "" if end == i + 1 else _group_regular([s for _, s in rows[i:end]])
        else:
            # A user message stands alone; a tool message here follows no assistant
            # message of the view, so repair drops it.
            regular = role == "user" and shape != ALTERED
        if not regular:
            spans.append((i, end))
        i = end
    return spans
