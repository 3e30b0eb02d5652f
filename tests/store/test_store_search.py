from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database
from store_helpers import rich_history

from foldline.core.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.store import Store
from foldline.store.search import fts_query


def test_search_finds_text_tool_traffic_and_attachments(store: Store) -> None:
    conversation = store.create_conversation()
    records = store.append_messages(
        conversation.id,
        [
            user("Where is the config parser?"),
            assistant("", ToolCallPart(id="c", name="grep", input={"pattern": "tomllib"})),
            tool_results(ToolResultPart(call_id="c", name="grep", output="src/settings.py:3")),
            *rich_history(),
        ],
    )
    by_text = {r.id: r for r in records}

    def hits(q: str) -> list[int]:
        return sorted(by_text[r.id].seq for r in store.search_messages(q))

    assert hits("parser") == [0]
    assert hits("tomllib") == [1]  # tool-call input
    assert hits("settings") == [2]  # tool-result output
    assert hits("notes") == [6]  # attachment name and text
    assert hits("thinking") == []  # the model's reasoning is not searched
    assert hits("unicode") == []  # only in the reasoning
    (accented,) = store.append_messages(conversation.id, [user("a note on ünïcödé")])
    assert [r.id for r in store.search_messages("unicode")] == [accented.id]  # diacritics folded


def test_terms_are_anded_and_the_last_one_is_a_prefix(store: Store) -> None:
    conversation = store.create_conversation()
    a, b = store.append_messages(conversation.id, [user("apple banana"), user("apple cherry")])
    assert {r.id for r in store.search_messages("apple")} == {a.id, b.id}
    assert [r.id for r in store.search_messages("apple ban")] == [a.id]
    assert [r.id for r in store.search_messages("APPLE Cherry")] == [b.id]
    assert store.search_messages("banana cherry") == []


@pytest.mark.parametrize(
    "typed", ['"', "c++", "foo-bar", "a:b", "NEAR(x y)", "AND", "*", "-x", "(((", "x' OR 1=1"]
)
def test_typed_punctuation_never_breaks_the_query(store: Store, typed: str) -> None:
    conversation = store.create_conversation(title=typed)
    store.append_message(conversation.id, user(f"literal {typed} here"))
    store.search_messages(typed)
    store.list_conversations(q=typed)


def test_query_quoting() -> None:
    assert fts_query('say "hi" now') == '"say" """hi""" "now"*'
    assert fts_query("  ") is None
    assert fts_query("- * ()") is None


def test_search_can_be_limited_to_one_conversation(store: Store) -> None:
    first = store.create_conversation()
    second = store.create_conversation()
    store.append_message(first.id, user("shared word zebra"))
    mine = store.append_message(second.id, user("zebra again"))
    assert len(store.search_messages("zebra")) == 2
    assert [r.id for r in store.search_messages("zebra", conversation_id=second.id)] == [mine.id]
    assert len(store.search_messages("zebra", limit=1)) == 1


def test_list_conversations_matches_titles_and_message_text(store: Store) -> None:
    by_title = store.create_conversation(title="Kubernetes upgrade plan")
    by_text = store.create_conversation(title="Untitled")
    store.append_message(by_text.id, user("how do I drain a kubernetes node?"))
    unrelated = store.create_conversation(title="Dinner")
    store.append_message(unrelated.id, user("pasta"))
    assert [c.id for c in store.list_conversations(q="kubernetes")] == [by_text.id, by_title.id]
    assert [c.id for c in store.list_conversations(q="upgrade plan")] == [by_title.id]
    assert [c.id for c in store.list_conversations(q="kube")] == [by_text.id, by_title.id]
    assert store.list_conversations(q="sushi") == []
    # 100% is a literal in titles, not a LIKE wildcard.
    assert store.list_conversations(q="100%") == []


def test_reasoning_indexed_before_the_migration_leaves_the_index(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = Store(path)
    conversation = store.create_conversation()
    record = store.append_message(
        conversation.id,
        Message(role="assistant", parts=(ReasoningPart(text="ponder"), TextPart(text="said"))),
    )
    store.close()
    # As an older version left it: the reasoning indexed, m015 not yet applied.
    db = Database(path)
    (pk,) = db.execute("SELECT pk FROM messages WHERE id = ?", [record.id]).fetchone()
    with db.conn:
        db.execute("INSERT INTO messages_fts (rowid, text) VALUES (?, 'ponder')", [pk])
        db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm015_search_skips_reasoning'")
    db.close()
    store = Store(path)  # migrates: the index is rebuilt without reasoning
    assert store.search_messages("ponder") == []
    assert [r.id for r in store.search_messages("said")] == [record.id]
    store.close()
