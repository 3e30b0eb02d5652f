"""Signing in to a remote MCP server: the SDK's own authorization server in a real server
(`mcp_oauth_server.py`), Foldline's manager, a keychain in memory, and a "browser" that
loads the sign-in page and presses Allow, as a person would."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import keyring
import pytest
from mcp_host_helpers import BASE_CONFIG, free_port
from memory_keyring import MemoryKeyring

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.config_mcp import McpServerConfig
from foldline.mcp.manager import McpManager
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step

OAUTH_SERVER = str(Path(__file__).with_name("mcp_oauth_server.py"))


def start_oauth_server(token_seconds: int = 3600) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, OAUTH_SERVER, str(port)],
        env={**os.environ, "TOKEN_SECONDS": str(token_seconds)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the OAuth MCP test server did not start") from None
            time.sleep(0.1)


@pytest.fixture
def oauth_url() -> Iterator[str]:
    process, url = start_oauth_server()
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    original = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(original)


class Browser:
    """Loads the sign-in page, presses Allow (or Deny), and follows the redirects home."""

    def __init__(self, answer: str = "allow") -> None:
        self.answer = answer
        self.pages: list[str] = []

    def open(self, url: str) -> None:
        self.pages.append(url)
        threading.Thread(target=self._sign_in, args=(url,), daemon=True).start()

    def _sign_in(self, url: str) -> None:
        with httpx2.Client(follow_redirects=True, timeout=30) as client:
            page = client.get(url)
            assert "asks to use your account" in page.text
            client.post(str(page.url), data={"answer": self.answer})


def manager_for(url: str, data_dir: Path, browser: Browser | None) -> McpManager:
    config = parse_config(BASE_CONFIG).model_copy(
        update={
            "mcp_servers": {"remote": McpServerConfig(url=url, approval="always")},
            "data_dir": data_dir,
        }
    )
    return McpManager(lambda: config, open_url=browser.open if browser else None)


async def test_sign_in_then_tools_then_tokens_kept_in_the_keychain(
    oauth_url: str, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    browser = Browser()
    manager = manager_for(oauth_url, tmp_path, browser)
    try:
        # Before the person asks, nothing opens: the server waits for a sign-in.
        notices = await manager.prepare()
        [status] = manager.status()
        assert status.state == "signin_required"
        assert browser.pages == []
        assert notices[0].data["code"] == "mcp_sign_in_required"
        assert manager.tools() == []

        connection = await manager.sign_in("remote")
        assert connection.state == "running", connection.error
        assert [tool.spec.name for tool in manager.mcp_tools()] == ["remote__whoami"]
        [page] = browser.pages
        assert "code_challenge_method=S256" in page and "redirect_uri=http" in page
    finally:
        await manager.shutdown()
    # The tokens and the registration are in the keychain, bound to the server's URL.
    [(service, name)] = memory_keyring.passwords
    assert (service, name) == ("foldline", "mcp-oauth:remote")
    record = json.loads(memory_keyring.passwords[(service, name)])
    assert record["url"] == oauth_url and record["tokens"]["access_token"]
    assert not (tmp_path / "secrets.json").exists()

    # A new run uses them without asking, in a conversation.
    model = ScriptedModel(tool_step(call("remote__whoami", {})), text_step("ok"))
    again = manager_for(oauth_url, tmp_path, None)
    store = Store(tmp_path / "foldline.db")
    service = ChatService(
        store, again.config_provider, provider_factory=lambda _c, _m: model, tool_sources=[again]
    )
    try:
        conversation = store.create_conversation()
        events = [e async for e in (await service.start_turn(conversation.id, "who am I")).events()]
        [result] = [e.data for e in events if e.name == "tool.result"]
        assert result["output"] == "signed in as the test person"
    finally:
        await service.shutdown()
        store.close()

    # Sign out forgets them.
    out = manager_for(oauth_url, tmp_path, None)
    try:
        await out.prepare()
        await out.sign_out("remote")
    finally:
        await out.shutdown()
    assert memory_keyring.passwords == {}


async def test_a_refused_sign_in_says_so(
    oauth_url: str, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    manager = manager_for(oauth_url, tmp_path, Browser(answer="deny"))
    try:
        connection = await manager.sign_in("remote")
        assert connection.state == "failed"
        assert "access_denied" in (connection.error or "")
    finally:
        await manager.shutdown()


async def test_expired_tokens_are_refreshed(tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    process, url = start_oauth_server(token_seconds=2)
    try:
        manager = manager_for(url, tmp_path, Browser())
        try:
            connection = await manager.sign_in("remote")
            assert connection.state == "running", connection.error
        finally:
            await manager.shutdown()
        first = json.loads(memory_keyring.passwords[("foldline", "mcp-oauth:remote")])
        # Two seconds are within the refresh margin: the next start refreshes first.
        later = manager_for(url, tmp_path, None)
        try:
            await later.prepare()
            [status] = later.status()
            assert status.state == "running", status.error
        finally:
            await later.shutdown()
        second = json.loads(memory_keyring.passwords[("foldline", "mcp-oauth:remote")])
        assert second["tokens"]["access_token"] != first["tokens"]["access_token"]
    finally:
        process.terminate()
        process.wait(timeout=10)
