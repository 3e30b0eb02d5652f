"""One local slot: a turn goes first, a background request waits and is written again
from the start when a turn takes the slot in the middle; its caller sees it whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from foldline.chat.local_servers import LocalServers
from foldline.chat.slots import SlotScheduler
from foldline.config import parse_config
from foldline.providers.base import ProviderEvent, Stop, TextDelta
from foldline.providers.listing import ModelDirectory


class GatedStream:
    """A background answer in two pieces, the second sent only when `go` is set."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.first_sent = asyncio.Event()
        self.started = 0
        self.closed = 0

    async def __call__(self) -> AsyncIterator[ProviderEvent]:
        self.started += 1
        try:
            yield TextDelta(text="half ")
            self.first_sent.set()
            await self.go.wait()
            yield TextDelta(text="whole")
            yield Stop(reason="end_turn")
        finally:
            self.closed += 1


async def test_a_turn_call_restarts_a_background_request_which_its_caller_gets_whole() -> None:
    scheduler = SlotScheduler(grace=0.0)
    stream = GatedStream()
    background = asyncio.ensure_future(scheduler.background(stream))
    await stream.first_sent.wait()

    turn = asyncio.ensure_future(asyncio.Event().wait())  # a turn, running
    scheduler.turn_started(turn)  # type: ignore[arg-type]
    async with scheduler.turn_call():
        for _ in range(20):  # a few turns of the loop: the preemption runs
            await asyncio.sleep(0)
        # The background request gave the slot up: its stream is closed.
        assert stream.closed == 1 and not background.done()
        stream.first_sent.clear()
    stream.go.set()
    turn.cancel()
    events = await background
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "half whole"
    assert (stream.started, scheduler.restarts) == (2, 1)


async def test_a_background_request_waits_while_a_turn_streams() -> None:
    scheduler = SlotScheduler(grace=0.0)
    stream = GatedStream()
    stream.go.set()
    turn = asyncio.ensure_future(asyncio.Event().wait())
    scheduler.turn_started(turn)  # type: ignore[arg-type]
    async with scheduler.turn_call():
        background = asyncio.ensure_future(scheduler.background(stream))
        for _ in range(5):
            await asyncio.sleep(0)
        assert stream.started == 0
    turn.cancel()
    await background
    assert stream.started == 1 and scheduler.restarts == 0


async def test_a_turn_that_waits_for_the_summary_lets_it_run_after_the_grace() -> None:
    """A turn not streaming (it waits for this very summary at the hard threshold) does
    not hold the summary back past the grace: nothing deadlocks."""
    scheduler = SlotScheduler(grace=0.01)
    stream = GatedStream()
    stream.go.set()
    turn = asyncio.ensure_future(asyncio.Event().wait())
    scheduler.turn_started(turn)  # type: ignore[arg-type]
    events = await scheduler.background(stream)
    assert scheduler.turns and events[-1] == Stop(reason="end_turn")
    turn.cancel()


async def test_with_more_slots_nothing_waits() -> None:
    scheduler = SlotScheduler(single=False, grace=60.0)
    stream = GatedStream()
    stream.go.set()
    turn = asyncio.ensure_future(asyncio.Event().wait())
    scheduler.turn_started(turn)  # type: ignore[arg-type]
    async with scheduler.turn_call():
        events = await scheduler.background(stream)
    turn.cancel()
    assert len(events) == 3 and scheduler.restarts == 0


async def test_the_slot_times_its_pauses_and_its_background_requests() -> None:
    """What `Pace` is told on a one-request server: how long the server is free between
    turns, and how long a background request holds it (a cut one at least twice the
    time it had, so a summary that never finishes is still timed)."""
    now = [0.0]
    scheduler = SlotScheduler(grace=0.0, clock=lambda: now[0])
    first = asyncio.ensure_future(asyncio.Event().wait())
    scheduler.turn_started(first)  # type: ignore[arg-type]
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.sleep(0)  # the done callback: the turn ended at 0 s
    assert scheduler.free_seconds is None

    stream = GatedStream()
    background = asyncio.ensure_future(scheduler.background(stream))
    await stream.first_sent.wait()  # started at 0 s
    now[0] = 10.0
    second = asyncio.ensure_future(asyncio.Event().wait())
    scheduler.turn_started(second)  # type: ignore[arg-type]
    assert scheduler.free_seconds == 10.0
    async with scheduler.turn_call():
        for _ in range(20):
            await asyncio.sleep(0)
        assert scheduler.restarts == 1 and scheduler.background_seconds == 20.0
        stream.first_sent.clear()
        now[0] = 15.0
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    await stream.first_sent.wait()  # written again from 15 s
    now[0] = 19.0  # done at 19 s: 4 s, averaged in
    stream.go.set()
    await background
    assert scheduler.background_seconds == 20.0 + 0.3 * (4.0 - 20.0)


# --- what the fold gate is told of the server --------------------------------------


NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("learned", "one_request"),
    [
        ({"server": "llama.cpp", "slots": 1}, True),
        ({"server": "llama-cpp-python", "interrupts": True}, True),
        ({"server": "llama.cpp", "slots": 4}, False),
        ({"server": "vllm", "slots": 1}, False),
        ({}, False),
    ],
)
async def test_the_gate_knows_a_one_request_server_before_any_request_is_timed(
    learned: dict[str, object], one_request: bool
) -> None:
    """`GateFacts.one_request_at_a_time` comes from what the server said of its slots,
    so the one-request rules hold from the first turn, with no slot time yet."""
    config = parse_config(
        '[providers.local]\nkind = "openai-compatible"\nbase_url = "http://x/v1"\n'
    )
    directory = ModelDirectory()
    directory.record_learned("local", "openai-compatible", "smollm2", learned, NOW)
    servers = LocalServers(lambda: directory, clock=lambda: NOW)
    assert not servers.one_request_at_a_time("c1")  # no turn yet: its server is unknown
    servers.prepare("c1", config, "smollm2")  # learned within a day: nothing is asked
    assert servers.one_request_at_a_time("c1") is one_request
    assert servers.slot_timing("c1") is None


async def test_a_stream_cut_by_another_request_makes_the_server_one_request() -> None:
    config = parse_config(
        '[providers.local]\nkind = "openai-compatible"\nbase_url = "http://x/v1"\n'
    )
    directory = ModelDirectory()
    directory.record_learned("local", "openai-compatible", "smollm2", {"server": "llama.cpp"}, NOW)
    servers = LocalServers(lambda: directory, clock=lambda: NOW)
    servers.prepare("c1", config, "smollm2")
    assert not servers.one_request_at_a_time("c1")
    servers.learn_single_slot("local", "smollm2")
    assert servers.one_request_at_a_time("c1")
