"""The recall tools' handlers on a real store: scope, sizes, errors."""

from __future__ import annotations

import pytest

from foldline.chat.recall_tools import RecallTools
from foldline.chat.tool_registry import ToolEnv, ToolOutcome
from foldline.core.messages import ToolCallPart, assistant, user
from foldline.core.recall import RecallScope
from foldline.store import Store


def count(text: str) -> int:
    return (len(text) + 3) // 4


def scope(cap: int = 2000, conversations: str = "project", project: str | None = None):
    return RecallScope(0, cap, conversations, project, count)  # type: ignore[arg-type]


async def call(
    store: Store, conversation_id: str, name: str, arguments: dict, recall: RecallScope | None
) -> ToolOutcome:
    tools = {tool.spec.name: tool for tool in RecallTools(store).tools()}
    env = ToolEnv(conversation_id, lambda: None, lambda _event: None, recall)  # type: ignore[arg-type]
    return await tools[name].run(ToolCallPart(id="c", name=name, input=arguments), env)


@pytest.fixture
def project_store(store: Store) -> tuple[Store, dict[str, str]]:
    garden = store.create_project(name="Garden")
    other = store.create_project(name="Other")
    ids = {
        "here": store.create_conversation(title="Here", project_id=garden.id).id,
        "sibling": store.create_conversation(title="Sibling", project_id=garden.id).id,
        "outside": store.create_conversation(title="Outside").id,
        "other": store.create_conversation(title="Other's", project_id=other.id).id,
        "garden": garden.id,
    }
    for key in ("here", "sibling", "outside", "other"):
        store.append_messages(
            ids[key], [user(f"We planted tomatoes ({key})."), assistant("Lovely.")]
        )
    return store, ids


async def test_a_ten_thousand_character_query_is_a_tool_error(store: Store) -> None:
    conversation = store.create_conversation()
    out = await call(store, conversation.id, "searchHistory", {"query": "x" * 10_000}, scope())
    assert out.is_error and "10,000 characters" in out.output


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"query": 5}, "query must be a string"),
        ({"query": "tomatoes", "limit": 0}, "limit must be an integer"),
        ({"query": "tomatoes", "limit": "3"}, "limit must be an integer"),
    ],
)
async def test_bad_arguments_are_tool_errors(store: Store, arguments: dict, error: str) -> None:
    conversation = store.create_conversation()
    out = await call(store, conversation.id, "searchHistory", arguments, scope())
    assert out.is_error and error in out.output


async def test_no_room_left_says_to_fold_first(store: Store) -> None:
    conversation = store.create_conversation()
    out = await call(store, conversation.id, "searchHistory", {"query": "a b c"}, scope(cap=10))
    assert out.is_error and "compactContext" in out.output


async def test_not_offered_without_a_scope(store: Store) -> None:
    conversation = store.create_conversation()
    out = await call(store, conversation.id, "readHistory", {"fromIndex": 0, "toIndex": 1}, None)
    assert out.is_error and "not available" in out.output


async def test_search_conversations_within_the_project(
    project_store: tuple[Store, dict[str, str]],
) -> None:
    store, ids = project_store
    found = await call(
        store,
        ids["here"],
        "searchConversations",
        {"query": "tomatoes"},
        scope(project=ids["garden"]),
    )
    assert not found.is_error
    hits = [line for line in found.output.splitlines() if line.startswith("#")]
    assert hits == [
        f'#0 in conversation {ids["sibling"]} "Sibling", person, ' + hits[0].split(", person, ")[1]
    ]
    assert "(sibling)" in found.output
    read = await call(
        store,
        ids["here"],
        "readHistory",
        {"fromIndex": 0, "toIndex": 1, "conversationId": ids["sibling"]},
        scope(project=ids["garden"]),
    )
    assert not read.is_error and "We planted tomatoes (sibling)." in read.output
    assert "in your view" not in read.output  # another conversation is never in the view
    # Another project's conversation, and one outside any project, are out of reach.
    for key in ("other", "outside"):
        refused = await call(
            store,
            ids["here"],
            "readHistory",
            {"fromIndex": 0, "toIndex": 1, "conversationId": ids[key]},
            scope(project=ids["garden"]),
        )
        assert refused.is_error and "within reach" in refused.output
        assert "tomatoes" not in refused.output


async def test_across_all_conversations_only_when_allowed(
    project_store: tuple[Store, dict[str, str]],
) -> None:
    store, ids = project_store
    off = await call(store, ids["outside"], "searchConversations", {"query": "tomatoes"}, scope())
    assert off.is_error and "recall_conversations" in off.output
    everywhere = await call(
        store,
        ids["outside"],
        "searchConversations",
        {"query": "tomatoes"},
        scope(conversations="all"),
    )
    assert not everywhere.is_error
    assert {"(here)", "(sibling)", "(other)"} <= {
        word.rstrip(".") for word in everywhere.output.split() if word.startswith("(")
    }
    none = await call(
        store,
        ids["here"],
        "searchConversations",
        {"query": "tomatoes"},
        scope(conversations="off", project=ids["garden"]),
    )
    assert none.is_error and "turned off" in none.output


async def test_read_history_marks_what_the_view_holds_and_continues(store: Store) -> None:
    conversation = store.create_conversation()
    store.append_messages(
        conversation.id, [user(f"message {i} " + "words " * 60) for i in range(12)]
    )
    recall = RecallScope(10, 300, "project", None, count)
    out = await call(store, conversation.id, "readHistory", {"fromIndex": 8, "toIndex": 50}, recall)
    assert not out.is_error
    assert out.output.startswith("#8 person, ")
    assert "fromIndex=" in out.output and "toIndex=11" in out.output
    tail = await call(
        store, conversation.id, "readHistory", {"fromIndex": 10, "toIndex": 11}, scope(cap=2000)
    )
    assert "#10 person" in tail.output
    out_of_range = await call(
        store, conversation.id, "readHistory", {"fromIndex": 12, "toIndex": 13}, recall
    )
    assert out_of_range.is_error and "#0 to #11" in out_of_range.output
