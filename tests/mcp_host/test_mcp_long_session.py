"""A long tool-heavy session through an MCP server on an 8k-window model.

The real `anthropic` and `openai` SDKs talk to `FakeProviderServer` (as strict as the real
APIs about context windows and tool pairing); the model calls the test MCP server's
`report` tool every turn, which returns 5,000 to 20,000 tokens. Ingest truncation,
pruning and folds must keep every request inside the window: no refusal in 30 turns.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import MODEL, fake_server, session_config
from mcp_host_helpers import SERVER_SCRIPT

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.config import AppConfig, parse_config
from foldline.mcp.manager import McpManager
from foldline.providers.base import ModelRequest
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    FakeTokenizer,
    ModelLimits,
    Reply,
    ScriptedModel,
    call,
    structured_summary,
)

TURNS = 30
TOKENS_PER_LINE = 17.7  # the fake tokenizer's count of one `report` line


def report_lines(turn: int) -> int:
    """From about 5,000 to about 20,000 tokens, varying turn by turn."""
    return 290 + (turn * 241) % 840


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(ScriptedModel()) as fake:
        yield fake


def responder(request: ModelRequest) -> Reply:
    """Call `report` for the person's newest turn, then say it was read."""
    last = request.messages[-1]
    if last.role == "user" and last.text.startswith("Turn "):
        turn = int(last.text.split()[1].rstrip(":"))
        arguments = {"lines": report_lines(turn), "seed": turn}
        return Reply(tool_calls=(call("reports__report", arguments),))
    return Reply(text="Read it; the report's lines are noted.")


def mcp_session_config(server: FakeProviderServer) -> AppConfig:
    """The shared 8k session config with the test MCP server's `report` tool added."""
    return session_config(
        server,
        f"""
[mcp_servers.reports]
command = "{sys.executable}"
args = ["{SERVER_SCRIPT}"]
approval = "always"
""",
    )


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_thirty_turns_of_large_mcp_outputs_on_an_8k_window(
    wire: str, server: FakeProviderServer, tmp_path: Path
) -> None:
    config = mcp_session_config(server)
    server.responder = ScriptedModel(when_empty=responder, summaries=structured_summary)
    store = Store(tmp_path / "foldline.db")
    manager = McpManager(lambda: config)
    service = ChatService(store, lambda: config, tool_sources=[manager])
    try:
        conversation = store.create_conversation(model=MODEL[wire])
        events: list[ChatEvent] = []
        for turn in range(1, TURNS + 1):
            handle = await service.start_turn(conversation.id, f"Turn {turn}: read report {turn}.")
            events += [event async for event in handle.events()]
        records = store.list_messages(conversation.id, limit=1000)
    finally:
        await service.shutdown()
        store.close()

    server.assert_no_errors()
    requests = [r for r in server.requests if r.body is not None]
    refusals = [r for r in requests if r.status != 200]
    folds = [e for e in events if e.name == "compaction.completed"]
    prunes = [e for e in events if e.name == "prune.completed"]
    results = [e for e in events if e.name == "tool.result"]
    print(
        f"\n{wire}: {TURNS} turns, {len(requests)} requests, {len(refusals)} refusals, "
        f"{len(folds)} folds, {len(prunes)} prunes, "
        f"max input {max(r.input_tokens for r in requests)} tokens"
    )
    assert refusals == []
    assert [e for e in events if e.name == "error"] == []
    assert len(results) == TURNS
    assert all(r.data["truncated"] and not r.data["isError"] for r in results)
    assert folds, "an 8k window cannot hold 30 tool results without folding"
    assert all(not fold.data["degraded"] for fold in folds), [
        (f.data.get("reason"), f.data.get("degradedReason")) for f in folds if f.data["degraded"]
    ]
    # Every output is stored in full: 5,000 to 20,000 tokens each.
    tokenizer = FakeTokenizer()
    stored = [part for record in records for part in record.message.tool_results]
    sizes = [tokenizer.count_text(part.full_output or "") for part in stored]
    assert len(stored) == TURNS
    assert min(sizes) >= 5_000 and max(sizes) <= 20_500, sizes
    # Every turn ended with the model's answer.
    assert [r.message.role for r in records[-2:]] == ["tool", "assistant"]
    assert records[-1].status == "complete"


