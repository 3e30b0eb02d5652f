"""The app's own export of a 100,000-message conversation goes back in, through the API.

The import route streams its body to a file and reads one message at a time, so the
size is bounded by the disk, not by memory (figures: docs/benchmarks.md, "Export and
import")."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import Store

MESSAGES = 100_000
BATCH = 5_000


@pytest.mark.slow
def test_a_100k_message_export_round_trips(client: TestClient, store: Store) -> None:
    conversation = store.create_conversation(title="a long one", model="fake-model")
    for start in range(0, MESSAGES, BATCH):
        store.append_messages(
            conversation.id,
            [
                user(f"question {i}") if i % 2 == 0 else assistant(f"answer {i} " * 5)
                for i in range(start, start + BATCH)
            ],
        )
    fold = CompactionState(
        version=1,
        compacted_at="2026-01-01T00:00:00Z",
        summary_message="everything before 90,000",
        api_start_index=90_000,
        summarized_range=SummarizedRange(from_index=0, to_index=90_000, message_count=90_000),
        strategy="structured",
        trigger="manual",
        tokens_before=900_000,
        tokens_after=9_000,
    )
    store.commit_fold(conversation.id, fold, expected_version=0)

    exported = client.get(f"/api/conversations/{conversation.id}/export")
    assert exported.status_code == 200
    body = exported.content
    assert len(body) > 10 * 2**20  # past the old 10 MiB limit
    chunks = (body[i : i + 2**20] for i in range(0, len(body), 2**20))
    imported = client.post(
        "/api/conversations/import", content=chunks, headers={"Content-Type": "application/json"}
    )
    assert imported.status_code == 201, imported.text[:500]
    copy = imported.json()
    assert copy["messageCount"] == MESSAGES
    assert copy["compaction"] is None or copy["compaction"]["apiStartIndex"] == 90_000
    assert store.current_compaction(copy["id"]).api_start_index == 90_000
    last = store.list_messages(copy["id"], offset=MESSAGES - 2, limit=2)
    assert [m.message.text for m in last] == [
        f"question {MESSAGES - 2}",
        f"answer {MESSAGES - 1} " * 5,
    ]
    again = client.get(f"/api/conversations/{copy['id']}/export")
    assert len(again.content) == len(body)
