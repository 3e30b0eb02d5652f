"""`start_server_in_thread`: a real socket, a known port, a bounded stop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from foldline.server.runner import bind_socket, start_server_in_thread, url_host


async def hello(request):  # type: ignore[no-untyped-def]
    return PlainTextResponse("hello")


def test_serves_on_a_free_port_and_stops(app) -> None:
    server = start_server_in_thread(app, "127.0.0.1", 0)
    try:
        assert server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        reply = httpx2.get(f"{server.url}/api/health", timeout=5)
        assert reply.status_code == 200 and reply.json()["status"] == "ok"
        assert "server" not in reply.headers  # no version banner
    finally:
        server.stop()
    assert not server.running
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"{server.url}/api/health", timeout=2)
    server.stop()  # idempotent


def test_a_taken_port_raises_oserror() -> None:
    taken = bind_socket("127.0.0.1", 0)
    try:
        with pytest.raises(OSError):
            start_server_in_thread(
                Starlette(routes=[Route("/", hello)]), "127.0.0.1", taken.getsockname()[1]
            )
    finally:
        taken.close()


def test_a_failing_startup_raises_instead_of_hanging() -> None:
    @asynccontextmanager
    async def broken(app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("cannot open the database")
        yield  # pragma: no cover

    with pytest.raises(RuntimeError, match="startup"):
        start_server_in_thread(Starlette(lifespan=broken), "127.0.0.1", 0, startup_timeout=5)


def test_ipv6_hosts_are_bracketed_in_urls() -> None:
    assert url_host("::1") == "[::1]"
    assert url_host("127.0.0.1") == "127.0.0.1"
    assert url_host("localhost") == "localhost"


def test_an_app_from_a_data_dir_alone_opens_and_closes_its_own_store(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from foldline.server.app import create_app

    app = create_app(data_dir=tmp_path, token="desktop-token-0123456789")
    assert (tmp_path / "config.toml").exists()
    assert (tmp_path / "foldline.db").exists()
    headers = {"Authorization": "Bearer desktop-token-0123456789"}
    with TestClient(app, base_url="http://127.0.0.1:1", headers=headers) as client:
        created = client.post("/api/conversations", json={"title": "kept"})
        assert created.status_code == 201
    store = app.state.store
    with pytest.raises(RuntimeError, match="closed"):  # closed at shutdown: the app owned it
        store.list_conversations()
    reopened = create_app(data_dir=tmp_path, token="desktop-token-0123456789")
    with TestClient(reopened, base_url="http://127.0.0.1:1", headers=headers) as client:
        titles = [c["title"] for c in client.get("/api/conversations").json()["items"]]
    assert titles == ["kept"]


def test_accepted_connections_send_small_writes_at_once() -> None:
    """asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets created with
    proto IPPROTO_TCP; without it a response written as headers then body waited for the
    client's delayed ACK, about 40 ms per small answer."""
    seen: list[int] = []

    async def accept_one() -> None:
        listening = bind_socket("127.0.0.1", 0)
        accepted = asyncio.Event()

        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()
            accepted.set()

        server = await asyncio.start_server(on_connect, sock=listening)
        port = listening.getsockname()[1]
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.wait_for(accepted.wait(), 5)
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(accept_one())
    assert seen == [1]
