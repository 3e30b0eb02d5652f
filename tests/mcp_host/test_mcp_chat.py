"""MCP tools in the turn loop, with the test server started for real (stdio and HTTP)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from mcp_host_helpers import BASE_CONFIG, stdio_server

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.config import AppConfig, parse_config
from foldline.config_mcp import McpServerConfig
from foldline.core.messages import AttachmentPart
from foldline.logging_setup import redact
from foldline.mcp.manager import McpManager
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step


@pytest.fixture
def store(tmp_path: Path):
    store = Store(tmp_path / "foldline.db")
    yield store
    store.close()


Setup = Callable[..., tuple[ChatService, McpManager]]


@pytest.fixture
async def setup(store: Store) -> AsyncIterator[Setup]:
    services: list[ChatService] = []

    def build(model: ScriptedModel, **servers: McpServerConfig) -> tuple[ChatService, McpManager]:
        config = parse_config(BASE_CONFIG).model_copy(update={"mcp_servers": servers})
        current: list[AppConfig] = [config]
        manager = McpManager(lambda: current[0])
        service = ChatService(
            store,
            lambda: current[0],
            provider_factory=lambda _config, _model: model,
            tool_sources=[manager],
        )
        services.append(service)
        return service, manager

    yield build
    for service in services:
        await service.shutdown()


async def run(service: ChatService, conversation_id: str, text: str) -> list[ChatEvent]:
    return [event async for event in (await service.start_turn(conversation_id, text)).events()]


def results(events: list[ChatEvent]) -> list[dict]:
    return [event.data for event in events if event.name == "tool.result"]


async def test_tools_are_discovered_offered_and_called(store: Store, setup: Setup) -> None:
    model = ScriptedModel(
        tool_step(call("tests__echo", {"text": "hi"}), call("tests__measure", {"n": 7})),
        text_step("Done."),
    )
    service, manager = setup(model, tests=stdio_server(approval="always"))
    conversation = store.create_conversation()
    events = await run(service, conversation.id, "use the tools")
    assert [e for e in events if e.name == "error"] == []
    offered = {tool.name: tool for tool in model.calls[0].tools}
    assert {"tests__echo", "tests__report", "tests__measure", "tests__picture"} <= set(offered)
    # The server's own JSON schema is what the model is offered.
    assert offered["tests__echo"].input_schema["properties"]["text"]["type"] == "string"
    assert offered["tests__echo"].input_schema["required"] == ["text"]
    echo, measure = results(events)
    assert echo["output"] == "echo: hi" and not echo["isError"]
    assert '"square": 49' in measure["output"]
    # The model's next call sees the results paired with its calls.
    answered = model.calls[1].messages[-1].tool_results
    assert [r.output for r in answered] == ["echo: hi", measure["output"]]
    # The offered list is stable from one call to the next (the cached prefix).
    assert model.calls[0].tools == model.calls[1].tools
    [status] = manager.status()
    assert status.state == "running"
    assert ("echo", "tests__echo") in [(t.tool, t.spec.name) for t in status.tools]


async def test_streamable_http_server(store: Store, setup: Setup, http_mcp_url: str) -> None:
    model = ScriptedModel(tool_step(call("remote__echo", {"text": "over http"})), text_step("ok"))
    server = McpServerConfig(
        url=http_mcp_url, headers={"X-Test": "header-secret-value"}, approval="always"
    )
    service, _ = setup(model, remote=server)
    conversation = store.create_conversation()
    events = await run(service, conversation.id, "call it")
    [result] = results(events)
    assert result["output"] == "echo: over http"
    # A header value is a secret: once the server is known, the log scrubs it.
    assert "header-secret-value" not in redact("sent X-Test: header-secret-value")


async def test_a_server_that_never_starts_is_reported_and_not_offered(
    store: Store, setup: Setup
) -> None:
    broken = McpServerConfig(
        command=sys.executable,
        args=("-c", "import sys; print('missing API_TOKEN', file=sys.stderr); sys.exit(3)"),
    )
    model = ScriptedModel(text_step("Hello."), text_step("Again."))
    service, manager = setup(model, broken=broken, tests=stdio_server(approval="always"))
    conversation = store.create_conversation()
    events = await run(service, conversation.id, "hi")
    [notice] = [e for e in events if e.name == "notice"]
    assert notice.data["server"] == "broken"
    assert "missing API_TOKEN" in notice.data["message"]
    names = {tool.name for tool in model.calls[0].tools}
    assert not any(name.startswith("broken__") for name in names)
    assert "tests__echo" in names
    # Said once, not at every turn; the reason stays visible in the status.
    again = await run(service, conversation.id, "hi again")
    assert [e for e in again if e.name == "notice"] == []
    states = {status.name: status for status in manager.status()}
    assert states["broken"].state == "failed" and "missing API_TOKEN" in (
        states["broken"].error or ""
    )


async def test_a_slow_call_times_out_into_an_error_result(store: Store, setup: Setup) -> None:
    model = ScriptedModel(
        tool_step(call("tests__slow", {"seconds": 30})),
        tool_step(call("tests__echo", {"text": "still here"})),
        text_step("ok"),
    )
    service, _ = setup(model, tests=stdio_server(approval="always", timeout=1))
    conversation = store.create_conversation()
    events = await run(service, conversation.id, "be slow")
    slow, echo = results(events)
    assert slow["isError"] and "did not answer within 1 seconds" in slow["output"]
    assert echo["output"] == "echo: still here"
    model.assert_complete()


async def test_a_crash_mid_call_is_an_error_result_and_the_server_restarts(
    store: Store, setup: Setup
) -> None:
    model = ScriptedModel(
        tool_step(call("tests__crash")),
        tool_step(call("tests__echo", {"text": "after the crash"})),
        text_step("ok"),
    )
    service, manager = setup(model, tests=stdio_server(approval="always"))
    conversation = store.create_conversation()
    events = await run(service, conversation.id, "crash it")
    crashed, echo = results(events)
    assert crashed["isError"] and "stopped during this call" in crashed["output"]
    assert "it was restarted" in crashed["output"]
    assert echo["output"] == "echo: after the crash"
    assert manager.status()[0].state == "running"


async def test_images_are_stored_after_their_result(store: Store, setup: Setup) -> None:
    model = ScriptedModel(tool_step(call("tests__picture")), text_step("A pixel."))
    service, _ = setup(model, tests=stdio_server(approval="always"))
    conversation = store.create_conversation()
    await run(service, conversation.id, "draw")
    tool_message = store.list_messages(conversation.id)[2].message
    result, image = tool_message.parts
    assert result.kind == "tool-result" and "image/png" in result.output
    assert isinstance(image, AttachmentPart) and image.media_type == "image/png"
    # Stored once by sha256 like a person's file (the row holds no bytes), with its size.
    assert image.sha256 and image.data_base64 is None and (image.width, image.height) == (1, 1)
    [hydrated] = store.hydrate([tool_message])
    assert hydrated.parts[1].data_base64


async def test_approval_never_refuses_and_disabled_tools_are_not_offered(
    store: Store, setup: Setup
) -> None:
    server = stdio_server(approval="never").with_tool_override("report", enabled=False)
    model = ScriptedModel(tool_step(call("tests__echo", {"text": "x"})), text_step("ok"))
    service, manager = setup(model, tests=server)
    conversation = store.create_conversation()
    events = await run(service, conversation.id, "try")
    [result] = results(events)
    assert result["isError"] and "approval = never" in result["output"]
    assert "tests__report" not in {tool.name for tool in model.calls[0].tools}
    assert manager.status()[0].disabled_tools == ["report"]


async def test_stop_cancels_a_call_waiting_for_approval(store: Store, setup: Setup) -> None:
    model = ScriptedModel(tool_step(call("tests__echo", {"text": "wait"})))
    service, manager = setup(model, tests=stdio_server())
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, "ask first")
    async for event in handle.events():
        if event.name == "tool.approval_required":
            assert event.data["server"] == "tests" and event.data["tool"] == "echo"
            assert event.data["arguments"] == {"text": "wait"}
            assert manager.approvals.waiting(conversation.id)
            service.cancel(conversation.id)
    await asyncio.sleep(0)
    assert manager.approvals.waiting(conversation.id) == []
    history = store.list_messages(conversation.id)
    # The abandoned call has its result: an interrupted error, stored with the history.
    assert [(record.message.role, record.status) for record in history] == [
        ("user", "complete"),
        ("assistant", "complete"),
        ("tool", "interrupted"),
    ]
    [result] = history[2].message.tool_results
    assert result.is_error and result.output.startswith("[interrupted]")
    assert not service.is_running(conversation.id)


async def test_env_and_cwd_reach_the_server_process(
    store: Store, setup: Setup, tmp_path: Path
) -> None:
    model = ScriptedModel(
        tool_step(
            call("tests__secret_env", {"name": "API_TOKEN"}),
            call("tests__secret_env", {"name": "NOT_GIVEN"}),
        ),
        text_step("ok"),
    )
    server = stdio_server(approval="always", env={"API_TOKEN": "t0ken-value"}, cwd=str(tmp_path))
    service, _ = setup(model, tests=server)
    conversation = store.create_conversation()
    given, missing = results(await run(service, conversation.id, "check"))
    assert given["output"] == "set" and missing["output"] == "unset"


async def test_stop_cancels_a_running_call_and_the_server_stays_usable(
    store: Store, setup: Setup
) -> None:
    model = ScriptedModel(
        tool_step(call("tests__slow", {"seconds": 60})),
        tool_step(call("tests__echo", {"text": "next turn"})),
        text_step("ok"),
    )
    service, manager = setup(model, tests=stdio_server(approval="always"))
    conversation = store.create_conversation()
    handle = await service.start_turn(conversation.id, "be slow")
    async for event in handle.events():
        if event.name == "tool.call":
            await asyncio.sleep(1.0)  # the call is now running on the server
            service.cancel(conversation.id)
    await asyncio.sleep(0)
    assert not service.is_running(conversation.id)
    assert manager.status()[0].state == "running"
    events = await run(service, conversation.id, "go on")
    assert results(events)[0]["output"] == "echo: next turn"
