"""Manual folds over SSE, the fold history, preview, undo, and the model's view."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store

COMPACTION_FIELDS = {
    "version",
    "strategy",
    "trigger",
    "turn",
    "tokensBefore",
    "tokensAfter",
    "apiStartIndex",
    "summarizedRange",
    "degraded",
}


def _conversation_with_history(client: TestClient, store: Store, pairs: int = 6) -> str:
    # keep_recent_tokens 0: the fold keeps only the last user turn, so a short history
    # has something to fold. The answers are long enough that folding them saves more
    # than the summary and the recall tools a folded conversation is offered take.
    conversation = client.post(
        "/api/conversations", json={"settings": {"compaction": {"keep_recent_tokens": 0}}}
    ).json()["id"]
    messages = []
    for i in range(pairs):
        messages += [user(f"question {i} " * 20), assistant(f"answer {i} " * 80)]
    store.append_messages(conversation, messages)
    return conversation


def _fold(client: TestClient, conversation: str, parse_sse, instructions: str | None = None):
    body = {"instructions": instructions} if instructions else None
    reply = client.post(f"/api/conversations/{conversation}/compact", json=body)
    assert reply.status_code == 200, reply.text
    return parse_sse(reply.text)


def test_manual_fold_streams_its_events_and_is_recorded(
    client: TestClient, store: Store, parse_sse
) -> None:
    conversation = _conversation_with_history(client, store)
    preview = client.get(f"/api/conversations/{conversation}/compactions/preview").json()
    assert preview["messages"] > 0 and preview["tokens"] > 0

    events = _fold(client, conversation, parse_sse, "Keep the numbers.")
    names = [event.name for event in events]
    assert names[0] == "compaction.started"
    assert names[-1] == "done"
    completed = next(e for e in events if e.name == "compaction.completed").data
    assert set(completed) >= COMPACTION_FIELDS
    assert completed["version"] == 1
    assert completed["trigger"] == "manual"
    assert completed["apiStartIndex"] == preview["toIndex"]
    assert set(completed["summarizedRange"]) == {"fromIndex", "toIndex", "messageCount"}

    conversation_body = client.get(f"/api/conversations/{conversation}").json()
    assert conversation_body["compaction"]["version"] == 1
    assert conversation_body["compaction"]["apiStartIndex"] == completed["apiStartIndex"]

    history = client.get(f"/api/conversations/{conversation}/compactions").json()
    assert history["currentVersion"] == 1
    assert [(c["version"], c["isCurrent"]) for c in history["items"]] == [(1, True)]
    assert history["items"][0]["summaryMessage"]
    # What the fold's summarizer calls used is on the fold line (no price: tokens only).
    usage = history["items"][0]["usage"]
    assert usage["calls"] >= 1 and usage["inputTokens"] > 0 and usage["cost"] is None
    meter = client.get(f"/api/conversations/{conversation}/context?messages=false").json()
    assert meter["usage"]["total"]["calls"] == usage["calls"]
    assert meter["backgroundFold"] is None

    page = client.get(f"/api/conversations/{conversation}/messages").json()
    boundary = completed["apiStartIndex"]
    assert page["apiStartIndex"] == boundary
    assert [m["inContext"] for m in page["items"]] == [
        m["index"] >= boundary for m in page["items"]
    ]
    assert not page["items"][0]["inContext"]


def test_fold_with_nothing_to_fold_reports_failure_and_ends(client: TestClient, parse_sse) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    events = _fold(client, conversation, parse_sse)
    assert [e.name for e in events][-1] == "done"
    assert "compaction.failed" in [e.name for e in events]
    assert client.get(f"/api/conversations/{conversation}/compactions").json()["items"] == []


def test_undo_brings_back_the_previous_view(client: TestClient, store: Store, parse_sse) -> None:
    conversation = _conversation_with_history(client, store)
    _fold(client, conversation, parse_sse)
    undone = client.post(f"/api/conversations/{conversation}/compactions/1/undo")
    assert undone.status_code == 200
    assert undone.json() == {"compaction": None}
    assert client.get(f"/api/conversations/{conversation}").json()["compaction"] is None
    history = client.get(f"/api/conversations/{conversation}/compactions").json()
    assert history["currentVersion"] == 0
    assert [(c["version"], c["isCurrent"]) for c in history["items"]] == [(1, False)]
    page = client.get(f"/api/conversations/{conversation}/messages").json()
    assert all(m["inContext"] for m in page["items"])

    again = client.post(f"/api/conversations/{conversation}/compactions/1/undo")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "not_current"
    unknown = client.post(f"/api/conversations/{conversation}/compactions/7/undo")
    assert unknown.status_code == 404
    assert client.post(f"/api/conversations/{conversation}/compactions/0/undo").status_code == 422


def test_stacked_folds_undo_one_at_a_time(client: TestClient, store: Store, parse_sse) -> None:
    conversation = _conversation_with_history(client, store)
    _fold(client, conversation, parse_sse)
    store.append_messages(
        conversation,
        [m for i in range(4) for m in (user(f"more {i} " * 20), assistant("ok " * 20))],
    )
    events = _fold(client, conversation, parse_sse)
    second = next(e for e in events if e.name == "compaction.completed").data
    assert second["version"] == 2
    assert client.post(f"/api/conversations/{conversation}/compactions/1/undo").status_code == 409
    undone = client.post(f"/api/conversations/{conversation}/compactions/2/undo").json()
    assert undone["compaction"]["version"] == 1


def test_context_is_what_the_model_sees(client: TestClient, store: Store, parse_sse) -> None:
    conversation = _conversation_with_history(client, store)
    before = client.get(f"/api/conversations/{conversation}/context")
    assert before.status_code == 200
    body = before.json()
    ratio_before = store.counting_calibration("local", "fake-model").ratio
    for key in (
        "tokens",
        "inputBudget",
        "contextWindow",
        "fraction",
        "exact",
        "breakdown",
        "apiMessages",
        "compaction",
        "thresholds",
        "modelKnown",
    ):
        assert key in body, key
    assert body["compaction"] is None
    assert body["contextWindow"] == 32768
    assert len(body["apiMessages"]) == 12
    assert body["apiMessages"][0]["parts"][0]["text"].startswith("question 0")
    assert set(body["breakdown"]) >= {"system", "tools", "summary", "messages"}

    _fold(client, conversation, parse_sse)
    after = client.get(f"/api/conversations/{conversation}/context").json()
    assert after["compaction"]["version"] == 1
    # The first fold also offers the recall tools (their specs join the request). The
    # summary call taught the calibration, so the counts are compared unscaled.
    ratio_after = store.counting_calibration("local", "fake-model").ratio
    assert after["breakdown"]["tools"] / ratio_after > body["breakdown"]["tools"] / ratio_before
    assert (
        after["tokens"] - after["breakdown"]["tools"] < body["tokens"] - body["breakdown"]["tools"]
    )
    assert len(after["apiMessages"]) < len(body["apiMessages"])


def test_each_version_names_its_parent_so_undone_branches_can_be_skipped(
    client: TestClient, store: Store, parse_sse
) -> None:
    conversation = _conversation_with_history(client, store)
    _fold(client, conversation, parse_sse)
    store.append_messages(
        conversation,
        [m for i in range(4) for m in (user(f"more {i} " * 20), assistant("ok " * 20))],
    )
    _fold(client, conversation, parse_sse)
    assert client.post(f"/api/conversations/{conversation}/compactions/2/undo").status_code == 200
    # Folding again after the undo stacks on version 1, not on the undone version 2.
    events = _fold(client, conversation, parse_sse)
    assert next(e for e in events if e.name == "compaction.completed").data["version"] == 3

    history = client.get(f"/api/conversations/{conversation}/compactions").json()
    assert history["currentVersion"] == 3
    assert [(c["version"], c["parentVersion"], c["isCurrent"]) for c in history["items"]] == [
        (1, 0, False),
        (2, 1, False),
        (3, 1, True),
    ]
    assert "parent_version" not in history["items"][0]


def test_context_without_messages_has_the_same_numbers(
    client: TestClient, store: Store, parse_sse
) -> None:
    conversation = _conversation_with_history(client, store)
    _fold(client, conversation, parse_sse)
    path = f"/api/conversations/{conversation}/context"
    full = client.get(path).json()
    default = client.get(path, params={"messages": "true"}).json()
    light_reply = client.get(path, params={"messages": "false"})
    assert light_reply.status_code == 200
    light = light_reply.json()

    assert full["apiMessagesIncluded"] is True
    assert default["apiMessagesIncluded"] is True
    assert full["apiMessages"] and full["apiMessages"] == default["apiMessages"]
    assert light["apiMessagesIncluded"] is False
    assert light["apiMessages"] == []
    # Everything but the messages is the same: the meter can rely on the light answer.
    without_messages = {"apiMessages", "apiMessagesIncluded"}
    assert {k: v for k, v in light.items() if k not in without_messages} == {
        k: v for k, v in full.items() if k not in without_messages
    }
    assert light["tokens"] > 0 and light["compaction"]["version"] == 1
    assert light["messagesInView"] == len(full["apiMessages"]) - 1  # the summary comes first

    refused = client.get(path, params={"messages": "maybe"})
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "invalid_request"


def _plain_conversation(client: TestClient, store: Store, pairs: int, words: int) -> str:
    """A conversation on the app's settings (keep_recent_tokens 8,000, more than it holds)."""
    conversation = client.post("/api/conversations", json={}).json()["id"]
    messages = []
    for i in range(pairs):
        messages += [user(f"question {i} " * words), assistant(f"answer {i} " * words)]
    store.append_messages(conversation, messages)
    return conversation


