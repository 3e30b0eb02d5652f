"""A stdio MCP server that never ends its line is refused while it is read: memory stays
bounded, the server is marked failed with the reason, and the app goes on."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp_host_helpers import BASE_CONFIG, stdio_server

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.config_mcp import McpServerConfig
from foldline.mcp import stdio_transport
from foldline.mcp.manager import McpManager
from foldline.mcp.stdio_transport import LineGatherer
from foldline.store import Store
from foldline.testing import ScriptedModel, call, text_step, tool_step

HOSTILE = str(Path(__file__).with_name("hostile_mcp_server.py"))
LIMIT = 1024 * 1024


@pytest.fixture
def store(tmp_path: Path):
    store = Store(tmp_path / "foldline.db")
    yield store
    store.close()


@pytest.fixture
async def small_limit(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    # A 1 MiB limit lets an 8 MiB line stand for an endless one at a test's cost.
    monkeypatch.setattr(stdio_transport, "MAX_MESSAGE_BYTES", LIMIT)
    yield


@pytest.mark.usefixtures("small_limit")
async def test_an_endless_line_is_refused_and_the_server_marked_failed(store: Store) -> None:
    flood = McpServerConfig(
        command=sys.executable, args=(HOSTILE, "flood"), approval="always", timeout=60
    )
    servers = {"flood": flood, "good": stdio_server(approval="always")}
    config = parse_config(BASE_CONFIG).model_copy(update={"mcp_servers": servers})
    manager = McpManager(lambda: config)
    model = ScriptedModel(
        tool_step(call("flood__flood", {"megabytes": 8})),
        tool_step(call("good__echo", {"text": "still here"}), call("flood__echo", {"text": "x"})),
        text_step("Done."),
        text_step("Next turn."),
    )
    service = ChatService(
        store, lambda: config, provider_factory=lambda _c, _m: model, tool_sources=[manager]
    )
    try:
        conversation = store.create_conversation()
        events = [e async for e in (await service.start_turn(conversation.id, "flood")).events()]
        flooded, echoed, after = [e.data for e in events if e.name == "tool.result"]
        # Refused at the limit, not after the call's 60 s timeout.
        assert flooded["isError"]
        assert "larger than 1 MiB" in flooded["output"], flooded["output"]
        assert "did not answer" not in flooded["output"]
        # The other server answers; the refused one is not restarted behind the person.
        assert echoed["output"] == "echo: still here"
        assert after["isError"] and "Unknown tool" in after["output"]
        assert not [spec for spec in model.calls[2].tools if spec.name.startswith("flood__")]
        status = {s.name: s for s in manager.status()}
        assert status["flood"].state == "failed"
        assert "larger than 1 MiB" in (status["flood"].error or "")
        assert status["good"].state == "running"
        # The person is told at the next turn, once.
        events = [e async for e in (await service.start_turn(conversation.id, "again")).events()]
        [notice] = [e.data for e in events if e.name == "notice"]
        assert notice["server"] == "flood" and "was stopped" in notice["message"]
        assert "larger than 1 MiB" in notice["message"]
        assert [e for e in events if e.name == "error"] == []
        model.assert_complete()
    finally:
        await service.shutdown()


def test_lines_are_split_across_chunks_and_cut_at_the_limit() -> None:
    gatherer = LineGatherer(limit=10)
    assert gatherer.feed(b'{"a"') == []
    assert gatherer.feed(b":1}\n{}\n\n{") == [b'{"a":1}', b"{}", b""]
    assert gatherer.feed(b"}\n") == [b"{}"]
    assert gatherer.feed(b"0123456789\n") == [b"0123456789"]  # exactly the limit
    assert gatherer.feed(b"01234") == [] and not gatherer.over_limit
    assert gatherer.feed(b"56789") == [] and not gatherer.over_limit
    assert gatherer.feed(b"X") == [] and gatherer.over_limit
    assert gatherer.feed(b"\n{}\n") == []  # nothing is read after a refusal
