"""MCP over the HTTP API: approvals (allow, always, deny) during a streamed turn, the
servers' status with secrets masked, restart, per-tool settings and the import."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp_host_helpers import BASE_CONFIG, SERVER_SCRIPT, stdio_toml

from foldline.chat.service import ChatService
from foldline.mcp.manager import McpManager
from foldline.server.app import create_app
from foldline.server.config_source import ConfigSource
from foldline.server.runner import RunningServer, start_server_in_thread
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step

TOKEN = "mcp-test-token-0123456789abcdefghijklmnop"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Live:
    def __init__(self, data_dir: Path, model: ScriptedModel) -> None:
        self.data_dir = data_dir
        self.model = model
        self.store = Store(data_dir / "foldline.db")
        source = ConfigSource(data_dir)
        self.manager = McpManager(source, save_config=source.save)
        service = ChatService(
            self.store,
            source,
            provider_factory=lambda _config, _model: self.model,
            tool_sources=[self.manager],
        )
        app = create_app(data_dir=data_dir, token=TOKEN, store=self.store, chat_service=service)
        self.server: RunningServer = start_server_in_thread(app, "127.0.0.1", 0)
        self.http = httpx2.Client(base_url=self.server.url, headers=AUTH, timeout=60)

    def close(self) -> None:
        self.http.close()
        self.server.stop()
        self.store.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    (tmp_path / "config.toml").write_text(
        BASE_CONFIG + stdio_toml("tests", env={"API_TOKEN": "very-secret-token"})
    )
    live = Live(tmp_path, ScriptedModel())
    yield live
    live.close()


def stream_turn(live: Live, conversation: str, text: str, decide: str | None) -> list[tuple]:
    """Send a message; when a call waits for approval, answer it with `decide` through
    the approval route (from another thread, as the UI would)."""
    events: list[tuple] = []
    answers: list[httpx2.Response] = []
    with live.http.stream(
        "POST", f"/api/conversations/{conversation}/messages", json={"content": text}
    ) as response:
        assert response.status_code == 200
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                events.append((name, data))
                if name == "tool.approval_required":
                    assert decide is not None, "no approval was expected"
                    url = f"/api/conversations/{conversation}/tool-calls/{data['callId']}/approval"

                    def answer(url: str = url) -> None:
                        answers.append(live.http.post(url, json={"decision": decide}))

                    thread = threading.Thread(target=answer)
                    thread.start()
                    thread.join()
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    return events


def named(events: list[tuple], name: str) -> list[dict]:
    return [data for event, data in events if event == name]


def test_allow_always_and_deny_through_the_api(live: Live) -> None:
    live.model.add(
        tool_step(call("tests__echo", {"text": "once"})),
        text_step("allowed once"),
        tool_step(call("tests__echo", {"text": "always"})),
        text_step("allowed always"),
        tool_step(call("tests__echo", {"text": "again"})),
        text_step("no question asked"),
        tool_step(call("tests__measure", {"n": 2})),
        text_step("denied"),
    )
    conversation = live.http.post("/api/conversations", json={}).json()["id"]

    events = stream_turn(live, conversation, "one", "allow")
    [asked] = named(events, "tool.approval_required")
    assert asked["server"] == "tests" and asked["tool"] == "echo"
    assert asked["arguments"] == {"text": "once"}
    assert named(events, "tool.approval_resolved")[0]["decision"] == "allow"
    assert named(events, "tool.result")[0]["output"] == "echo: once"

    events = stream_turn(live, conversation, "two", "always")
    assert named(events, "tool.result")[0]["output"] == "echo: always"
    # "Always allow this tool" is kept in config.toml, for this tool only.
    config = (live.data_dir / "config.toml").read_text()
    assert "[mcp_servers.tests.tools.echo]" in config and 'approval = "always"' in config

    events = stream_turn(live, conversation, "three", None)
    assert named(events, "tool.approval_required") == []
    assert named(events, "tool.result")[0]["output"] == "echo: again"

    events = stream_turn(live, conversation, "four", "deny")
    [denied] = named(events, "tool.result")
    assert denied["isError"] and "denied" in denied["output"]
    assert named(events, "error") == []
    # The model read the denial and answered; the turn did not break.
    assert live.model.calls[-1].messages[-1].tool_results[0].is_error
    live.model.assert_complete()


def test_an_unknown_approval_is_404(live: Live) -> None:
    conversation = live.http.post("/api/conversations", json={}).json()["id"]
    response = live.http.post(
        f"/api/conversations/{conversation}/tool-calls/nope/approval", json={"decision": "allow"}
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    bad = live.http.post(
        f"/api/conversations/{conversation}/tool-calls/nope/approval", json={"decision": "maybe"}
    )
    assert bad.status_code == 422


def test_status_restart_and_settings_with_secrets_masked(live: Live) -> None:
    [server] = live.http.get("/api/mcp/servers").json()["servers"]
    # Nothing starts before a turn needs it.
    assert server["state"] == "stopped" and server["tools"] == []
    assert "very-secret-token" not in json.dumps(server)
    assert list(server["env"]) == ["API_TOKEN"]

    restarted = live.http.post("/api/mcp/servers/tests/restart").json()
    assert restarted["state"] == "running"
    assert {"name": "echo", "offeredAs": "tests__echo", "note": None} in restarted["tools"]

    patched = live.http.patch(
        "/api/mcp/servers/tests",
        json={"timeout": 5, "tools": {"crash": {"enabled": False}, "echo": {"approval": "never"}}},
    ).json()
    assert patched["timeout"] == 5 and patched["disabledTools"] == ["crash"]
    assert patched["toolOverrides"]["echo"]["approval"] == "never"
    assert "crash" not in [tool["name"] for tool in patched["tools"]]
    assert "very-secret-token" not in json.dumps(patched)
    assert "very-secret-token" in (live.data_dir / "config.toml").read_text()

    assert live.http.post("/api/mcp/servers/nope/restart").status_code == 404
    live.http.patch("/api/mcp/servers/tests", json={"enabled": False})
    disabled = live.http.post("/api/mcp/servers/tests/restart")
    assert disabled.status_code == 409 and "disabled" in disabled.json()["error"]["message"]
    assert live.http.get("/api/mcp/servers").json()["servers"][0]["state"] == "disabled"
    assert live.http.patch("/api/mcp/servers/tests", json={"timeout": -1}).status_code == 422


def test_the_claude_desktop_import_writes_config_and_starts_nothing(live: Live) -> None:
    claude = {
        "mcpServers": {
            "tests": {"command": "ignored"},
            "fs": {"command": "npx", "args": ["-y", "server-fs"], "env": {"K": "imported-key"}},
        }
    }
    result = live.http.post("/api/mcp/import", json={"text": json.dumps(claude)}).json()
    assert result == {"imported": ["fs"], "skipped": ["tests"]}
    servers = {s["name"]: s for s in live.http.get("/api/mcp/servers").json()["servers"]}
    # Not started; a machine without npx says so at once.
    assert servers["fs"]["state"] == ("stopped" if shutil.which("npx") else "failed")
    assert servers["fs"]["command"] == "npx"
    assert "imported-key" not in json.dumps(servers)
    assert live.manager.connections == {}  # no process was started
    bad = live.http.post("/api/mcp/import", json={"text": "{nope"})
    assert bad.status_code == 422 and "not valid JSON" in bad.json()["error"]["message"]
    assert live.http.delete("/api/mcp/servers/fs").status_code == 204
    assert "fs" not in (live.data_dir / "config.toml").read_text()


def test_a_server_added_over_the_api_is_written_masked_and_starts(
    live: Live, http_mcp_url: str
) -> None:
    before = live.http.get("/api/mcp/servers").json()["servers"]
    added = live.http.post(
        "/api/mcp/servers",
        json={
            "name": "added",
            "transport": "stdio",
            "command": sys.executable,
            "args": [SERVER_SCRIPT],
            "env": {"ADDED_TOKEN": "added-secret-value"},
            "approval": "always",
        },
    )
    assert added.status_code == 201, added.text
    server = added.json()
    assert (server["state"], server["transport"], server["approval"]) == (
        "stopped",
        "stdio",
        "always",
    )
    assert server["env"] == {"ADDED_TOKEN": "••••ue"}
    assert live.manager.connections["added"].state == "stopped"  # nothing started
    saved = tomllib.loads((live.data_dir / "config.toml").read_text())["mcp_servers"]
    assert saved["added"]["env"] == {"ADDED_TOKEN": "added-secret-value"}
    assert saved["added"]["args"] == [SERVER_SCRIPT]
    listed = live.http.get("/api/mcp/servers").json()["servers"]
    assert [s["name"] for s in listed] == [*[s["name"] for s in before], "added"]

    remote = live.http.post(
        "/api/mcp/servers",
        json={
            "name": "remote",
            "transport": "http",
            "url": http_mcp_url,
            "headers": {"Authorization": "Bearer remote-secret-header"},
            "enabled": True,
        },
    )
    assert remote.status_code == 201, remote.text
    assert "remote-secret-header" not in remote.text
    for name in ("added", "remote"):
        started = live.http.post(f"/api/mcp/servers/{name}/restart").json()
        assert started["state"] == "running", started["error"]
        assert f"{name}__echo" in [tool["offeredAs"] for tool in started["tools"]]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"name": "tests", "transport": "stdio", "command": "x"}, 409, "exists already"),
        ({"name": "a b", "transport": "stdio", "command": "x"}, 422, "letters, digits"),
        ({"name": "n", "transport": "stdio", "command": "  "}, 422, "needs a command"),
        ({"name": "n", "transport": "http"}, 422, "needs a URL"),
        (
            {"name": "n", "transport": "stdio", "command": "x", "url": "http://h/mcp"},
            422,
            "takes no `url`",
        ),
        ({"name": "n", "transport": "http", "url": "http://h", "env": {"K": "v"}}, 422, "`env`"),
        ({"name": "n", "transport": "http", "url": "ftp://h"}, 422, "http://"),
        ({"name": "n", "transport": "stdio", "command": "x", "env": {"1X": "v"}}, 422, "'1X'"),
        ({"name": "n", "transport": "stdio", "command": "x", "env": {"": "v"}}, 422, "no name"),
        (
            {"name": "n", "transport": "http", "url": "http://h", "headers": {"A": "b\r\nC: d"}},
            422,
            "line break",
        ),
        (
            {"name": "n", "transport": "http", "url": "http://h", "headers": {"A B": "c"}},
            422,
            "header 'A B'",
        ),
        ({"name": "n", "transport": "stdio", "command": "x", "timeout": 0}, 422, "timeout"),
        ({"name": "n", "command": "x"}, 422, "transport"),
        ({"name": "n", "transport": "ws", "command": "x"}, 422, "transport"),
    ],
)
def test_a_bad_new_server_is_refused_with_its_reason_and_nothing_is_written(
    live: Live, body: dict, status: int, message: str
) -> None:
    config = (live.data_dir / "config.toml").read_text()
    response = live.http.post("/api/mcp/servers", json=body)
    assert response.status_code == status
    assert message in response.json()["error"]["message"]
    assert (live.data_dir / "config.toml").read_text() == config