def test_manual_compact_folds_everything_before_the_last_exchange_and_shrinks_the_view(
    client: TestClient, store: Store, parse_sse
) -> None:
    """20 messages, far fewer tokens than the 8,000 kept after an automatic fold: a
    manual Compact still folds all but the last exchange, and reports the meter's count.
    (Enough of them that the fixed part of the view, the recall tools the first fold
    brings included, does not hide what the fold saves.)"""
    conversation = _plain_conversation(client, store, pairs=10, words=60)
    base = f"/api/conversations/{conversation}"
    before = client.get(f"{base}/context", params={"messages": "false"}).json()
    meter = before["tokens"]
    preview = client.get(f"{base}/compactions/preview").json()
    assert (preview["fromIndex"], preview["toIndex"], preview["messages"]) == (0, 18, 18)

    ratio_before = store.counting_calibration("local", "fake-model").ratio
    events = _fold(client, conversation, parse_sse)
    completed = next(e for e in events if e.name == "compaction.completed").data
    assert completed["apiStartIndex"] == 18
    assert completed["tokensBefore"] == meter
    ratio_after = store.counting_calibration("local", "fake-model").ratio
    counted = client.get(f"{base}/context", params={"messages": "false"}).json()
    # The first fold also offers the recall tools: the fold is planned and judged on the
    # view it leaves, their specs included, so its "after" is the meter's next number
    # (counted on the ratio the summary call taught, below).
    scale = ratio_after / ratio_before
    assert counted["breakdown"]["tools"] > before["breakdown"]["tools"] * scale
    after = counted["tokens"]
    # The answers fold away; the person's questions (half the tokens here) stay word for
    # word after the summary, well within their budget.
    assert after < meter * 0.75 * ratio_after / ratio_before
    # The summary call taught the calibration (this fake reports far fewer tokens than
    # the estimate): the fold counted its after on the ratio before that sample.
    assert ratio_after != ratio_before
    assert completed["tokensAfter"] == pytest.approx(after * ratio_before / ratio_after, rel=0.01)
    first = client.get(f"{base}/context").json()["apiMessages"][0]["parts"][0]["text"]
    assert "<person-words>" in first and ("question 0 " * 60).strip() in first


