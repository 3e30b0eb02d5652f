"""The MCP reference server (`@modelcontextprotocol/server-everything`) in a conversation.

Every tool it offers a client with Foldline's capabilities is called once through a turn,
over stdio and over streamable HTTP, with the real server from tests/node (installed by
`desktop/install.sh --test`). Its questions are answered the way the chat's form does
it, through the manager's elicitation registry, while the turn's events stream.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_host_helpers import BASE_CONFIG, free_port

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.config_mcp import McpServerConfig
from foldline.mcp.elicitation import form_defaults
from foldline.mcp.manager import McpManager
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step

EVERYTHING = Path(__file__).resolve().parents[1] / "node" / "node_modules" / ".bin"
PROGRAM = EVERYTHING / "mcp-server-everything"

# One call of each tool a client without sampling or tasks can use, with arguments that
# stay on this machine (the gzip tool reads a data: URL, never the network).
CALLS: dict[str, dict] = {
    "echo": {"message": "hello everything"},
    "get-annotated-message": {"messageType": "success", "includeImage": True},
    "get-env": {},
    "get-resource-links": {"count": 2},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "get-structured-content": {"location": "Chicago"},
    "get-sum": {"a": 2, "b": 40},
    "get-tiny-image": {},
    "gzip-file-as-resource": {
        "name": "hello.txt.gz",
        "data": "data:text/plain;base64,aGVsbG8gZ3ppcA==",
        "outputType": "resource",
    },
    "toggle-simulated-logging": {},
    "toggle-subscriber-updates": {},
    "trigger-long-running-operation": {"duration": 1, "steps": 4},
    "get-roots-list": {},
    "trigger-elicitation-request": {},
    "trigger-url-elicitation": {"url": "https://example.com/confirm", "elicitationId": "e1"},
}


def _program() -> Path:
    if not PROGRAM.exists():
        pytest.fail("server-everything is not installed: run `bash desktop/install.sh --test`")
    return PROGRAM


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "foldline.db")
    yield store
    store.close()


@pytest.fixture
def everything_http() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [str(_program()), "streamableHttp"],
        env={**os.environ, "PORT": str(port), "PATH": f"{EVERYTHING}:{os.environ['PATH']}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("server-everything did not start over HTTP") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def converse(
    store: Store, server: McpServerConfig, tmp_path: Path
) -> tuple[ScriptedModel, list[ChatEvent], McpManager]:
    steps = [tool_step(call(f"ev__{name}", arguments)) for name, arguments in CALLS.items()]
    model = ScriptedModel(*steps, text_step("All done."))
    config = parse_config(BASE_CONFIG).model_copy(update={"mcp_servers": {"ev": server}})
    manager = McpManager(lambda: config)
    service = ChatService(
        store, lambda: config, provider_factory=lambda _c, _m: model, tool_sources=[manager]
    )
    conversation = store.create_conversation()
    events: list[ChatEvent] = []
    try:
        async for event in (await service.start_turn(conversation.id, "call every tool")).events():
            events.append(event)
            if event.name == "tool.elicitation_required":
                data = event.data
                content = None
                if data["mode"] == "form":
                    content = {**form_defaults(data["requestedSchema"]), "name": "Ada"}
                manager.calls.elicitations.answer(
                    conversation.id, data["elicitationId"], "accept", content
                )
    finally:
        await service.shutdown()
    return model, events, manager


def check_every_tool_worked(model: ScriptedModel, events: list[ChatEvent], root: Path) -> None:
    assert [e.data for e in events if e.name == "error"] == []
    offered = {tool.name for tool in model.calls[0].tools}
    assert {f"ev__{name}" for name in CALLS} <= offered
    # Task-only tools are not offered (Foldline runs no tasks), and no sampling tool is
    # listed, since Foldline declares no sampling.
    assert "ev__simulate-research-query" not in offered
    assert not any("sampling" in name for name in offered)
    results = {e.data["name"]: e.data for e in events if e.name == "tool.result"}
    assert set(results) == {f"ev__{name}" for name in CALLS}
    failed = {name: r["output"][:200] for name, r in results.items() if r["isError"]}
    assert failed == {}
    assert "hello everything" in results["ev__echo"]["output"]
    assert "42" in results["ev__get-sum"]["output"]
    assert str(root) in results["ev__get-roots-list"]["output"]
    elicited = results["ev__trigger-elicitation-request"]["output"]
    assert "Ada" in elicited and "It was a dark and stormy night." in elicited
    # The answer is kept with the call's result.
    assert "asked the person" in elicited
    assert "opened the page" in results["ev__trigger-url-elicitation"]["output"]
    progress = [e.data for e in events if e.name == "tool.progress"]
    assert progress and progress[-1]["total"] == 4
    resolved = [e.data["action"] for e in events if e.name == "tool.elicitation_resolved"]
    assert resolved == ["accept", "accept"]


async def test_every_tool_over_stdio(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    server = McpServerConfig(
        command=str(_program()), args=("stdio",), approval="always", roots=(str(root),)
    )
    model, events, _ = await converse(store, server, tmp_path)
    check_every_tool_worked(model, events, root)


async def test_every_tool_over_streamable_http(
    store: Store, tmp_path: Path, everything_http: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    server = McpServerConfig(url=everything_http, approval="always", roots=(str(root),))
    model, events, _ = await converse(store, server, tmp_path)
    check_every_tool_worked(model, events, root)


async def test_the_model_reads_a_resource_link_through_the_built_in_tool(
    store: Store, tmp_path: Path
) -> None:
    model = ScriptedModel(
        tool_step(call("ev__get-resource-links", {"count": 2})),
        tool_step(
            call("mcp_read_resource", {"server": "ev", "uri": "demo://resource/dynamic/text/1"}),
            call("mcp_read_resource", {"server": "ev", "uri": "demo://resource/dynamic/blob/2"}),
        ),
        text_step("Read them."),
    )
    config = parse_config(BASE_CONFIG).model_copy(
        update={"mcp_servers": {"ev": McpServerConfig(command=str(_program()), args=("stdio",))}}
    )
    manager = McpManager(lambda: config)
    service = ChatService(
        store, lambda: config, provider_factory=lambda _c, _m: model, tool_sources=[manager]
    )
    conversation = store.create_conversation()
    events: list[ChatEvent] = []
    try:
        async for event in (await service.start_turn(conversation.id, "read the links")).events():
            events.append(event)
            if event.name == "tool.approval_required":
                # Approved like any other call of the server (its approval is "ask").
                manager.decide(conversation.id, event.data["callId"], "allow")
    finally:
        await service.shutdown()
    approvals = [e.data["tool"] for e in events if e.name == "tool.approval_required"]
    assert approvals == ["get-resource-links", "read_resource", "read_resource"]
    links, text, blob = [e.data for e in events if e.name == "tool.result"]
    assert "read it with mcp_read_resource (server 'ev', this uri)" in links["output"]
    assert "demo://resource/dynamic/text/1" in text["output"] and not text["isError"]
    assert "Resource 1" in text["output"]
    assert "demo://resource/dynamic/blob/2" in blob["output"] and "binary" in blob["output"]
    # The blob is stored as an attachment after its result.
    _, rows = store.load_window(conversation.id)
    last_tool = [row.message for row in rows if row.message.role == "tool"][-1]
    attachments = [p for p in last_tool.parts if p.kind == "attachment"]
    assert [a.name for a in attachments] == ["2"] and attachments[0].data_base64
