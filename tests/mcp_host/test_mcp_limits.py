"""A hostile MCP server (a huge description, ten thousand tools) cannot stop the
conversations: its excess is left out of the requests, and a notice names it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp_host_helpers import BASE_CONFIG

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.config_mcp import McpServerConfig
from foldline.core.messages import ToolSpec
from foldline.mcp.manager import McpManager
from foldline.mcp.tool_limits import MAX_DESCRIPTION_CHARS, limit_tools, spec_tokens
from foldline.store import Store
from foldline.testing import ScriptedModel, text_step

HOSTILE = str(Path(__file__).with_name("hostile_mcp_server.py"))


@pytest.fixture
def store(tmp_path: Path):
    store = Store(tmp_path / "foldline.db")
    yield store
    store.close()


@pytest.mark.parametrize("mode", ["huge", "many"])
async def test_a_hostile_server_cannot_make_every_turn_overflow(store: Store, mode: str) -> None:
    server = McpServerConfig(command=sys.executable, args=(HOSTILE, mode), approval="always")
    config = parse_config(BASE_CONFIG).model_copy(update={"mcp_servers": {"evil": server}})
    manager = McpManager(lambda: config)
    model = ScriptedModel(text_step("Fine."), text_step("Still fine."))
    service = ChatService(
        store, lambda: config, provider_factory=lambda _c, _m: model, tool_sources=[manager]
    )
    try:
        conversation = store.create_conversation()
        events = [e async for e in (await service.start_turn(conversation.id, "hi")).events()]
        assert [e for e in events if e.name == "error"] == []
        [notice] = [e.data for e in events if e.name == "notice"]
        assert notice["code"] == "mcp_tools_limited" and notice["server"] == "evil"
        assert "evil" in notice["message"]
        offered = [spec for spec in model.calls[0].tools if spec.name.startswith("evil__")]
        # At most a quarter of the model's input budget (about 200k), by the same estimate.
        cap = manager._tools_cap()
        assert 45_000 < cap < 50_000
        assert 0 < sum(spec_tokens(spec) for spec in offered) <= cap
        assert all(len(spec.description) < MAX_DESCRIPTION_CHARS + 100 for spec in offered)
        [status] = manager.status()
        assert status.limits == notice["message"]
        # Said once, not at every turn.
        events = [e async for e in (await service.start_turn(conversation.id, "again")).events()]
        assert [e for e in events if e.name in ("notice", "error")] == []
    finally:
        await service.shutdown()


def test_a_schema_too_large_or_too_deep_is_left_out_and_named() -> None:
    deep: dict = {"type": "object"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"a": deep}}
    offers = [
        ("s", ToolSpec(name="ok", description="fine", input_schema={"type": "object"})),
        ("s", ToolSpec(name="deep", description="d", input_schema=deep)),
        ("s", ToolSpec(name="wide", description="w", input_schema={"enum": ["x" * 30_000]})),
    ]
    limited = limit_tools(offers, cap_tokens=10_000)
    assert limited.kept == [0]
    assert "2 tools with an input schema too large or too deep" in limited.notes["s"]
    assert "deep, wide" in limited.notes["s"]
