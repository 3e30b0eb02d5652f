"""The SSE wire of every event kind, byte for byte.

One event of each kind goes through the server's own encoder (`turn_event_stream`) and
FastAPI's SSE response; the bytes must be those `tests/data/sse_every_event.txt` holds,
captured from the encoder before events became typed, so the frontend and docs/api.md
read exactly what they read before. Each event then reads back as itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import assert_never

from fastapi import FastAPI
from fastapi.sse import EventSourceResponse, ServerSentEvent
from fastapi.testclient import TestClient

from foldline.api import events as bodies
from foldline.api.schemas import SummarizedRangeOut, UsageOut
from foldline.api.schemas_context import (
    ContextBreakdown,
    ContextStatsOut,
    ConversationUsageOut,
    Thresholds,
)
from foldline.chat import events as ev
from foldline.chat.events import EVENT_KINDS, ChatEvent, event_from_wire
from foldline.chat.turn_handle import TurnHandle
from foldline.core.messages import Message, TextPart, ToolCallPart, ToolResultPart
from foldline.server.sse import turn_event_stream
from foldline.store import MessageRecord

from .conftest import parse_events

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "sse_every_event.txt"

NO_USAGE = UsageOut(
    input_tokens=0,
    output_tokens=0,
    cache_read_tokens=0,
    cache_creation_tokens=0,
    cost=None,
    saved=None,
    calls=1,
)
STATS = ContextStatsOut(
    tokens=7,
    input_budget=100,
    context_window=128,
    working_budget=None,
    window_budget=100,
    fraction=0.07,
    exact=True,
    breakdown=ContextBreakdown(system=1, tools=2, summary=0, messages=4),
    thresholds=Thresholds(soft=0.8, hard=0.95),
    model="test-model",
    model_known=True,
    model_lifecycle=None,
    model_replacement=None,
    version=0,
    messages_in_view=1,
    messages_in_history=1,
    usage=ConversationUsageOut(total=NO_USAGE, last_turn=NO_USAGE, priced=False),
    background_fold=None,
)
# Text with what JSON and SSE must escape: non-ASCII, a line separator, quotes, a newline.
RECORD = MessageRecord(
    id="m1",
    conversation_id="c1",
    seq=3,
    message=Message(role="assistant", parts=(TextPart(text='Ünïcode \u2028 "quoted"\nline'),)),
    status="complete",
    usage=None,
    token_count=12,
    created_at="2026-01-01T00:00:00Z",
    updated_at="2026-01-01T00:00:01Z",
    error=None,
    parent_id="m0",
)
CALL = ToolCallPart(id="call1", name="echo", input={"a": [1, 2.5, None, True]})
RESULT = ToolResultPart(call_id="call1", name="echo", output="out", is_error=False)
FOLD = bodies.CompactionCompleted(
    version=2,
    strategy="structured",
    trigger="auto",
    turn=8,
    tokens_before=900,
    tokens_after=300,
    api_start_index=6,
    summarized_range=SummarizedRangeOut(from_index=0, to_index=5, message_count=6),
    degraded=False,
    details_total=3,
    details_kept=3,
    details_appended=0,
    prepared=True,
)


def every_kind() -> list[ChatEvent]:
    """One event of each kind (two where the body has a form of its own)."""
    return [
        ev.MessageCreated(bodies.MessageEvent.of(RECORD, 2, ["m1", "m9"])),
        ev.AssistantDelta(bodies.AssistantDelta(message_id="m1", kind="text", text="hé\n")),
        ev.AssistantDelta(bodies.AssistantDelta(message_id="m1", kind="reasoning", text="hm")),
        ev.ToolCall(bodies.ToolCallEventOut.of("m1", CALL)),
        ev.ToolResult(bodies.ToolResultEventOut.of("m2", RESULT)),
        ev.ApprovalRequired(
            bodies.ApprovalRequired(
                call_id="call1", server="s", tool="t", name="s__t", arguments={"x": 1}
            )
        ),
        ev.ApprovalResolved(bodies.ApprovalResolved(call_id="call1", decision="always")),
        ev.ElicitationRequired(
            bodies.ElicitationRequired(
                call_id="call1",
                elicitation_id="e1",
                server="s",
                message="Name?",
                mode="form",
                requested_schema={"type": "object"},
            )
        ),
        ev.ElicitationResolved(
            bodies.ElicitationResolved(call_id="call1", elicitation_id="e1", action="decline")
        ),
        ev.ToolProgress(
            bodies.ToolProgress(call_id="call1", progress=0.5, total=None, message="half")
        ),
        ev.Notice(bodies.Notice(code="mcp_server_failed", server="s", message="It failed.")),
        ev.Usage(
            bodies.UsageEvent(
                message_id="m1",
                input_tokens=10,
                output_tokens=5,
                cache_read_tokens=1,
                cache_creation_tokens=2,
                total_input=13,
                reasoning_tokens=0,
            )
        ),
        ev.ContextStats(STATS),
        ev.CompactionStarted(
            bodies.CompactionStarted(trigger="auto", reason="Over the threshold.", prepared=True)
        ),
        ev.CompactionCompleted(FOLD),
        ev.CompactionFailed(bodies.CompactionFailed(trigger="manual", reason="Nothing to fold.")),
        ev.PruneCompleted(bodies.PruneCompleted(pruned_calls=2, reclaimed_tokens=400)),
        ev.MessageCompleted(bodies.MessageEvent.of(RECORD, 2)),
        ev.Error(bodies.ErrorEvent(code="rate_limited", message="Slow down.", retryable=True)),
        ev.Done(bodies.Done(cancelled=True)),
        ev.Done(),
    ]


def what_it_tells(event: ChatEvent) -> str:
    """A reader that handles every kind: a kind added to `ChatEvent` and not handled here
    fails the type check (and this test, at `assert_never`)."""
    match event:
        case ev.MessageCreated() | ev.MessageCompleted():
            return f"message {event.body.message.id}"
        case ev.AssistantDelta():
            return f"{event.body.kind} {event.body.text!r}"
        case ev.ToolCall():
            return f"call {event.body.name}"
        case ev.ToolResult() | ev.ApprovalRequired() | ev.ApprovalResolved():
            return f"{event.name} of {event.body.call_id}"
        case ev.ElicitationRequired() | ev.ElicitationResolved():
            return f"question {event.body.elicitation_id}"
        case ev.ToolProgress():
            return f"progress {event.body.progress}"
        case ev.Notice() | ev.Error():
            return event.body.code
        case ev.Usage():
            return f"{event.body.total_input} in"
        case ev.ContextStats():
            return f"{event.body.tokens} tokens"
        case ev.CompactionStarted() | ev.CompactionFailed():
            return event.body.reason
        case ev.CompactionCompleted():
            return f"fold v{event.body.version}"
        case ev.PruneCompleted():
            return f"{event.body.pruned_calls} pruned"
        case ev.Done():
            return "stopped" if event.body.cancelled else "done"
        case _:
            assert_never(event)


def wire_of(events: list[ChatEvent]) -> bytes:
    """The bytes a route streaming these events sends."""
    app = FastAPI()

    @app.get("/events", response_class=EventSourceResponse)
    async def stream() -> AsyncIterator[ServerSentEvent]:
        turn = TurnHandle("c1")
        for event in events:
            turn.publish(event)
        turn.close()
        async for sent in turn_event_stream(turn):
            yield sent

    with TestClient(app) as client:
        return client.get("/events").content


def test_every_kind_is_sent_byte_for_byte_as_before() -> None:
    events = every_kind()
    assert {type(event) for event in events} == set(EVENT_KINDS)
    assert wire_of(events) == GOLDEN.read_bytes()


def test_every_kind_reads_back_as_itself() -> None:
    events = every_kind()
    read = [event_from_wire(e.name, e.data) for e in parse_events(wire_of(events).decode())]
    assert read == events
    assert [what_it_tells(event) for event in read][:2] == ["message m1", "text 'hé\\n'"]
    assert what_it_tells(read[-2]) == "stopped"
