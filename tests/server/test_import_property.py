"""Forged imports, generated: whatever a file holds, an import is refused with a 4xx, or
the conversation it creates works: every read, a turn, a fold, an undo, an export and a
re-import. Never a 500, never a conversation that breaks later.

The documents start from a real export (two branches, a fold on each, pins, usage) and
are changed at random: tree links, indices, folds and their chain, pins, settings,
usage, tool inputs and strings (deep nesting, lone surrogates, huge or infinite numbers).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from foldline.core.messages import ToolCallPart, ToolResultPart, assistant, tool_results, user
from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import Store

JSON = {"content-type": "application/json"}


def deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["\ud800", "a\udfffb", "\U0001f600", "x" * 5000, "2026-01-01T00:00:00Z"]),
    st.integers(min_value=30, max_value=300).map(deep),
)
VALUES = st.recursive(
    LEAVES,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


def _fold(version: int, parent: int, start: int, last: str | None) -> dict[str, Any]:
    return {
        "version": version,
        "parentVersion": parent,
        "current": False,
        "compactedAt": "2026-01-01T00:00:00+00:00",
        "summaryMessage": f"summary v{version}",
        "apiStartIndex": start,
        "summarizedRange": {"fromIndex": 0, "toIndex": start, "messageCount": start},
        "strategy": "structured",
        "trigger": "manual",
        "tokensBefore": 100,
        "tokensAfter": 50,
        "model": None,
        "degraded": False,
        "lastMessageId": last,
    }


# One change to the document: (what, which, value); `which` picks an item by position.
# Structural changes keep more documents acceptable, so that more of them reach the
# checks that follow an accepted import.
STRUCTURAL = st.one_of(
    st.tuples(
        st.just("fold"),
        st.tuples(
            st.integers(0, 5),
            st.sampled_from(["apiStartIndex", "lastMessageId", "parentVersion", "current"]),
        ),
        st.one_of(st.integers(0, 20), st.booleans(), st.none()),
    ),
    st.tuples(st.just("link"), st.tuples(st.integers(0, 40), st.integers(0, 40)), st.none()),
    st.tuples(st.just("add fold"), st.tuples(st.integers(0, 40), st.integers(0, 5)), st.booleans()),
    st.tuples(st.just("pin"), st.integers(0, 40), st.none()),
    st.tuples(st.just("drop"), st.integers(0, 40), st.none()),
    st.tuples(
        st.just("conversation"),
        st.just("settings"),
        st.dictionaries(st.text(max_size=6), LEAVES, max_size=3),
    ),
)
CHANGES = st.one_of(
    STRUCTURAL,
    STRUCTURAL,
    st.tuples(
        st.just("conversation"),
        st.sampled_from(["settings", "title", "systemPrompt", "activeLeafId", "model"]),
        VALUES,
    ),
    st.tuples(
        st.just("message"),
        st.tuples(
            st.integers(0, 40),
            st.sampled_from(
                ["parentId", "index", "usage", "pinnedAt", "leafFoldVersion", "status", "role"]
            ),
        ),
        VALUES,
    ),
    st.tuples(
        st.just("part"),
        st.tuples(
            st.integers(0, 40), st.sampled_from(["text", "input", "name", "call_id", "output"])
        ),
        VALUES,
    ),
)


def apply(document: dict[str, Any], change: tuple[str, Any, Any]) -> None:
    what, which, value = change
    messages, folds = document["messages"], document["compactions"]
    ids = [m["id"] for m in messages]
    if what == "conversation":
        document["conversation"][which] = (
            ids[len(repr(value)) % len(ids)]
            if (which == "activeLeafId" and value is None)
            else value
        )
    elif what == "message":
        position, key = which
        message = messages[position % len(messages)]
        message[key] = ids[len(repr(value)) % len(ids)] if key == "parentId" else value
    elif what == "part":
        position, key = which
        parts = messages[position % len(messages)]["parts"]
        if parts:
            parts[0][key] = value
    elif what == "fold" and folds:
        position, key = which
        folds[position % len(folds)][key] = (
            ids[value % len(ids)] if key == "lastMessageId" and isinstance(value, int) else value
        )
    elif what == "link":
        child, parent = which
        messages[child % len(messages)]["parentId"] = ids[parent % len(ids)]
    elif what == "add fold":
        # A well-formed fold on any message, on any parent: the forged chains.
        position, parent = which
        last = messages[position % len(messages)]
        versions = [f["version"] for f in folds if isinstance(f.get("version"), int)]
        if not isinstance(last.get("index"), int) or isinstance(last["index"], bool):
            return
        fold = _fold(
            max(versions, default=0) + 1,
            ([0, *versions])[parent % (len(versions) + 1)],
            last["index"] + 1,
            last["id"],
        )
        fold["current"] = value
        if value:
            for other in folds:
                other["current"] = False
        folds.append(fold)
    elif what == "pin":
        messages[which % len(messages)]["pinnedAt"] = "2026-01-02T00:00:00+00:00"
    elif what == "drop":
        del messages[which % len(messages)]


def _base_export(client: TestClient, store: Store) -> dict[str, Any]:
    conversation = client.post("/api/conversations", json={"title": "base"}).json()["id"]
    call = ToolCallPart(id="c1", name="getContextStats", input={"why": ["x", {"y": 1}]})
    store.append_messages(
        conversation,
        [
            user("first question " + "word " * 50),
            assistant("let me look", call),
            tool_results(ToolResultPart(call_id="c1", name="getContextStats", output="ok")),
            assistant("answer one"),
            user("second question"),
            assistant("answer two"),
        ],
        usage={"inputTokens": 10, "outputTokens": 2},
    )
    path = store.list_messages(conversation)
    store.set_pinned(conversation, path[0].id, True)
    fold = CompactionState(
        version=1,
        compacted_at="2026-01-01T00:00:00+00:00",
        summary_message="summary one",
        api_start_index=4,
        summarized_range=SummarizedRange(from_index=0, to_index=4, message_count=4),
        strategy="structured",
        trigger="manual",
        tokens_before=100,
        tokens_after=40,
    )
    store.commit_fold(conversation, fold, expected_version=0)
    store.branch(conversation, path[1].id, assistant("another answer one"))
    store.append_messages(conversation, [user("on the branch"), assistant("branch answer")])
    return client.get(f"/api/conversations/{conversation}/export").json()


BASE: dict[int, dict[str, Any]] = {}


def _works(client: TestClient, conversation: str) -> None:
    base = f"/api/conversations/{conversation}"
    for path in ("", "/messages", "/context", "/compactions", "/compactions/preview"):
        answer = client.get(base + path)
        assert answer.status_code == 200, (path, answer.text)
    assert client.get("/api/conversations").status_code == 200
    assert client.get(f"{base}/tool-calls/pending").status_code == 200
    sent = client.post(f"{base}/messages", json={"content": "and now?"})
    assert sent.status_code == 200 and "event: error" not in sent.text, sent.text[-500:]
    folded = client.post(f"{base}/compact", json={})
    assert folded.status_code == 200 and "event: error" not in folded.text, folded.text[-500:]
    current = client.get(base).json()["compaction"]
    if current is not None:
        undone = client.post(f"{base}/compactions/{current['version']}/undo")
        assert undone.status_code < 500, undone.text
        for path in ("", "/messages", "/context", "/compactions"):
            assert client.get(base + path).status_code == 200, path
    exported = client.get(f"{base}/export")
    assert exported.status_code == 200
    again = client.post("/api/conversations/import", content=exported.content, headers=JSON)
    assert again.status_code == 201, again.text
    assert client.get(f"{base}/export", params={"format": "markdown"}).status_code == 200


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(CHANGES, min_size=1, max_size=4))
def test_a_forged_import_is_refused_or_leaves_everything_working(
    client: TestClient, store: Store, changes: list[tuple[str, Any, Any]]
) -> None:
    if id(store) not in BASE:
        BASE.clear()
        BASE[id(store)] = _base_export(client, store)
    document = copy.deepcopy(BASE[id(store)])
    for change in changes:
        apply(document, change)
    body = json.dumps(document).replace("-Infinity", "-1e400").replace("Infinity", "1e400")
    imported = client.post("/api/conversations/import", content=body, headers=JSON)
    assert imported.status_code in (201, 400, 422), imported.text
    event(f"status {imported.status_code}")
    if imported.status_code == 201:
        _works(client, imported.json()["id"])
