"""A view's count is a sum of stored per-message counts, exactly the count of the view.

The meter's count (`GET …/context?messages=false`) reads stored counts and shapes only;
these tests check that it equals the count of the view `build_api_messages` makes,
whatever pair repair, pruning, folds and pins do, and that stored counts follow every
change of a message.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from foldline.chat.context import ContextLoader
from foldline.chat.counting import PROBE, CachedCounter, TailEntry, counter_key, tail_counts
from foldline.config import AppConfig
from foldline.core.messages import (
    AttachmentPart,
    Message,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.state import CompactionState, SummarizedRange
from foldline.core.view import mark_unanswered, repair_pairs, view_message
from foldline.core.view_counts import ALTERED, irregular_spans, message_shape
from foldline.store import MessageRecord, Store


class LengthCounter:
    """Counts a message by the length of its JSON (every byte matters), and records
    which texts it counted."""

    exact = True

    def __init__(self) -> None:
        self.counted = 0

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: Message) -> int:
        self.counted += message not in PROBE  # the fingerprint's messages aside
        return len(message.model_dump_json())

    def count_tools(self, tools: object) -> int:
        return 7

    def count_request(self, system: str, messages: list[Message], tools: object) -> int:
        return (
            3
            + len(system)
            + (7 if tools else 0)
            + sum(self.count_message(message) for message in messages)
        )


IDS = st.sampled_from(["a", "b", "c"])
PRUNED = st.sampled_from([None, "2025-01-01T00:00:00Z"])


def _result(call_id: str, pruned: str | None) -> ToolResultPart:
    return ToolResultPart(call_id=call_id, name="t", output="out " * 5, compacted_at=pruned)


MESSAGES = st.one_of(
    st.builds(user, st.sampled_from(["hi", "more"])),
    st.builds(
        lambda text, ids: assistant(text, *(ToolCallPart(id=i, name="t") for i in ids)),
        st.sampled_from(["", "ok"]),
        st.lists(IDS, max_size=3),
    ),
    st.builds(
        lambda pairs, attach: tool_results(*(_result(i, p) for i, p in pairs)).model_copy(
            update={
                "parts": tool_results(*(_result(i, p) for i, p in pairs)).parts
                + ((AttachmentPart(name="x.png", media_type="image/png"),) if attach else ())
            }
        ),
        st.lists(st.tuples(IDS, PRUNED), max_size=3),
        st.booleans(),
    ),
    st.just(Message(role="user", parts=(ToolResultPart(call_id="a", name="t", output="x"),))),
)


def _record(index: int, message: Message) -> MessageRecord:
    return MessageRecord(
        id=f"m{index}",
        conversation_id="c",
        seq=index,
        message=message,
        status="complete",
        usage=None,
        token_count=None,
        created_at="t",
        updated_at="t",
        error=None,
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(MESSAGES, max_size=12), st.lists(st.booleans(), max_size=12))
def test_the_sum_of_stored_counts_is_the_count_of_the_repaired_view(
    messages: list[Message], stored_flags: list[bool]
) -> None:
    records = [_record(i, m) for i, m in enumerate(messages)]
    counter = CachedCounter(LengthCounter(), "length")
    # Some messages have a stored count and shape, the others are counted now.
    entries = []
    for i, record in enumerate(records):
        stored = i < len(stored_flags) and stored_flags[i]
        tokens = counter.count_message(view_message(record.message)) if stored else None
        shape = message_shape(record.message) if stored else None
        entries.append(TailEntry(record.id, record.message.role, tokens, shape))
    by_id = {record.id: record for record in records}
    loaded: list[str] = []

    def load(ids):  # type: ignore[no-untyped-def]
        loaded.extend(ids)
        return {i: by_id[i] for i in ids}

    result = tail_counts(entries, counter, load)
    # The view marks each question that got no answer: its note is counted with it.
    view = mark_unanswered(repair_pairs([view_message(m) for m in messages]))
    expected = [counter.count_message(m) for m in view]
    assert result.counts == expected
    # Each message not stored is counted and returned for storing, and loaded once.
    assert sorted(r.id for r, _, _, _ in result.new) == sorted(
        e.id for e in entries if e.tokens is None
    )
    assert len(loaded) == len(set(loaded))


def test_only_the_groups_repair_changes_are_irregular() -> None:
    call_a, call_b = ToolCallPart(id="a", name="t"), ToolCallPart(id="b", name="t")
    rows = [
        user("q"),
        assistant("", call_a, call_b),
        tool_results(_result("b", None)),
        tool_results(_result("a", None)),
        user("q2"),
        assistant("answer", call_a),  # never answered: an [interrupted] result is added
        user("q3"),
        tool_results(_result("a", None)),  # follows no call: dropped
        assistant("plain"),
    ]
    shapes = [(m.role, message_shape(m)) for m in rows]
    assert shapes[1] == ("assistant", "a\x1fb")
    assert message_shape(Message(role="assistant", parts=())) == ALTERED
    assert irregular_spans(shapes) == [(5, 6), (7, 8)]


def _state(start: int) -> CompactionState:
    return CompactionState(
        version=1,
        compacted_at="2025-02-01T00:00:00Z",
        summary_message="Earlier: the person asked about ports.",
        api_start_index=start,
        summarized_range=SummarizedRange(from_index=0, to_index=start, message_count=start),
        strategy="structured",
        trigger="auto",
        tokens_before=1000,
        tokens_after=100,
        model="m",
        degraded=False,
    )


def test_the_meter_count_equals_the_full_count(store: Store, config: AppConfig) -> None:
    loader = ContextLoader(store, lambda: [])
    conversation = store.create_conversation()
    call_a = ToolCallPart(id="a", name="read_file", input={"path": "x"})
    records = store.append_messages(
        conversation.id,
        [
            user("Port 8081, remember."),
            assistant("ok"),
            user("read it"),
            assistant("", call_a),
            tool_results(_result("a", None)),
            user("and again"),
            assistant("", ToolCallPart(id="b", name="read_file")),  # interrupted: no result
            user("thanks"),
            assistant("done"),
        ],
    )
    store.set_pinned(conversation.id, records[0].id, True)
    store.commit_fold(conversation.id, _state(2), expected_version=0)
    store.commit_prune(
        conversation.id,
        {records[4].id: tool_results(_result("a", "2025-02-02T00:00:00Z"))},
    )

    full = loader.load(config, conversation.id, wire="openai")
    meter = loader.load(config, conversation.id, wire="openai", with_messages=False)
    scratch = full.counter.count_request(full.system, full.view, full.tools)
    assert full.estimate == meter.estimate == scratch
    assert meter.records == [] and meter.view == []
    assert meter.stats() == full.stats()
    # The pinned message folded out rides in the summary, which counts as the head.
    assert full.breakdown.summary > 0 and meter.breakdown == full.breakdown


def test_stored_counts_follow_every_change(store: Store, config: AppConfig, monkeypatch) -> None:
    counter = LengthCounter()
    monkeypatch.setattr("foldline.chat.context.counter_for", lambda *_a, **_k: counter)
    loader = ContextLoader(store, lambda: [])
    conversation = store.create_conversation()
    first, second = store.append_messages(conversation.id, [user("one"), assistant("two")])
    before = loader.load(config, conversation.id, wire="openai", with_messages=False)
    assert counter.counted == 2

    # Stored: a second loader (a restart) counts nothing again, with or without messages.
    counter.counted = 0
    restarted = ContextLoader(store, lambda: [])
    assert restarted.load(config, conversation.id, wire="openai").tokens == before.tokens
    assert restarted.load(config, conversation.id, wire="openai", with_messages=False)
    assert counter.counted == 0

    # A changed message loses its stored count (a trigger) and only it is counted again.
    store.update_message(second.id, message=assistant("two, longer now"))
    changed = restarted.load(config, conversation.id, wire="openai", with_messages=False)
    assert counter.counted == 1
    assert changed.tokens == before.tokens + len("two, longer now") - len("two")

    # Deleting the conversation deletes its counts.
    conn = store._pool.get().conn
    assert conn.execute("SELECT count(*) FROM message_counts").fetchone()[0] == 2
    store.delete_conversation(conversation.id)
    assert conn.execute("SELECT count(*) FROM message_counts").fetchone()[0] == 0
    assert first.id


def test_a_count_of_a_message_changed_meanwhile_is_not_saved(store: Store) -> None:
    conversation = store.create_conversation()
    (record,) = store.append_messages(conversation.id, [user("one")])
    store.update_message(record.id, message=user("one, then more"))
    assert store.save_counts("c", [(record, 4, "", 0)])  # nothing held the lock
    conn = store._pool.get().conn
    assert conn.execute("SELECT count(*) FROM message_counts").fetchone()[0] == 0
    current = store.get_message(record.id)
    store.save_counts("c", [(current, 9, "", 4)])
    assert conn.execute("SELECT tokens, media FROM message_counts").fetchone() == (9, 4)
    # Both reads of the view carry the media tokens beside the count.
    _, rows = store.view_count_rows(conversation.id, "c")
    assert rows == [(record.id, "user", 9, "", 4)]
    _, _, stored = store.load_window_counted(conversation.id, "c")
    assert stored == [(9, "", 4)]


def test_counts_are_stored_under_a_fingerprint_of_the_counting_rules() -> None:
    class Longer(LengthCounter):
        def count_message(self, message: Message) -> int:
            return super().count_message(message) + 1

    # The same name with other rules (a new version of the formulas) reads none of the
    # counts the earlier rules stored.
    assert counter_key("m|openai|1|0", LengthCounter()) == counter_key(
        "m|openai|1|0", LengthCounter()
    )
    assert counter_key("m|openai|1|0", LengthCounter()) != counter_key("m|openai|1|0", Longer())
