"""Refreshing the providers' model lists in the background, without holding a request.

At start (only lists older than a day) and after a key is added (that provider), the app
asks the providers while the person carries on; the lists land in the app's
`ModelDirectory` and the next `GET /api/models` shows them. Tasks are kept on the app so
they are not garbage-collected mid-flight and are cancelled at shutdown.
"""

from __future__ import annotations

import asyncio
from typing import Any

from foldline.providers.discovery import refresh_all, refresh_provider


def schedule_refresh(app: Any, provider: str | None = None) -> None:
    """Refresh in the background (all stale lists, or `provider`), if the app discovers."""
    if not getattr(app.state, "discover_models", False):
        return
    config = app.state.config_source()
    directory = app.state.model_directory
    if provider is None:
        coroutine = refresh_all(directory, config, only_stale=True)
    elif provider in config.providers:
        coroutine = refresh_provider(directory, config, provider)
    else:
        return
    task = asyncio.get_running_loop().create_task(coroutine)
    tasks: set[asyncio.Task[Any]] = app.state.background_tasks
    tasks.add(task)
    task.add_done_callback(tasks.discard)


async def cancel_refreshes(app: Any) -> None:
    """Cancel the refreshes this event loop runs (an app served twice, as tests do, has
    one loop per server; each cancels only its own)."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[Any]] = getattr(app.state, "background_tasks", set())
    mine = [task for task in list(tasks) if task.get_loop() is loop]
    for task in mine:
        task.cancel()
    await asyncio.gather(*mine, return_exceptions=True)
