"""Every dependency a route declares runs on the event loop, not in the thread pool.

FastAPI runs a plain `def` dependency in its thread pool. The ones here only read an
attribute of `app.state` (or return a constant), so the hop costs more than their work:
it waits for a free worker and for the GIL again, and with ten answers streaming that
wait was a large share of a short read's time. Each is `async def` for that reason; this
walks the real app's routes so that a new plain-`def` dependency is caught here. The
only plain ones left read the store, which belongs in a worker thread.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence

from fastapi import Depends, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

STORE_READS = {
    "/api/conversations/{conversation_id}/events: running_turn",
    "/api/conversations/{conversation_id}/watch: known_conversation",
}
"""The plain-`def` dependencies that stay so: they read the store (is the conversation
there?), which must never run on the loop."""


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for dependency in dependant.dependencies:
        yield dependency
        yield from _dependencies(dependency)


def _api_routes(routes: Sequence[BaseRoute]) -> Iterator[APIRoute]:
    """The app's API routes, through FastAPI's wrappers of included routers."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _api_routes(included.routes)


def _plain_def_dependencies(app: FastAPI) -> set[str]:
    plain: set[str] = set()
    for route in _api_routes(app.routes):
        for dependency in _dependencies(route.dependant):
            call = dependency.call
            if call is None or inspect.iscoroutinefunction(call):
                continue
            if inspect.isasyncgenfunction(call):
                continue
            plain.add(f"{route.path}: {getattr(call, '__qualname__', repr(call))}")
    return plain


def test_every_route_dependency_is_async(app: FastAPI) -> None:
    routes = list(_api_routes(app.routes))
    # The walk must see the dependencies that moved to `async def` for the check to mean anything.
    names = {
        getattr(dependency.call, "__name__", "")
        for route in routes
        for dependency in _dependencies(route.dependant)
    }
    assert {"get_store", "get_mcp", "get_config_source", "get_model_directory"} <= names
    assert _plain_def_dependencies(app) == STORE_READS


def _plain_probe() -> int:
    return 1


def test_the_check_sees_a_plain_def_dependency(app: FastAPI) -> None:
    @app.get("/api/probe-plain-dependency")
    async def probe(value: int = Depends(_plain_probe)) -> int:
        return value

    probe_name = "/api/probe-plain-dependency: _plain_probe"
    assert _plain_def_dependencies(app) == STORE_READS | {probe_name}
