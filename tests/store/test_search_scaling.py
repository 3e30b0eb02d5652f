"""The sidebar's search reads the full-text index once, not once per message.

Left to choose, SQLite walked the conversation's messages and ran the full-text query
again for each one: quadratic in the history (a 20k-message conversation took minutes;
benchmarks/search_bench.py). Every statement the search runs must start from the
full-text index (its query plan's outer loop), whatever the history's size.
"""

from __future__ import annotations

from pathlib import Path

from foldline.core.messages import assistant, user
from foldline.store import Store


def test_every_search_statement_starts_from_the_full_text_index(tmp_path: Path) -> None:
    store = Store(tmp_path / "foldline.db")
    conversation = store.create_conversation(title="long").id
    history = []
    for n in range(1000):
        history += [user(f"question {n} about widgets"), assistant(f"answer {n} on widgets")]
    store.append_messages(conversation, history)
    conn = store._pool.get().conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    hit = store.search_hit(conversation, "widgets")
    conn.set_trace_callback(None)
    assert hit is not None and hit.match_count == 2000
    searches = [sql for sql in statements if "MATCH" in sql]
    assert len(searches) == 2
    for sql in searches:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        assert plan[0].startswith("SCAN messages_fts"), (sql, plan)
    store.close()
