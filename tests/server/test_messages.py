"""Sending a message (SSE), the paginated history, full tool outputs."""

from __future__ import annotations

from fastapi.testclient import TestClient

from foldline.core.messages import Message, TextPart, ToolCallPart, ToolResultPart, assistant, user
from foldline.store import Store


def _new(client: TestClient, **fields: object) -> str:
    return client.post("/api/conversations", json=fields).json()["id"]


def test_send_streams_the_turn_and_persists_it(client: TestClient, model, parse_sse) -> None:
    conversation = _new(client)
    reply = client.post(f"/api/conversations/{conversation}/messages", json={"content": "Hi"})
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert reply.headers["cache-control"] == "no-cache"
    events = parse_sse(reply.text)
    names = [event.name for event in events]
    assert names[0] == "message.created"
    assert names[-1] == "done"
    assert names.count("done") == 1
    assert {"assistant.delta", "usage", "context.stats", "message.completed"} <= set(names)

    first = events[0].data["message"]
    assert first["role"] == "user" and first["index"] == 0
    assert first["parts"] == [{"kind": "text", "text": "Hi"}]
    streamed = "".join(e.data["text"] for e in events if e.name == "assistant.delta")
    assert streamed == model.reply
    completed = next(e for e in events if e.name == "message.completed").data["message"]
    assert completed["status"] == "complete"

    page = client.get(f"/api/conversations/{conversation}/messages").json()
    assert page["total"] == 2
    assert [m["role"] for m in page["items"]] == ["user", "assistant"]
    assert [m["index"] for m in page["items"]] == [0, 1]
    assert page["items"][1]["parts"] == [{"kind": "text", "text": model.reply}]
    assert all(m["inContext"] for m in page["items"])
    assert page["items"][1]["id"] == completed["id"]


def test_the_wire_format_is_event_and_data_lines(client: TestClient) -> None:
    conversation = _new(client)
    body = client.post(f"/api/conversations/{conversation}/messages", json={"content": "Hi"}).text
    blocks = [block for block in body.split("\n\n") if block.strip()]
    for block in blocks:
        lines = block.split("\n")
        assert lines[0].startswith("event: "), block
        assert lines[1].startswith("data: {"), block
    assert blocks[-1] == "event: done\ndata: {}"


def test_send_with_bad_input_is_refused_before_any_event(client: TestClient, model) -> None:
    conversation = _new(client)
    path = f"/api/conversations/{conversation}/messages"
    for body in ({}, {"content": ""}, {"content": 3}, {"content": "hi", "extra": 1}):
        reply = client.post(path, json=body)
        assert reply.status_code == 422, body
        assert reply.headers["content-type"].startswith("application/json")
    bad_json = client.post(path, content=b"{", headers={"Content-Type": "application/json"})
    assert bad_json.status_code == 400
    blank = client.post(path, json={"content": "   "})
    assert blank.status_code == 400
    assert blank.json()["error"]["code"] == "chat_unavailable"
    assert model.calls == []
    assert client.get(path).json()["total"] == 0


def test_send_without_a_model_says_what_to_do(client: TestClient, data_dir) -> None:
    (data_dir / "config.toml").write_text("[defaults]\n", encoding="utf-8")
    conversation = _new(client)
    reply = client.post(f"/api/conversations/{conversation}/messages", json={"content": "Hi"})
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "chat_unavailable"
    assert "model" in reply.json()["error"]["message"].lower()


def test_pages_of_a_long_history(client: TestClient, store: Store) -> None:
    conversation = _new(client)
    store.append_messages(
        conversation,
        [user(f"message {i}") if i % 2 == 0 else assistant(f"answer {i}") for i in range(250)],
    )
    path = f"/api/conversations/{conversation}/messages"
    first = client.get(path).json()
    assert (first["total"], first["offset"], first["limit"]) == (250, 0, 100)
    assert [m["index"] for m in first["items"]] == list(range(100))
    last = client.get(path, params={"offset": 200, "limit": 100}).json()
    assert [m["index"] for m in last["items"]] == list(range(200, 250))
    assert last["items"][0]["parts"][0]["text"] == "message 200"
    beyond = client.get(path, params={"offset": 1000}).json()
    assert beyond["items"] == [] and beyond["total"] == 250
    newest = client.get(path, params={"newest": "true", "limit": 30, "offset": 7}).json()
    assert (newest["total"], newest["offset"], newest["limit"]) == (250, 220, 30)
    assert [m["index"] for m in newest["items"]] == list(range(220, 250))
    everything = client.get(path, params={"newest": "true", "limit": 500}).json()
    assert (everything["offset"], len(everything["items"])) == (0, 250)


def _tool_messages(full_output: str | None) -> list[Message]:
    call = ToolCallPart(id="call-1", name="readFile", input={"path": "big.txt"})
    result = ToolResultPart(
        call_id="call-1", name="readFile", output="head … tail", full_output=full_output
    )
    return [
        user("read it"),
        Message(role="assistant", parts=(TextPart(text="Reading."), call)),
        Message(role="tool", parts=(result,)),
    ]


def test_tool_parts_in_camel_case_without_the_full_output(client: TestClient, store: Store) -> None:
    conversation = _new(client)
    full = "line\n" * 10_000
    records = store.append_messages(conversation, _tool_messages(full))
    page = client.get(f"/api/conversations/{conversation}/messages").json()
    call = page["items"][1]["parts"][1]
    assert call == {
        "kind": "tool-call",
        "id": "call-1",
        "name": "readFile",
        "input": {"path": "big.txt"},
    }
    result = page["items"][2]["parts"][0]
    assert result == {
        "kind": "tool-result",
        "callId": "call-1",
        "name": "readFile",
        "output": "head … tail",
        "isError": False,
        "compactedAt": None,
        "truncated": True,
    }
    with_full = client.get(
        f"/api/conversations/{conversation}/messages", params={"full": "true"}
    ).json()
    assert with_full["items"][2]["parts"][0]["fullOutput"] == full

    tool_message = records[2].id
    fetched = client.get(f"/api/conversations/{conversation}/messages/{tool_message}/parts/0/full")
    assert fetched.status_code == 200
    assert fetched.json() == {
        "messageId": tool_message,
        "partIndex": 0,
        "kind": "tool-result",
        "output": full,
        "truncated": True,
    }


def test_full_output_route_refuses_what_is_not_there(client: TestClient, store: Store) -> None:
    conversation = _new(client)
    other = _new(client)
    records = store.append_messages(conversation, _tool_messages(None))
    base = f"/api/conversations/{conversation}/messages"
    untruncated = client.get(f"{base}/{records[2].id}/parts/0/full").json()
    assert untruncated["truncated"] is False and untruncated["output"] == "head … tail"
    for path in (
        f"{base}/{records[2].id}/parts/1/full",  # no such part
        f"{base}/{records[1].id}/parts/0/full",  # a text part, not a tool result
        f"{base}/unknown/parts/0/full",
        f"/api/conversations/{other}/messages/{records[2].id}/parts/0/full",  # wrong parent
    ):
        reply = client.get(path)
        assert reply.status_code == 404, path
        assert reply.json()["error"]["code"] == "not_found"
