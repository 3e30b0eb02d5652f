"""Long tool-using sessions with reasoning on, on both wires, through the real SDKs.

Claude (adaptive thinking, Anthropic Messages) and a GPT reasoning model (the Responses
API, stateless) hold 34 turns on an 8k window: every turn calls a tool, the model asks
for a fold mid-loop now and then, and automatic folds happen. The fake server refuses
a tool loop without its thinking block or reasoning item, a tampered one, and
`previous_response_id`, so 0 refusals means every loop went back byte-identical.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import SERVICES, chat_requests, fact_keeping_summary, filler, run

from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.core.messages import ReasoningPart
from foldline.providers.base import ModelRequest
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel, call

MODELS = {"anthropic": "claude-sonnet-4-6", "responses": "gpt-6.1-sol"}
TURNS = 34


def thinking_model() -> ScriptedModel:
    """Each turn: read a file (every seventh turn: fold first), then answer. The fake
    server adds reasoning to every reply, since reasoning is asked for."""

    def step(request: ModelRequest) -> Reply:
        last = request.messages[-1]
        if last.role == "user":
            turn = last.text.split(".")[0]
            if turn.endswith(("7", "14", "21", "28")):
                return Reply(tool_calls=(call("compactContext", {"reason": "new topic"}),))
            return Reply(tool_calls=(call("read_file", {"path": "notes.txt"}),))
        if last.role == "tool" and last.tool_results[0].name == "compactContext":
            return Reply(tool_calls=(call("read_file", {"path": "notes.txt"}),))
        return Reply(text="Noted. " + filler(len(request.messages), 60))

    return ScriptedModel(when_empty=step, summaries=fact_keeping_summary)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    limits = ModelLimits(context_window=8192, max_output_tokens=1024)
    models = dict.fromkeys(MODELS.values(), limits)
    with FakeProviderServer(thinking_model(), models=models, api_key="k") as fake:
        yield fake


def service_for(server: FakeProviderServer, store: Store, tmp_path: Path) -> ChatService:
    config = parse_config(f"""
{server.providers_toml()}[models."{MODELS["anthropic"]}"]
provider = "fake-anthropic"
context_window = 8192
max_output_tokens = 1024

[models."{MODELS["responses"]}"]
provider = "fake-openai"
context_window = 8192
max_output_tokens = 1024

[compaction]
keep_recent_tokens = 1500
tool_result_token_cap = 800
auto_title = false
""")
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("\n".join(filler(i, 20) for i in range(40)))

    async def no_sleep(_seconds: float) -> None:
        return None

    service = ChatService(store, lambda: config, files_root=workspace, sleep=no_sleep)
    SERVICES.append(service)
    return service


@pytest.mark.parametrize("wire", list(MODELS))
async def test_long_tool_session_with_reasoning_and_folds(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = service_for(server, store, tmp_path)
    conversation = store.create_conversation(model=MODELS[wire])
    events: list[ChatEvent] = []
    for turn in range(1, TURNS + 1):
        events += await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 40))

    server.assert_no_errors()
    assert not [e for e in events if e.name == "error"]
    requests = chat_requests(server)
    refused = [r for r in requests if r.status != 200]
    assert refused == [], [r.error.message for r in refused if r.error]
    folds = [e for e in events if e.name == "compaction.completed"]
    assert len(folds) >= 4  # the four the model asked for, and automatic ones
    assert len([e for e in events if e.name == "tool.result"]) >= TURNS

    # Reasoning streamed live, and every answer keeps it with its provider's proof.
    assert any(e.name == "assistant.delta" and e.data["kind"] == "reasoning" for e in events)
    answers = [
        r for r in store.list_messages(conversation.id, limit=1000) if r.message.role == "assistant"
    ]
    thoughts = [p for r in answers for p in r.message.parts if isinstance(p, ReasoningPart)]
    assert len(thoughts) == len(answers)
    if wire == "anthropic":
        assert all(t.signature and t.text for t in thoughts)
    else:
        assert all(t.item_id and t.encrypted_content and t.text for t in thoughts)
    assert all("reasoningSeconds" in (r.usage or {}) for r in answers if r.usage)

    # Inside each tool loop the reasoning went back; after the next user message it did not.
    loop_bodies = [r.body for r in requests if r.model_request.messages[-1].role == "tool"]
    assert loop_bodies
    for body in loop_bodies:
        if wire == "anthropic":
            assert body["messages"][-2]["content"][0]["type"] == "thinking"
        else:
            kinds = [item.get("type") for item in body["input"]]
            assert "reasoning" in kinds
            assert body["store"] is False and "previous_response_id" not in body
    first_of_turn = [r.body for r in requests if r.model_request.messages[-1].role == "user"]
    for body in first_of_turn:
        sent = str(body.get("messages") or body.get("input"))
        assert "'thinking'" not in sent and "'reasoning'" not in sent
