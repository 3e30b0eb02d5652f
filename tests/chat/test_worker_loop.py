"""A fold's engine work runs off the event loop; its summarizer calls run on it.

After a message of a few million characters, a fold's counting and checks took over a
minute on the event loop, freezing every conversation. `in_worker_loop` runs the
engine's coroutine on a loop of its own in a worker thread.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from foldline.chat.worker_loop import calling_task, in_worker_loop
from foldline.core.compaction import SummaryRequest


async def test_the_work_runs_in_another_thread_and_the_calls_on_the_app_loop() -> None:
    app_loop = asyncio.get_running_loop()
    seen: dict[str, object] = {}

    async def summarize(request: SummaryRequest) -> str:
        seen["call loop"] = asyncio.get_running_loop()
        return "a summary"

    async def work(summarize_call) -> str:  # type: ignore[no-untyped-def]
        seen["work thread"] = threading.current_thread()
        return await summarize_call(object())

    assert await in_worker_loop(work, summarize) == "a summary"
    assert seen["work thread"] is not threading.main_thread()
    assert seen["call loop"] is app_loop


async def test_cancelling_the_wait_cancels_the_work_and_its_call() -> None:
    call_started = asyncio.Event()
    call_cancelled = asyncio.Event()

    async def summarize(request: SummaryRequest) -> str:
        call_started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            call_cancelled.set()
            raise
        return "never"

    async def work(summarize_call) -> str:  # type: ignore[no-untyped-def]
        return await summarize_call(object())

    waiting = asyncio.create_task(in_worker_loop(work, summarize))
    await call_started.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.wait_for(call_cancelled.wait(), 30)


async def test_a_manual_fold_runs_the_engine_off_the_event_loop(
    store, make_service, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from foldline.chat import folding
    from foldline.core.messages import assistant, user
    from foldline.testing import ScriptedModel, structured_summary

    threads: list[bool] = []
    real_fold = folding.fold

    async def watched_fold(*args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread() is threading.main_thread())
        return await real_fold(*args, **kwargs)

    monkeypatch.setattr(folding, "fold", watched_fold)
    service = make_service(ScriptedModel(when_empty="echo", summaries=structured_summary))
    conversation = store.create_conversation(title="t")
    store.append_messages(
        conversation.id,
        [
            m
            for n in range(6)
            for m in (user(f"question {n} " * 150), assistant(f"answer {n} " * 100))
        ],
    )
    handle = await service.start_compaction(conversation.id, None)
    events = [(event.name, event.data) async for event in handle.events()]
    names = [name for name, _ in events]
    assert "compaction.completed" in names, [e for e in events if e[0] == "compaction.failed"]
    assert threads == [False]


async def test_each_call_is_marked_with_the_task_it_is_made_for() -> None:
    """A local server's slot tells a turn's own fold from a background one by this mark:
    the call runs in a task of its own, which is neither."""
    seen: dict[str, object] = {}

    async def summarize(request: SummaryRequest) -> str:
        seen[str(request)] = (calling_task(), asyncio.current_task())
        return "a summary"

    async def work(summarize_call) -> str:  # type: ignore[no-untyped-def]
        return await summarize_call("call")

    async def turn() -> str:
        return await in_worker_loop(work, summarize)

    turn_task = asyncio.ensure_future(turn())
    assert await turn_task == "a summary"
    marked, running_in = seen["call"]  # type: ignore[misc]
    assert marked is turn_task and running_in is not turn_task
    # Outside such a call, the mark is the current task.
    assert calling_task() is asyncio.current_task()
