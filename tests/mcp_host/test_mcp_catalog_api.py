"""The MCP routes a person uses directly, over HTTP with server-everything running: its
prompts (for "/" in the message box), its resources (browsed and read), the folders it
may see (roots), and the questions a server asks, answered through the API with a wrong
field refused first."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_host_helpers import BASE_CONFIG
from test_mcp_api import Live
from test_mcp_everything import PROGRAM, _program

from foldline.testing import ScriptedModel, call, text_step, tool_step


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    _program()
    (tmp_path / "config.toml").write_text(
        BASE_CONFIG
        + f'\n[mcp_servers.ev]\ncommand = "{PROGRAM}"\nargs = ["stdio"]\napproval = "always"\n'
    )
    live = Live(tmp_path, ScriptedModel())
    yield live
    live.close()


def turn(live: Live, conversation: str, text: str, answer) -> list[tuple[str, dict]]:
    events: list[tuple[str, dict]] = []
    with live.http.stream(
        "POST", f"/api/conversations/{conversation}/messages", json={"content": text}
    ) as response:
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                events.append((name, data))
                if name == "tool.elicitation_required":
                    threading.Thread(target=answer, args=(conversation, data)).start()
    return events


def test_prompts_resources_roots_and_questions(live: Live, tmp_path: Path) -> None:
    http = live.http
    conversation = http.post("/api/conversations", json={}).json()["id"]
    replies: list[tuple[int, dict]] = []

    def answer(conversation_id: str, data: dict) -> None:
        url = f"/api/conversations/{conversation_id}/elicitations/{data['elicitationId']}"
        wrong = http.post(
            url, json={"action": "accept", "content": {"name": "Grace", "integer": "many"}}
        )
        replies.append((wrong.status_code, wrong.json()))
        waiting = http.get(f"/api/conversations/{conversation_id}/elicitations").json()
        assert [item["elicitationId"] for item in waiting["items"]] == [data["elicitationId"]]
        right = http.post(url, json={"action": "accept", "content": {"name": "Grace"}})
        replies.append((right.status_code, right.json()))

    live.model.add(tool_step(call("ev__trigger-elicitation-request", {})), text_step("ok"))
    events = turn(live, conversation, "ask me", answer)
    [(bad_status, bad), (good_status, good)] = replies
    assert bad_status == 422 and "Integer: a whole number is needed" in bad["error"]["message"]
    assert good_status == 200 and good["action"] == "accept"
    [result] = [data for name, data in events if name == "tool.result"]
    assert "Grace" in result["output"]

    # The server runs now: its prompts and resources are offered.
    prompts = http.get("/api/mcp/prompts").json()["items"]
    simple = next(p for p in prompts if p["name"] == "simple-prompt")
    assert simple["server"] == "ev"
    with_args = next(p for p in prompts if p["arguments"])
    filled = {a["name"]: "Paris" for a in with_args["arguments"] if a["required"]}
    text = http.post(
        "/api/mcp/prompts/get",
        json={"server": "ev", "name": with_args["name"], "arguments": filled},
    ).json()["text"]
    assert "Paris" in text

    resources = http.get("/api/mcp/servers/ev/resources").json()["items"]
    assert resources and all(r["uri"].startswith("demo://") for r in resources)
    read = http.post("/api/mcp/servers/ev/resources/read", json={"uri": resources[0]["uri"]}).json()
    assert read["uri"] == resources[0]["uri"] and (read["text"] or read["dataBase64"])
    missing = http.post("/api/mcp/servers/nope/resources/read", json={"uri": "x"})
    assert missing.status_code == 404

    # Roots: only existing folders, by full path; written to config.toml.
    folder = tmp_path / "work"
    folder.mkdir()
    assert http.put("/api/mcp/servers/ev/roots", json={"roots": ["relative"]}).status_code == 422
    saved = http.put("/api/mcp/servers/ev/roots", json={"roots": [str(folder)]}).json()
    assert saved["roots"] == [str(folder)]
    assert str(folder) in (tmp_path / "config.toml").read_text()