async def test_a_tool_image_reaches_an_anthropic_model(
    server: FakeProviderServer, tmp_path: Path
) -> None:
    server.responder = ScriptedModel(
        Reply(tool_calls=(call("reports__picture"),)), Reply(text="A pixel.")
    )
    config = mcp_session_config(server)
    store = Store(tmp_path / "foldline.db")
    service = ChatService(store, lambda: config, tool_sources=[McpManager(lambda: config)])
    try:
        conversation = store.create_conversation(model=MODEL["anthropic"])
        handle = await service.start_turn(conversation.id, "Show me the picture.")
        events = [event async for event in handle.events()]
    finally:
        await service.shutdown()
        store.close()
    server.assert_no_errors()
    assert [e for e in events if e.name == "error"] == []
    last = [r for r in server.requests if r.body is not None][-1]
    assert last.status == 200
    result = last.body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    image = result["content"][-1]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"


def image_config(server: FakeProviderServer) -> AppConfig:
    """OpenAI's own `gpt-4o` (images by family) and two models on a compatible server."""
    return parse_config(
        f"""
[providers.openai]
kind = "openai"
base_url = "{server.openai_url}"
api_key = "k"

[providers.fake-openai]
kind = "openai-compatible"
base_url = "{server.openai_url}"
api_key = "k"

# A compatible server that states no window gets the smallest common one (2,048); these
# models' windows are set, as a person would, so the turn is about images, not folds.
[models."gpt-fake-vision"]
provider = "fake-openai"
vision = true
context_window = 128000

[models."{MODEL["openai"]}"]
provider = "fake-openai"
context_window = 128000

[compaction]
auto_title = false  # a title call would take a scripted answer

[mcp_servers.reports]
command = "{sys.executable}"
args = ["{SERVER_SCRIPT}"]
approval = "always"
"""
    )


@pytest.mark.parametrize(
    ("model", "vision"),
    [("gpt-4o", True), ("gpt-fake-vision", True), (MODEL["openai"], False)],
)
async def test_a_tool_image_reaches_an_openai_model_that_accepts_images(
    model: str, vision: bool, tmp_path: Path
) -> None:
    limits = ModelLimits(context_window=128_000, max_output_tokens=16_384)
    models = {name: limits for name in ("gpt-4o", "gpt-fake-vision", MODEL["openai"])}
    responder = ScriptedModel(Reply(tool_calls=(call("reports__picture"),)), Reply(text="A pixel."))
    with FakeProviderServer(responder, models=models, api_key="k") as server:
        config = image_config(server)
        store = Store(tmp_path / "foldline.db")
        service = ChatService(store, lambda: config, tool_sources=[McpManager(lambda: config)])
        try:
            conversation = store.create_conversation(model=model)
            handle = await service.start_turn(conversation.id, "Show me the picture.")
            events = [event async for event in handle.events()]
        finally:
            await service.shutdown()
            store.close()
        server.assert_no_errors()
        assert [e for e in events if e.name == "error"] == []
        first, last = [r for r in server.requests if r.body is not None]
    assert (first.status, last.status) == (200, 200)
    messages = last.body["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert "[image reports__picture-1.png (image/png)]" in tool["content"]
    if not vision:
        assert messages[-1] == tool and isinstance(tool["content"], str)
        return
    # One user message right after the batch's tool message: a text line and the image.
    assert messages[-2] == tool
    text, image = messages[-1]["content"]
    assert messages[-1]["role"] == "user"
    assert text == {
        "type": "text",
        "text": "Images returned by the tools above: reports__picture-1.png",
    }
    url = image["image_url"]["url"]
    assert image["type"] == "image_url" and url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]).startswith(b"\x89PNG")
