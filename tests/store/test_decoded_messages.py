"""Decoded messages are kept between reads, and a read never shows a stale one.

The cache is keyed by a message's stored text, so every write path (a streamed answer's
flushes, a prune, a fold, an edit, a delete, a hand edit of the database) is checked
here the same way: after the write, the view read through the cache equals the view
decoded afresh from the rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from pydantic import ValidationError
from store_helpers import exchange, fold_state, rich_history

from foldline.core.messages import Message, TextPart, ToolResultPart, assistant, user
from foldline.store import NotFound, Store
from foldline.store.decoded_messages import DecodedMessages, shareable
from foldline.store.records import DECODED_MESSAGES, decode_message


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    DECODED_MESSAGES.clear()
    yield
    DECODED_MESSAGES.clear()


def cached_view(store: Store, conversation_id: str) -> list[Message]:
    _state, records = store.load_window(conversation_id)
    return [record.message for record in records]


def fresh_view(store: Store, conversation_id: str) -> list[Message]:
    """The same rows decoded without the cache (with their files put back, as a read
    of the view does)."""
    state = store.current_compaction(conversation_id)
    start = state.api_start_index if state else 0
    path = store.list_messages(conversation_id, offset=start, limit=100_000)
    ids = [record.id for record in path]
    conn = sqlite3.connect(store.path)
    try:
        rows = dict(
            (row[0], (row[1], row[2]))
            for row in conn.execute(
                f"SELECT id, role, parts FROM messages WHERE id IN ({', '.join('?' * len(ids))})",
                ids,
            )
        )
    finally:
        conn.close()
    return store.hydrate([decode_message(*rows[message_id]) for message_id in ids])


def assert_current(store: Store, conversation_id: str) -> list[Message]:
    view = cached_view(store, conversation_id)
    assert view == fresh_view(store, conversation_id)
    return view


def test_a_second_read_reuses_the_decoded_messages(store: Store) -> None:
    conversation = store.create_conversation().id
    store.append_messages(conversation, [user("hello"), assistant("hi"), *exchange(1)])
    first = cached_view(store, conversation)
    hits = DECODED_MESSAGES.hits
    second = assert_current(store, conversation)
    assert DECODED_MESSAGES.hits > hits
    texts = [(a, b) for a, b in zip(first, second, strict=True) if shareable(a)]
    assert texts and all(a is b for a, b in texts)


def test_a_tool_calls_mutable_input_is_never_shared(store: Store) -> None:
    conversation = store.create_conversation().id
    store.append_messages(conversation, exchange(1))
    call = cached_view(store, conversation)[1]
    assert call.tool_calls and not shareable(call)
    call.tool_calls[0].input["cmd"] = "rm -rf /"  # a careless caller
    again = assert_current(store, conversation)[1]
    assert again is not call
    assert again.tool_calls[0].input == {"cmd": "ls dir1"}


def test_a_shared_message_cannot_be_changed(store: Store) -> None:
    conversation = store.create_conversation().id
    store.append_messages(conversation, [user("hello")])
    message = cached_view(store, conversation)[0]
    with pytest.raises(ValidationError):
        message.parts[0].text = "changed"  # type: ignore[misc]


def test_a_streamed_answers_flushes_are_read_as_written(store: Store) -> None:
    conversation = store.create_conversation().id
    store.append_messages(conversation, [user("question")])
    answer = store.append_message(conversation, assistant(""), status="streaming")
    for text in ("Hel", "Hello", "Hello there", "Hello"):
        store.update_message(answer.id, message=assistant(text))
        assert assert_current(store, conversation)[-1].text == text


def test_a_prune_and_a_fold_are_read_as_written(store: Store) -> None:
    conversation = store.create_conversation().id
    records = store.append_messages(conversation, [*exchange(1), *exchange(2)])
    assert_current(store, conversation)
    result = records[2]
    pruned_part = result.message.parts[0]
    assert isinstance(pruned_part, ToolResultPart)
    pruned = Message(
        role="tool", parts=(pruned_part.model_copy(update={"compacted_at": "2025-03-01T00:00Z"}),)
    )
    store.commit_prune(conversation, {result.id: pruned})
    view = assert_current(store, conversation)
    assert view[2].tool_results[0].compacted_at == "2025-03-01T00:00Z"
    store.commit_fold(conversation, fold_state(1, 4), expected_version=0)
    assert [m.text for m in assert_current(store, conversation)] == [
        "question 2",
        "let me look 2",
        "",
        "answer 2",
    ]


def test_an_edit_a_branch_switch_and_a_delete_are_read_as_written(store: Store) -> None:
    conversation = store.create_conversation().id
    first, _answer = store.append_messages(conversation, [user("first"), assistant("reply")])
    assert_current(store, conversation)
    edited = store.branch(conversation, None, user("first, edited"))
    assert edited is not None
    assert [m.text for m in assert_current(store, conversation)] == ["first, edited"]
    store.switch_branch(conversation, first.id)
    assert [m.text for m in assert_current(store, conversation)] == ["first", "reply"]
    store.delete_conversation(conversation)
    with pytest.raises(NotFound):
        store.load_window(conversation)
    # The same text in a new conversation decodes to the same (shared) message.
    again = store.create_conversation().id
    store.append_messages(again, [user("first")])
    assert [m.text for m in assert_current(store, again)] == ["first"]


def test_a_hand_edit_of_the_database_is_read_as_written(store: Store) -> None:
    conversation = store.create_conversation().id
    (record,) = store.append_messages(conversation, [user("before")])
    assert cached_view(store, conversation)[0].text == "before"
    conn = sqlite3.connect(store.path)
    with conn:
        conn.execute(
            "UPDATE messages SET parts = ? WHERE id = ?",
            ('[{"kind":"text","text":"after"}]', record.id),
        )
        conn.execute("UPDATE messages SET role = 'assistant' WHERE id = ?", (record.id,))
    conn.close()
    view = assert_current(store, conversation)
    assert (view[0].role, view[0].text) == ("assistant", "after")


def test_every_kind_of_part_reads_back_equal(store: Store) -> None:
    conversation = store.create_conversation().id
    store.append_messages(conversation, rich_history())
    assert_current(store, conversation)
    assert_current(store, conversation)


def test_the_cache_is_bounded_and_evicts_the_least_recently_used() -> None:
    cache = DecodedMessages(max_chars=120, max_entry_chars=40)

    def text(n: int) -> str:
        return f'[{{"kind":"text","text":"{n:0>10}"}}]'  # 37 characters

    def decode(n: int) -> Message:
        return Message(role="user", parts=(TextPart(text=f"{n:0>10}"),))

    for n in range(3):
        cache.get("user", text(n), lambda n=n: decode(n))
    assert len(cache) == 3 and cache.chars == 111
    cache.get("user", text(0), lambda: pytest.fail("0 is cached"))  # 0 is now the newest
    cache.get("user", text(3), lambda: decode(3))  # evicts 1, the least recently used
    assert len(cache) == 3 and cache.chars == 111
    cache.get("user", text(0), lambda: pytest.fail("0 is still cached"))
    decoded: list[int] = []
    cache.get("user", text(1), lambda: decoded.append(1) or decode(1))
    assert decoded == [1]
    big = '[{"kind":"text","text":"' + "x" * 40 + '"}]'
    cache.get("user", big, lambda: Message(role="user", parts=(TextPart(text="x" * 40),)))
    assert big not in {key for _role, key in cache._entries}
    # The role is part of the key.
    as_assistant = cache.get(
        "assistant", text(0), lambda: Message(role="assistant", parts=decode(0).parts)
    )
    assert as_assistant.role == "assistant"
