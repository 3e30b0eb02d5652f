"""Counts asked of a local server from worker threads run on one loop with one client."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx2

from foldline.chat.local_servers import CountingLoop


def test_counts_from_many_threads_share_one_loop_and_client() -> None:
    counting = CountingLoop()
    seen: list[tuple[int, int]] = []

    async def count(client: httpx2.AsyncClient) -> int:
        await asyncio.sleep(0)
        seen.append((id(asyncio.get_running_loop()), id(client)))
        return 7

    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: counting.run(count), range(20)))
        assert results == [7] * 20
        assert len(set(seen)) == 1  # one loop, one client for all of them
        assert any(t.name == "foldline-server-counts" for t in threading.enumerate())
    finally:
        counting.close()
    assert not any(t.name == "foldline-server-counts" for t in threading.enumerate())


def test_a_closed_loop_starts_again_when_asked() -> None:
    counting = CountingLoop()

    async def count(client: httpx2.AsyncClient) -> int:
        return 3

    assert counting.run(count) == 3
    counting.close()
    assert counting.run(count) == 3
    counting.close()


def test_a_failing_count_raises_in_the_caller() -> None:
    counting = CountingLoop()

    async def count(client: httpx2.AsyncClient) -> int:
        raise httpx2.ConnectError("refused")

    try:
        try:
            counting.run(count)
        except httpx2.ConnectError as error:
            assert "refused" in str(error)
        else:
            raise AssertionError("the count's error was swallowed")
    finally:
        counting.close()
