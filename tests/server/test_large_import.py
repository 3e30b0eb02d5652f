"""The app's own export of a 30,000-message conversation of 13 MiB goes back in, through the API.

The import route streams its body to a file and reads one message at a time, so the
size is bounded by the disk, not by memory (figures: docs/benchmarks.md, "Export and
import")."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import Store

MESSAGES = 30_000
BATCH = 5_000
FOLDED = 27_000
# Long answers take the export past the old 10 MiB limit with a third of the messages the
# test once used: the time goes per message, the limit is about bytes.
ANSWER_REPEATS = 40


@pytest.mark.slow
def test_a_long_export_past_10_mib_round_trips(client: TestClient, store: Store) -> None:
    conversation = store.create_conversation(title="a long one", model="fake-model")
    for start in range(0, MESSAGES, BATCH):
        store.append_messages(
            conversation.id,
            [
                user(f"question {i}") if i % 2 == 0 else assistant(f"answer {i} " * ANSWER_REPEATS)
                for i in range(start, start + BATCH)
            ],
        )
    fold = CompactionState(
        version=1,
        compacted_at="2026-01-01T00:00:00Z",
        summary_message="everything before 27,000",
        api_start_index=FOLDED,
        summarized_range=SummarizedRange(from_index=0, to_index=FOLDED, message_count=FOLDED),
        strategy="structured",
        trigger="manual",
        tokens_before=2_700_000,
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
    assert copy["compaction"] is None or copy["compaction"]["apiStartIndex"] == FOLDED
    assert store.current_compaction(copy["id"]).api_start_index == FOLDED
    last = store.list_messages(copy["id"], offset=MESSAGES - 2, limit=2)
    assert [m.message.text for m in last] == [
        f"question {MESSAGES - 2}",
        f"answer {MESSAGES - 1} " * ANSWER_REPEATS,
    ]
    again = client.get(f"/api/conversations/{copy['id']}/export")
    # The same export but for the copy's title, which says it is an import.
    assert len(again.content) == len(body) + len(" (imported)")
