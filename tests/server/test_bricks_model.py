"""Hostile model output and hostile imported messages: stored in a form every read serves.

A model (an OpenAI-compatible server, or a prompt-injected model) can answer with tool
arguments nested hundreds deep or holding lone surrogates; an import can carry the same,
or a `usage` that is not a record of numbers. Once stored, such a value used to break
every read of the conversation.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from foldline.core.json_values import REFUSED_ARGUMENTS
from foldline.core.messages import ToolCallPart, assistant, user
from foldline.store import Store
from foldline.store.doctor import repair
from foldline.testing import ScriptedModel, call, text_step, tool_step

JSON = {"content-type": "application/json"}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(when_empty="echo")


def send(client: TestClient, conversation: str, text: str) -> str:
    reply = client.post(f"/api/conversations/{conversation}/messages", json={"content": text})
    assert reply.status_code == 200, reply.text
    return reply.text


def every_read_works(client: TestClient, conversation: str) -> dict[str, Any]:
    base = f"/api/conversations/{conversation}"
    for path in ("", "/messages", "/context", "/compactions", "/compactions/preview"):
        answer = client.get(base + path)
        assert answer.status_code == 200, (path, answer.text)
    assert client.get("/api/conversations").status_code == 200
    exported = client.get(f"{base}/export")
    assert exported.status_code == 200
    document = exported.json()
    again = client.post("/api/conversations/import", json=document)
    assert again.status_code == 201, again.text
    assert client.get(f"{base}/export", params={"format": "markdown"}).status_code == 200
    return document


@pytest.mark.parametrize(
    "arguments",
    [nested(220), nested(600), {"path": "x" * 600_000}, {"\ud800": "\udfff"}],
    ids=["220 deep", "600 deep", "huge", "lone surrogates"],
)
def test_hostile_tool_arguments_from_a_model_leave_the_conversation_working(
    client: TestClient, model: ScriptedModel, store: Store, arguments: dict[str, Any]
) -> None:
    model.add(tool_step(call("getContextStats", arguments)), text_step("Done."))
    conversation = client.post("/api/conversations", json={}).json()["id"]
    body = send(client, conversation, "go")
    assert "event: error" not in body
    records = store.list_messages(conversation)
    stored_call = records[1].message.parts[0]
    result = records[2].message.parts[0]
    assert isinstance(stored_call, ToolCallPart)
    if "\ud800" in arguments:
        # Mended in place, as text is: the tool ran.
        assert stored_call.input == {"\ufffd": "\ufffd"}
        assert not result.is_error  # type: ignore[union-attr]
    else:
        assert list(stored_call.input) == [REFUSED_ARGUMENTS]
        assert result.is_error and "were not stored" in result.output  # type: ignore[union-attr]
    assert records[3].message.text == "Done." and records[3].status == "complete"
    every_read_works(client, conversation)
    assert "event: error" not in send(client, conversation, "and again")


def test_a_deep_tool_call_stored_by_an_older_version_is_read_then_repaired(
    client: TestClient, store: Store, data_dir: Path
) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    store.append_messages(
        conversation,
        [user("go"), assistant("calling", ToolCallPart(id="c1", name="x", input={"a": 1}))],
    )
    database = data_dir / "foldline.db"
    deep = json.dumps([{"kind": "tool-call", "id": "c1", "name": "x", "input": nested(220)}])
    bad_usage = json.dumps({"inputTokens": json.loads("[" * 300 + "]" * 300)})
    with sqlite3.connect(database) as conn:
        conn.execute(
            "UPDATE messages SET parts = ?, usage = ? WHERE conversation_id = ? AND seq = 1",
            (deep, bad_usage, conversation),
        )
    conn.close()
    document = every_read_works(client, conversation)
    stored = document["messages"][1]
    assert list(stored["parts"][0]["input"]) == [REFUSED_ARGUMENTS]
    assert stored["usage"] is None

    report = repair(database)
    assert len(report.repaired_values) == 2
    assert repair(database).repaired_values == []
    every_read_works(client, conversation)


def _export(client: TestClient, store: Store) -> dict[str, Any]:
    conversation = client.post("/api/conversations", json={"title": "t"}).json()["id"]
    store.append_messages(
        conversation,
        [user("go"), assistant("calling", ToolCallPart(id="c1", name="x", input={"a": 1}))],
    )
    return client.get(f"/api/conversations/{conversation}/export").json()


FORGED_MESSAGES = {
    "deep tool input": (["parts", 1, "input"], nested(220), "messages[1]"),
    "tool input too large": (["parts", 1, "input"], {"a": "x" * 600_000}, "input"),
    "deep usage": (["usage"], {"inputTokens": nested(256)}, "messages[1]"),
    "usage not a number": (["usage"], {"inputTokens": "many"}, "inputTokens"),
    "usage surrogate": (["usage"], {"inputTokens": "\ud800"}, "surrogate"),
    "usage infinite": (["usage"], {"inputTokens": 1e400}, "finite"),
    "text surrogate": (["parts", 0, "text"], "a\ud800b", "surrogate"),
    "text too long": (["parts", 0, "text"], "x" * (4 << 20) + "x", "longer than"),
}


@pytest.mark.parametrize("forgery", FORGED_MESSAGES.values(), ids=FORGED_MESSAGES.keys())
def test_an_import_with_a_hostile_message_is_refused_naming_it(
    client: TestClient, store: Store, forgery: tuple[list[Any], Any, str]
) -> None:
    path, value, named = forgery
    document = _export(client, store)
    target = document["messages"][1]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    # json.dumps writes the lone surrogates and 1e400 (as Infinity) the way an attacker's
    # file would spell them; Infinity is rewritten as the number that overflows to it.
    body = json.dumps(document).replace("Infinity", "1e400")
    imported = client.post("/api/conversations/import", content=body, headers=JSON)
    assert imported.status_code == 422, imported.text
    assert named in imported.json()["error"]["message"]
    assert client.get("/api/conversations").json()["total"] == 1


def test_an_infinite_imported_cost_is_refused(client: TestClient, store: Store) -> None:
    document = _export(client, store)
    document["modelCalls"] = [
        {
            "turn": 0,
            "purpose": "chat",
            "messageId": None,
            "foldVersion": None,
            "provider": "p",
            "model": "m",
            "inputTokens": 1,
            "outputTokens": 1,
            "cacheReadTokens": 0,
            "cacheCreationTokens": 0,
            "cost": 1.0,
            "saved": None,
            "createdAt": "2026-01-01T00:00:00+00:00",
        }
    ]
    body = json.dumps(document).replace('"cost": 1.0', '"cost": 1e400')
    imported = client.post("/api/conversations/import", content=body, headers=JSON)
    assert imported.status_code == 422, imported.text
    assert "modelCalls" in imported.json()["error"]["message"]
    document["modelCalls"][0]["cost"] = 0.25
    assert client.post("/api/conversations/import", json=document).status_code == 201


def test_arguments_nested_past_the_parsers_limit_are_kept_as_text() -> None:
    from foldline.providers.anthropic import parse_tool_input

    raw = "[" * 100_000
    assert parse_tool_input(raw) == {"_invalid_arguments": raw}


@pytest.mark.parametrize(
    ("where", "key"),
    [("conversation", "systemPrompt"), ("compactions", "summaryMessage")],
)
def test_an_import_with_a_huge_prompt_or_summary_is_refused(
    client: TestClient, store: Store, where: str, key: str
) -> None:
    document = _export(client, store)
    if where == "compactions":
        document["compactions"] = [
            {
                "version": 1,
                "parentVersion": 0,
                "current": True,
                "compactedAt": "2026-01-01T00:00:00+00:00",
                "summaryMessage": "ok",
                "apiStartIndex": 1,
                "summarizedRange": {"fromIndex": 0, "toIndex": 1, "messageCount": 1},
                "strategy": "structured",
                "trigger": "manual",
                "tokensBefore": 10,
                "tokensAfter": 5,
                "model": None,
                "degraded": False,
                "lastMessageId": document["messages"][0]["id"],
            }
        ]
        assert client.post("/api/conversations/import", json=document).status_code == 201
        target = document["compactions"][0]
    else:
        target = document["conversation"]
    target[key] = "x" * (4 << 20) + "x"
    imported = client.post("/api/conversations/import", json=document)
    assert imported.status_code == 422, imported.text
    assert "larger than" in imported.json()["error"]["message"]


def test_one_value_larger_than_a_message_may_hold_is_refused_as_it_is_read(
    client: TestClient, store: Store
) -> None:
    document = _export(client, store)
    document["messages"][1]["parts"][0]["full_output"] = "x" * (33 << 20)
    imported = client.post("/api/conversations/import", json=document)
    assert imported.status_code == 400, imported.text
    assert "larger than" in imported.json()["error"]["message"]


def test_pending_approvals_of_an_unknown_conversation_is_404(client: TestClient) -> None:
    assert client.get("/api/conversations/nope/tool-calls/pending").status_code == 404
    conversation = client.post("/api/conversations", json={}).json()["id"]
    pending = client.get(f"/api/conversations/{conversation}/tool-calls/pending")
    assert pending.status_code == 200 and pending.json() == {"items": []}


def test_an_infinite_cost_stored_by_an_older_version_exports_as_unknown(
    client: TestClient, store: Store, data_dir: Path
) -> None:
    document = _export(client, store)
    conversation = client.post("/api/conversations/import", json=document).json()["id"]
    from foldline.store.usage import ModelCall

    store.record_calls(
        conversation,
        [
            ModelCall(
                turn=0,
                purpose="chat",
                message_id=None,
                fold_version=None,
                provider="p",
                model="m",
                input_tokens=1,
                output_tokens=1,
                cache_read_tokens=0,
                cache_creation_tokens=0,
                cost=float("inf"),
                saved=None,
                created_at="",
            )
        ],
    )
    exported = client.get(f"/api/conversations/{conversation}/export")
    assert exported.status_code == 200 and "Infinity" not in exported.text
    assert exported.json()["modelCalls"][0]["cost"] is None
    assert (
        client.post("/api/conversations/import", content=exported.content, headers=JSON).status_code
        == 201
    )