def test_the_dialog_can_keep_more_of_the_recent_messages(
    client: TestClient, store: Store, parse_sse
) -> None:
    conversation = _plain_conversation(client, store, pairs=8, words=60)
    base = f"/api/conversations/{conversation}"
    default = client.get(f"{base}/compactions/preview").json()
    keep_more = client.get(f"{base}/compactions/preview", params={"keepRecentTokens": 600}).json()
    assert 0 < keep_more["messages"] < default["messages"]
    reply = client.post(f"{base}/compact", json={"keepRecentTokens": 600})
    completed = next(e for e in parse_sse(reply.text) if e.name == "compaction.completed").data
    assert completed["apiStartIndex"] == keep_more["toIndex"]
    bad = client.get(f"{base}/compactions/preview", params={"keepRecentTokens": 2**63})
    assert bad.status_code == 422
    assert client.post(f"{base}/compact", json={"keepRecentTokens": -1}).status_code == 422


def test_a_fold_that_would_not_shrink_the_view_is_not_committed_and_says_why(
    client: TestClient, store: Store, parse_sse
) -> None:
    # Messages shorter than any summary: folding them would make the view larger.
    conversation = _plain_conversation(client, store, pairs=3, words=1)
    base = f"/api/conversations/{conversation}"
    assert client.get(f"{base}/compactions/preview").json()["messages"] == 4
    events = _fold(client, conversation, parse_sse)
    failed = next(e for e in events if e.name == "compaction.failed").data
    assert "would not make the model's view smaller" in failed["reason"]
    assert not any(e.name == "compaction.completed" for e in events)
    assert client.get(f"{base}/compactions").json()["items"] == []


def test_manual_folds_on_an_anchored_meter_are_judged_like_with_like(
    client: TestClient, store: Store, parse_sse
) -> None:
    """The fake model reports far fewer input tokens than the estimate, so after a turn
    the meter (anchored on that report) is well below a fresh estimate of the same view.
    A fold's fresh "after" must go on the meter's scale before it is compared with the
    meter's "before": otherwise every manual fold after a turn is refused as "not
    smaller" though it folds most of the view."""
    conversation = _plain_conversation(client, store, pairs=8, words=60)
    base = f"/api/conversations/{conversation}"
    for round_ in range(2):
        sent = client.post(f"{base}/messages", json={"content": f"One more thing {round_}."})
        assert sent.status_code == 200, sent.text
        context = client.get(f"{base}/context", params={"messages": "false"}).json()
        meter = context["tokens"]
        events = _fold(client, conversation, parse_sse)
        names = [e.name for e in events]
        assert "compaction.completed" in names, [e.data for e in events]
        completed = next(e for e in events if e.name == "compaction.completed").data
        assert completed["tokensBefore"] == meter
        assert completed["tokensAfter"] < meter
        if round_ == 1:
            assert completed["version"] == 2
        client.post(f"{base}/messages", json={"content": "question again " * 60})
