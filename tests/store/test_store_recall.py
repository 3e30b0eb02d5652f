"""The recall index (m017) and the recall tools' reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database

from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.recall import expanded_terms, fts_match, query_terms
from foldline.store import NotFound, Store
from foldline.store.recall import RECALL_TRIGGERS


def ask(store: Store, conversation_id: str, question: str, limit: int = 10) -> list[int]:
    rows, _total = store.recall_search(
        conversation_id, fts_match(expanded_terms(query_terms(question))), limit
    )
    return [row.seq for row in rows]


def test_the_index_holds_everything_a_message_says_in_full(store: Store) -> None:
    conversation = store.create_conversation()
    store.append_messages(
        conversation.id,
        [
            user("Been reading up on community gardens lately."),
            Message(
                role="assistant",
                parts=(
                    ReasoningPart(text="hidden musings about zeppelins"),
                    ToolCallPart(id="c1", name="grep", input={"pattern": "tomllib"}),
                ),
            ),
            tool_results(
                ToolResultPart(
                    call_id="c1",
                    name="grep",
                    output="[cut]",
                    full_output="line one\nthe quokka lives deep in the full output",
                    compacted_at="2025-03-01T00:00:00Z",
                )
            ),
            Message(
                role="user",
                parts=(
                    TextPart(text="see the file"),
                    AttachmentPart(
                        name="plan.pdf", media_type="application/pdf", text="[page 1]\nmarmoset"
                    ),
                ),
            ),
            assistant("done"),
        ],
    )
    assert ask(store, conversation.id, "What about gardening?") == [0]  # stemmed
    assert ask(store, conversation.id, "tomllib") == [1]  # a tool call's input
    assert ask(store, conversation.id, "quokka") == [2]  # a truncated, pruned output, in full
    assert ask(store, conversation.id, "marmosets") == [3]  # a PDF's text
    assert ask(store, conversation.id, "zeppelin") == []  # never the reasoning


def test_recall_tools_traffic_is_not_indexed(store: Store) -> None:
    conversation = store.create_conversation()
    store.append_messages(
        conversation.id,
        [
            user("llamas please"),
            assistant("", ToolCallPart(id="s", name="searchHistory", input={"query": "llamas"})),
            tool_results(ToolResultPart(call_id="s", name="searchHistory", output="#0 llamas")),
        ],
    )
    assert ask(store, conversation.id, "llamas") == [0]


@pytest.mark.parametrize(
    "question",
    [
        "NEAR(gardens bees)",
        'gardens AND "unclosed',
        "-gardens:col *",
        "garden's OR ^x",
        "{gardens bees}",
    ],
)
def test_fts_operators_in_a_question_are_plain_words(store: Store, question: str) -> None:
    conversation = store.create_conversation()
    store.append_message(conversation.id, user("community gardens are lovely"))
    assert ask(store, conversation.id, question) == [0]


def test_the_persons_words_rank_a_little_higher(store: Store) -> None:
    conversation = store.create_conversation()
    store.append_messages(
        conversation.id,
        [assistant("We chose PostgreSQL for the inventory."), user("We chose PostgreSQL then.")],
    )
    assert ask(store, conversation.id, "postgresql")[0] == 1


def test_more_terms_rank_first_and_the_total_counts_all(store: Store) -> None:
    conversation = store.create_conversation()
    store.append_messages(
        conversation.id,
        [user("the garden"), assistant("the garden had bees"), user("bees only")],
    )
    rows, total = store.recall_search(conversation.id, fts_match(["garden", "bees"]), 1)
    assert [r.seq for r in rows] == [1] and total == 3


def test_only_the_active_path_is_searched_and_read(store: Store) -> None:
    conversation = store.create_conversation()
    first, _ = store.append_messages(conversation.id, [user("hello"), assistant("about otters")])
    store.branch(conversation.id, first.id, assistant("about beavers"))
    assert ask(store, conversation.id, "otters") == []
    assert ask(store, conversation.id, "beavers") == [1]
    length, records = store.recall_read(conversation.id, 0, 5)
    assert length == 2
    assert [r.message.text for r in records] == ["hello", "about beavers"]


def test_read_of_a_missing_conversation_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.recall_read("nope", 0, 1)


def test_other_conversations_within_the_scope(store: Store) -> None:
    project = store.create_project(name="Garden")
    here = store.create_conversation(title="Here", project_id=project.id)
    sibling = store.create_conversation(title="Sibling", project_id=project.id)
    outside = store.create_conversation(title="Outside")
    elsewhere = store.create_conversation(
        title="Elsewhere", project_id=store.create_project(name="Other").id
    )
    for conversation in (here, sibling, outside, elsewhere):
        store.append_message(conversation.id, user(f"tomatoes in {conversation.title}"))
    match = fts_match(["tomato"])

    def titles(project_id: str | None) -> set[str]:
        rows, total = store.recall_search_others(here.id, project_id, match, 10)
        assert total == len(rows)
        return {row.title for row in rows}

    assert titles(project.id) == {"Sibling"}  # never this one, never another project's
    assert titles(None) == {"Sibling", "Outside", "Elsewhere"}
    store.delete_conversation(sibling.id)
    assert titles(project.id) == set()
    # A conversation being imported is not there yet.
    store._pool.get().conn.execute(
        "UPDATE conversations SET importing = 1 WHERE id = ?", (outside.id,)
    )
    assert titles(None) == {"Elsewhere"}


def test_a_table_rebuild_drops_the_recall_triggers_and_opening_repairs_them(
    db_path: Path,
) -> None:
    with Store(db_path) as store:
        conversation = store.create_conversation()
        store.append_message(conversation.id, user("the ancient walrus"))
    db = Database(db_path)
    db["messages"].transform(types={"token_count": int})
    present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert not present & set(RECALL_TRIGGERS)
    db.close()
    with Store(db_path) as store:
        assert ask(store, conversation.id, "walrus") == [0]
        store.append_message(conversation.id, user("a narwhal now"))
        assert ask(store, conversation.id, "narwhals") == [1]
