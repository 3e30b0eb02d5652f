"""A server added in Settings or by a Claude Desktop import runs a command on this
machine: it waits, shown with its command, until the person allows it once. Servers
written into config.toml by hand start as before."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp_host_helpers import BASE_CONFIG, SERVER_SCRIPT, stdio_toml

from foldline.chat.service import ChatService
from foldline.mcp.first_start import FIRST_START_FILE, FirstStarts
from foldline.mcp.manager import McpManager
from foldline.server.app import create_app
from foldline.server.config_source import ConfigSource
from foldline.server.runner import start_server_in_thread
from foldline.store import Store
from foldline.testing import ScriptedModel

TOKEN = "mcp-test-token-0123456789abcdefghijklmnop"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def http(tmp_path: Path) -> Iterator[tuple[httpx2.Client, ScriptedModel]]:
    (tmp_path / "config.toml").write_text(BASE_CONFIG + stdio_toml("byhand"))
    store = Store(tmp_path / "foldline.db")
    source = ConfigSource(tmp_path)
    manager = McpManager(
        source, save_config=source.save, first_starts=FirstStarts(tmp_path / FIRST_START_FILE)
    )
    model = ScriptedModel(when_empty="echo")
    service = ChatService(
        store, source, provider_factory=lambda _c, _m: model, tool_sources=[manager]
    )
    app = create_app(data_dir=tmp_path, token=TOKEN, store=store, chat_service=service)
    server = start_server_in_thread(app, "127.0.0.1", 0)
    with httpx2.Client(base_url=server.url, headers=AUTH, timeout=60) as client:
        yield client, model
    server.stop()
    store.close()


def _states(client: httpx2.Client) -> dict[str, str]:
    return {s["name"]: s["state"] for s in client.get("/api/mcp/servers").json()["servers"]}


def _offered(model: ScriptedModel) -> set[str]:
    return {spec.name.split("__")[0] for spec in model.calls[-1].tools if "__" in spec.name}


def test_a_server_added_in_settings_waits_for_the_persons_yes(http) -> None:
    client, model = http
    added = client.post(
        "/api/mcp/servers",
        json={
            "name": "added",
            "transport": "stdio",
            "command": sys.executable,
            "args": [SERVER_SCRIPT],
        },
    )
    assert added.status_code == 201, added.text
    assert added.json()["state"] == "awaiting_approval"
    assert added.json()["command"] == sys.executable  # what the person is asked about
    conversation = client.post("/api/conversations", json={}).json()["id"]
    sent = client.post(f"/api/conversations/{conversation}/messages", json={"content": "hi"})
    assert "mcp_server_awaiting_approval" in sent.text and "added" in sent.text
    # The hand-written server started; the added one did not.
    assert _offered(model) == {"byhand"}
    assert _states(client) == {"byhand": "running", "added": "awaiting_approval"}
    assert client.post("/api/mcp/servers/added/restart").status_code == 409

    allowed = client.post("/api/mcp/servers/added/allow")
    assert allowed.status_code == 200 and allowed.json()["state"] == "running"
    sent = client.post(f"/api/conversations/{conversation}/messages", json={"content": "again"})
    assert "mcp_server_awaiting_approval" not in sent.text
    assert _offered(model) == {"byhand", "added"}


def test_servers_imported_from_claude_desktop_wait_too(http) -> None:
    client, model = http
    text = json.dumps(
        {"mcpServers": {"imported": {"command": sys.executable, "args": [SERVER_SCRIPT]}}}
    )
    assert client.post("/api/mcp/import", json={"text": text}).json()["imported"] == ["imported"]
    assert _states(client)["imported"] == "awaiting_approval"
    conversation = client.post("/api/conversations", json={}).json()["id"]
    client.post(f"/api/conversations/{conversation}/messages", json={"content": "hi"})
    assert "imported" not in _offered(model)
    # Removed and written again by hand, a server of that name is the person's own.
    assert client.delete("/api/mcp/servers/imported").status_code == 204
    assert "imported" not in _states(client)


def test_a_remote_server_added_in_settings_is_not_held(http) -> None:
    # A URL runs nothing on this computer, so there is no command to show and allow.
    client, _model = http
    added = client.post(
        "/api/mcp/servers",
        json={"name": "remote", "transport": "http", "url": "http://127.0.0.1:9/mcp"},
    )
    assert added.status_code == 201, added.text
    assert added.json()["state"] != "awaiting_approval"
    assert _states(client)["remote"] != "awaiting_approval"
