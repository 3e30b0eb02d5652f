"""What Foldline's MCP client tells a server and does with its notifications: its name
and capabilities, a tool list that changes (taken at the next turn), and Stop or a
timeout cancelling the call on the server (`notifications/cancelled`)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from mcp_host_helpers import BASE_CONFIG

from foldline import __version__
from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.config_mcp import McpServerConfig
from foldline.mcp.manager import McpManager
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step

FEATURES = str(Path(__file__).with_name("mcp_feature_server.py"))


def features(tmp_path: Path, **settings: object) -> McpServerConfig:
    return McpServerConfig(
        command=sys.executable,
        args=(FEATURES,),
        env={"CANCEL_LOG": str(tmp_path / "cancelled.log")},
        approval="always",
        **settings,
    )


def service_for(store: Store, model: ScriptedModel, server: McpServerConfig) -> ChatService:
    config = parse_config(BASE_CONFIG).model_copy(update={"mcp_servers": {"f": server}})
    manager = McpManager(lambda: config)
    return ChatService(
        store, lambda: config, provider_factory=lambda _c, _m: model, tool_sources=[manager]
    )


async def test_the_server_sees_foldline_and_exactly_its_capabilities(tmp_path: Path) -> None:
    store = Store(tmp_path / "foldline.db")
    model = ScriptedModel(tool_step(call("f__whoami", {})), text_step("ok"))
    service = service_for(store, model, features(tmp_path))
    try:
        conversation = store.create_conversation()
        events = [e async for e in (await service.start_turn(conversation.id, "who")).events()]
    finally:
        await service.shutdown()
        store.close()
    [result] = [e.data for e in events if e.name == "tool.result"]
    seen = json.loads(result["output"])
    assert seen["name"] == "Foldline" and seen["version"] == __version__
    # Elicitation (forms and links) and roots; no sampling, no tasks, nothing experimental.
    assert set(seen["capabilities"]) == {"elicitation", "roots"}
    assert set(seen["capabilities"]["elicitation"]) == {"form", "url"}


async def test_a_changed_tool_list_is_offered_from_the_next_turn(tmp_path: Path) -> None:
    store = Store(tmp_path / "foldline.db")
    model = ScriptedModel(
        tool_step(call("f__grow", {})),
        text_step("grown"),
        tool_step(call("f__late", {})),
        text_step("done"),
    )
    service = service_for(store, model, features(tmp_path))
    try:
        conversation = store.create_conversation()
        [_ async for _ in (await service.start_turn(conversation.id, "grow")).events()]
        # Within the turn that changed it, the list (the cached prefix) stays the same.
        first_turn = [{t.name for t in c.tools} for c in model.calls[:2]]
        assert all("f__late" not in names for names in first_turn)
        assert first_turn[0] == first_turn[1]
        # The server's notice arrives on its own; on a loaded machine it may land after the
        # turn's end, and a person's next message comes later than that anyway.
        [connection] = service.tool_sources[0].connections.values()
        for _ in range(200):
            if connection.changed_tools is not None:
                break
            await asyncio.sleep(0.05)
        events = [e async for e in (await service.start_turn(conversation.id, "use it")).events()]
    finally:
        await service.shutdown()
        store.close()
    assert "f__late" in {t.name for t in model.calls[2].tools}
    [result] = [e.data for e in events if e.name == "tool.result"]
    assert result["output"] == "the late tool ran"


async def wait_for_log(path: Path, lines: int, seconds: float = 10) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= lines:
            break
        await asyncio.sleep(0.05)
    return path.read_text().splitlines() if path.exists() else []


async def test_stop_and_a_timeout_cancel_the_call_on_the_server(tmp_path: Path) -> None:
    log = tmp_path / "cancelled.log"
    store = Store(tmp_path / "foldline.db")
    model = ScriptedModel(
        tool_step(call("f__wait", {"seconds": 30})),
        text_step("never"),
        tool_step(call("f__wait", {"seconds": 30})),
        text_step("after the timeout"),
    )
    service = service_for(store, model, features(tmp_path, timeout=1))
    try:
        conversation = store.create_conversation()
        # A timeout: the call is abandoned with an error result, and cancelled there.
        events = [e async for e in (await service.start_turn(conversation.id, "wait")).events()]
        [result] = [e.data for e in events if e.name == "tool.result"]
        assert result["isError"] and "did not answer within 1 second" in result["output"]
        assert len(await wait_for_log(log, 1)) == 1
    finally:
        await service.shutdown()
        store.close()

    store = Store(tmp_path / "foldline2.db")
    service = service_for(store, model, features(tmp_path, timeout=60))
    try:
        conversation = store.create_conversation()
        turn = await service.start_turn(conversation.id, "wait again")
        async for event in turn.events():
            if event.name == "tool.call":
                await asyncio.sleep(1.0)  # the call has reached the server
                service.cancel(conversation.id)
        assert len(await wait_for_log(log, 2)) == 2
    finally:
        await service.shutdown()
        store.close()


async def test_stop_dismisses_a_question_waiting_for_the_person(tmp_path: Path) -> None:
    """Stop while a server's form waits: the question is dropped (the server reads
    "cancel"), and nothing is left waiting for an answer."""
    from test_mcp_everything import PROGRAM, _program

    _program()
    store = Store(tmp_path / "foldline.db")
    model = ScriptedModel(tool_step(call("f__trigger-elicitation-request", {})), text_step("x"))
    config = parse_config(BASE_CONFIG).model_copy(
        update={
            "mcp_servers": {
                "f": McpServerConfig(command=str(PROGRAM), args=("stdio",), approval="always")
            }
        }
    )
    manager = McpManager(lambda: config)
    service = ChatService(
        store, lambda: config, provider_factory=lambda _c, _m: model, tool_sources=[manager]
    )
    names: list[str] = []
    try:
        conversation = store.create_conversation()
        async for event in (await service.start_turn(conversation.id, "ask")).events():
            names.append(event.name)
            if event.name == "tool.elicitation_required":
                service.cancel(conversation.id)
        assert manager.calls.elicitations.waiting(conversation.id) == []
    finally:
        await service.shutdown()
        store.close()
    assert "tool.elicitation_required" in names
    assert names[-1] == "done"
