"""Editing and removing an MCP server over the API (Settings' Edit and Remove), and a
command that does not exist reported as failed before any turn tries it."""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp_host_helpers import BASE_CONFIG, SERVER_SCRIPT, stdio_toml

from foldline.server.app import create_app
from foldline.server.runner import start_server_in_thread

TOKEN = "mcp-edit-token-0123456789abcdefghijklmnop"


@pytest.fixture
def http(tmp_path: Path) -> Iterator[httpx2.Client]:
    (tmp_path / "config.toml").write_text(
        BASE_CONFIG + stdio_toml("tests", env={"API_TOKEN": "kept-secret", "OLD": "dropped-secret"})
    )
    server = start_server_in_thread(create_app(data_dir=tmp_path, token=TOKEN), "127.0.0.1", 0)
    client = httpx2.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
    )
    client.data_dir = tmp_path  # type: ignore[attr-defined]
    yield client
    client.close()
    server.stop()


def saved(http: httpx2.Client) -> dict:
    text = (http.data_dir / "config.toml").read_text()  # type: ignore[attr-defined]
    return tomllib.loads(text).get("mcp_servers", {})


def test_a_missing_command_is_failed_at_once_and_edit_fixes_it(http: httpx2.Client) -> None:
    added = http.post(
        "/api/mcp/servers",
        json={"name": "typo", "transport": "stdio", "command": "no-such-command-xyz"},
    )
    assert added.status_code == 201
    body = added.json()
    assert body["state"] == "failed"
    assert "`no-such-command-xyz` was not found on PATH" in body["error"]

    fixed = http.patch(
        "/api/mcp/servers/typo", json={"command": sys.executable, "args": [SERVER_SCRIPT]}
    ).json()
    # Fixed, it still waits for the person's yes to run that command (added in the app).
    assert fixed["state"] == "awaiting_approval" and fixed["error"] is None
    assert saved(http)["typo"] == {"command": sys.executable, "args": [SERVER_SCRIPT]}
    started = http.post("/api/mcp/servers/typo/allow").json()
    assert started["state"] == "running"


def test_edit_merges_secrets_and_checks_the_transport(http: httpx2.Client) -> None:
    edited = http.patch(
        "/api/mcp/servers/tests", json={"env": {"OLD": None, "NEW": "new-secret"}}
    ).json()
    assert sorted(edited["env"]) == ["API_TOKEN", "NEW"]
    assert "new-secret" not in json.dumps(edited)
    assert saved(http)["tests"]["env"] == {"API_TOKEN": "kept-secret", "NEW": "new-secret"}

    both = http.patch("/api/mcp/servers/tests", json={"url": "http://127.0.0.1:1/mcp"})
    assert both.status_code == 422
    assert "either `command`" in both.json()["error"]["message"]
    assert saved(http)["tests"]["command"] == sys.executable  # nothing written


def test_remove_forgets_the_server(http: httpx2.Client) -> None:
    assert http.delete("/api/mcp/servers/tests").status_code == 204
    assert http.get("/api/mcp/servers").json()["servers"] == []
    assert "tests" not in saved(http)
    assert http.delete("/api/mcp/servers/tests").status_code == 404


def test_a_disabled_server_is_not_restarted(http: httpx2.Client) -> None:
    disabled = http.patch("/api/mcp/servers/tests", json={"enabled": False})
    assert disabled.status_code == 200, disabled.text
    restart = http.post("/api/mcp/servers/tests/restart")
    assert restart.status_code == 409
    error = restart.json()["error"]
    assert error["code"] == "mcp_server_disabled" and "tests" in error["message"]
