from __future__ import annotations

import copy
import json

import pytest
from store_helpers import exchange, fold_state, rich_history

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.store.export import export_json, export_markdown
from foldline.store.import_reader import import_json
from foldline.store.usage import ModelCall


@pytest.fixture
def folded(store: Store) -> str:
    """A conversation with every part kind, statuses, usage, and folds: stacked, undone."""
    conversation = store.create_conversation(
        title="Everything", model="gpt-4.1", system_prompt="Be exact.", settings={"x": [1, 2]}
    )
    store.append_messages(conversation.id, rich_history())
    for n in range(4):
        store.append_messages(conversation.id, exchange(n), usage={"input_tokens": n})
    store.commit_fold(conversation.id, fold_state(1, 5), expected_version=0)
    store.commit_fold(conversation.id, fold_state(2, 9, previous_start=5), expected_version=1)
    store.undo_fold(conversation.id, 2)
    store.commit_fold(
        conversation.id, fold_state(3, 13, previous_start=5, degraded=True), expected_version=1
    )
    broken = store.append_message(conversation.id, assistant("half"), status="streaming")
    store.update_message(broken.id, status="error", error="overloaded", token_count=7)
    return conversation.id


def without_ids(document: dict) -> dict:
    """The document with every id (new on import) replaced by the message's position."""
    stripped = copy.deepcopy(document)
    del stripped["conversation"]["id"]
    position = {m["id"]: n for n, m in enumerate(stripped["messages"])}
    position[None] = None
    conversation = stripped["conversation"]
    conversation["activeLeafId"] = position[conversation["activeLeafId"]]
    for message in stripped["messages"]:
        del message["id"]
        message["parentId"] = position[message["parentId"]]
    for fold in stripped["compactions"]:
        fold["lastMessageId"] = position[fold["lastMessageId"]]
    return stripped


def test_export_is_lossless_json(store: Store, folded: str) -> None:
    document = export_json(store, folded)
    assert json.loads(json.dumps(document)) == document
    assert (document["format"], document["formatVersion"]) == ("foldline.conversation", 2)
    conversation = store.get_conversation(folded)
    assert document["conversation"] == {
        "id": folded,
        "title": "Everything",
        "model": "gpt-4.1",
        "systemPrompt": "Be exact.",
        "settings": {"x": [1, 2]},
        "createdAt": conversation.created_at,
        "updatedAt": conversation.updated_at,
        "activeLeafId": conversation.active_leaf_id,
        "provider": None,
    }
    records = store.list_messages(folded, limit=1000)
    assert [m["index"] for m in document["messages"]] == list(range(len(records)))
    assert [m["parentId"] for m in document["messages"]] == [None, *[r.id for r in records[:-1]]]
    last = document["messages"][-1]
    assert (last["status"], last["error"], last["tokenCount"]) == ("error", "overloaded", 7)
    assert document["messages"][5]["usage"] == {"input_tokens": 0}
    assert document["messages"][2]["parts"][0]["full_output"].startswith("print")
    folds = document["compactions"]
    assert [(f["version"], f["parentVersion"], f["current"]) for f in folds] == [
        (1, 0, False),
        (2, 1, False),
        (3, 1, True),
    ]
    assert folds[2]["summarizedRange"] == {"fromIndex": 5, "toIndex": 13, "messageCount": 8}
    assert folds[2]["degraded"] is True
    assert [f["lastMessageId"] for f in folds] == [records[i].id for i in (4, 8, 12)]


def test_import_then_export_reproduces_the_export(store: Store, folded: str) -> None:
    original = export_json(store, folded)
    imported = import_json(store, json.loads(json.dumps(original)))
    assert imported.id != folded
    again = export_json(store, imported.id)
    assert without_ids(again) == without_ids(original)
    assert {m["id"] for m in again["messages"]}.isdisjoint({m["id"] for m in original["messages"]})
    # The imported conversation behaves like the original: same view, search finds it.
    state, window = store.load_window(imported.id)
    original_state, original_window = store.load_window(folded)
    assert state == original_state
    assert [r.message for r in window] == [r.message for r in original_window]
    assert {r.conversation_id for r in store.search_messages("question")} == {
        folded,
        imported.id,
    }


def test_a_streaming_message_is_imported_as_interrupted(store: Store) -> None:
    conversation = store.create_conversation()
    store.append_message(conversation.id, assistant("par"), status="streaming")
    imported = import_json(store, export_json(store, conversation.id))
    [message] = store.list_messages(imported.id)
    assert (message.status, message.message.text) == ("interrupted", "par")


def _bad(document: dict, change) -> dict:
    broken = copy.deepcopy(document)
    change(broken)
    return broken


def _set(path: list, value):
    def change(document: dict) -> None:
        target = document
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


def _range(start: int, end: int, count: int) -> dict:
    return {"fromIndex": start, "toIndex": end, "messageCount": count}


def _fold_before_parent(document: dict) -> None:
    # Version 3 stacks on version 1 (which ends at 5) but claims to end at 3.
    child = document["compactions"][2]
    child["summarizedRange"] = _range(0, 3, 3)
    child["apiStartIndex"] = 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set(["format"], "something.else"), "not a Foldline"),
        (_set(["formatVersion"], 3), "formatVersion"),
        (_set(["messages", 0, "status"], "done"), "messages.0.status"),
        (_set(["messages", 1, "index"], 7), "has index 7; after its parent it must be 1"),
        (_set(["messages", 3, "parentId"], "unknown"), "must be listed before it"),
        (_set(["conversation", "activeLeafId"], "unknown"), "active leaf"),
        (_set(["compactions", 0, "lastMessageId"], "unknown"), "last message"),
        (_set(["messages", 0, "parts", 0, "kind"], "video"), "messages.0.parts.0"),
        (_set(["messages", 0, "role"], "system"), "messages.0.role"),
        (_set(["messages", 0, "createdAt"], "yesterday"), "ISO-8601"),
        (_set(["messages", 0, "surprise"], 1), "surprise"),
        (_set(["conversation", "title"], 5), "conversation.title"),
        (_set(["compactions", 0, "apiStartIndex"], 999), "apiStartIndex"),
        (_set(["compactions", 1, "parentVersion"], 9), "parentVersion"),
        (_set(["compactions", 1, "version"], 1), "twice"),
        (_set(["compactions", 0, "current"], True), "current"),
        (_set(["compactions", 0, "degraded"], "no"), "compactions.0.degraded"),
        # Numbers SQLite cannot hold, or that leave no room for the next fold's number.
        (_set(["compactions", 2, "version"], 2**63 - 1), "compactions.2.version"),
        (_set(["compactions", 0, "tokensBefore"], 2**64), "compactions.0.tokensBefore"),
        (_set(["compactions", 0, "tokensAfter"], -1), "compactions.0.tokensAfter"),
        (_set(["messages", 0, "tokenCount"], 2**64), "messages.0.tokenCount"),
        (_set(["messages", 0, "index"], 2**64), "messages.0.index"),
        (_set(["messages", 5, "usage"], {"input_tokens": 2**64}), "input_tokens"),
        (_set(["compactions", 0, "summarizedRange", "toIndex"], 2**70), "toIndex"),
        # Folds that contradict the history they describe.
        (_set(["compactions", 0, "summarizedRange"], _range(4, 2, 0)), "in order"),
        (_set(["compactions", 0, "summarizedRange"], _range(0, 99, 99)), "within the"),
        (_set(["compactions", 0, "summarizedRange", "messageCount"], 4), "messageCount"),
        (_set(["compactions", 0, "apiStartIndex"], 4), "must equal summarizedRange.toIndex"),
        (_fold_before_parent, "must come after its parent"),
        # Settings checked like config.toml's [compaction].
        (_set(["conversation", "settings"], {"compaction": {"treshold": 0.5}}), "treshold"),
        (_set(["conversation", "settings"], {"compaction": {"threshold": 7}}), "threshold"),
        (_set(["conversation", "settings"], {"compaction": "x"}), "settings.compaction"),
    ],
)
def test_bad_imports_are_refused_with_a_clear_message_and_write_nothing(
    store: Store, folded: str, change, message: str
) -> None:
    before = [c.id for c in store.list_conversations()]
    with pytest.raises(ValueError, match=message):
        import_json(store, _bad(export_json(store, folded), change))
    assert [c.id for c in store.list_conversations()] == before


@pytest.mark.parametrize("data", [[], "x", None, {"format": "foldline.conversation"}])
def test_non_documents_are_refused(store: Store, data) -> None:
    with pytest.raises(ValueError):
        import_json(store, data)  # type: ignore[arg-type]
    assert store.list_conversations() == []


def test_markdown_shows_roles_tool_calls_and_each_fold(store: Store, folded: str) -> None:
    text = export_markdown(store, folded)
    assert text.startswith("# Everything\n")
    assert "Be exact." in text
    assert "### #0 · User ·" in text
    assert "### #1 · Assistant ·" in text
    assert "**Tool call** `read_file`" in text
    assert '"path": "a.py"' in text
    assert "**Tool result** `read_file`" in text and "pruned from the model's view" in text
    assert "**Attachment** `notes.md`" in text
    assert "*error*" in text and "overloaded" in text
    # Three fold lines, each before the message at its apiStartIndex, with its summary.
    for version, start, status in ((1, 5, "superseded"), (2, 9, "undone"), (3, 13, "current")):
        line = f"✂ **Fold v{version}**"
        assert text.count(line) == 1
        assert text.index(line) < text.index(f"### #{start} ·")
        assert text.index(f"### #{start - 1} ·") < text.index(line)
        assert f"summary of everything before {start}" in text
        assert status in text[text.index(line) :].split("\n")[0]
    assert "degraded" in text


def test_markdown_code_fences_survive_backticks_in_content(store: Store) -> None:
    conversation = store.create_conversation(system_prompt="use ``` fences ````")
    text = export_markdown(store, conversation.id)
    assert "`````\nuse ``` fences ````\n`````" in text


def test_a_tree_round_trips_with_its_branches_and_each_path_s_folds(store: Store) -> None:
    cid = store.create_conversation().id
    store.append_messages(cid, [m for n in range(3) for m in exchange(n)])  # 12 messages
    store.commit_fold(cid, fold_state(1, 4), expected_version=0)
    first_path = store.list_messages(cid)
    store.set_pinned(cid, first_path[1].id, True)
    edited = store.branch(cid, first_path[7].id, user("an edited question"))
    assert edited is not None
    store.append_message(cid, assistant("its answer"))
    store.commit_fold(cid, fold_state(2, 9, previous_start=4), expected_version=1)
    store.switch_branch(cid, first_path[-1].id)  # back on the first path: fold 1

    original = export_json(store, cid)
    assert len(original["messages"]) == 14
    imported = import_json(store, json.loads(json.dumps(original)))
    assert without_ids(export_json(store, imported.id)) == without_ids(original)
    assert [r.message for r in store.list_messages(imported.id)] == [r.message for r in first_path]
    assert store.current_compaction(imported.id).version == 1
    assert [p.seq for p in store.list_pins(imported.id)] == [1]
    # The branch comes with its own fold, remembered on its leaf.
    other = store.list_messages(imported.id, offset=8, limit=1)[0]
    sibling = store.sibling_ids(imported.id, [other.id])[other.id][1]
    store.switch_branch(imported.id, sibling)
    assert store.list_messages(imported.id)[-1].message.text == "its answer"
    assert store.current_compaction(imported.id).version == 2


def test_a_version_1_file_imports_as_one_path(store: Store, folded: str) -> None:
    document = export_json(store, folded)
    document["formatVersion"] = 1
    del document["conversation"]["activeLeafId"]
    for message in document["messages"]:
        del message["parentId"], message["leafFoldVersion"], message["continued"]
    for fold in document["compactions"]:
        del fold["lastMessageId"]
    imported = import_json(store, document)
    records = store.list_messages(imported.id, limit=1000)
    assert [r.parent_id for r in records] == [None, *[r.id for r in records[:-1]]]
    assert store.get_conversation(imported.id).active_leaf_id == records[-1].id
    assert [c.last_message_id for c in store.list_compactions(imported.id)] == [
        records[i].id for i in (4, 8, 12)
    ]
    assert store.current_compaction(imported.id) == store.current_compaction(folded)


def test_markdown_shows_the_active_path_and_lists_the_other_branches(store: Store) -> None:
    cid = store.create_conversation(title="Forked").id
    store.append_messages(cid, [m for n in range(2) for m in exchange(n)])
    path = store.list_messages(cid)
    store.branch(cid, path[3].id, user("Another take on question 1\nsecond line"))
    store.append_message(cid, assistant("the edit's answer"))
    store.commit_fold(cid, fold_state(1, 5, summary="the fold of the edit"), expected_version=0)
    store.branch(cid, path[0].id, assistant("a regenerated first answer"))
    store.switch_branch(cid, path[-1].id)

    text = export_markdown(store, cid)
    assert "question 1" in text and "the edit's answer" not in text
    assert "the fold of the edit" not in text  # that fold belongs to the other branch
    other = text[text.index("## Other branches") :]
    assert "- at #1 (Assistant, " in other and "a regenerated first answer" in other
    assert "- at #4 (User, " in other and "Another take on question 1" in other
    assert "second line" not in other
    assert other.index("#1 (") < other.index("#4 (")


def test_an_answer_continued_in_place_stays_marked_through_export_and_import(
    store: Store,
) -> None:
    conversation = store.create_conversation()
    store.append_message(conversation.id, user("Tell me about folds"))
    cut = store.append_message(conversation.id, assistant("Folds are"), status="interrupted")
    store.begin_continuation(cut.id)
    store.update_message(cut.id, message=assistant("Folds are summaries."), status="complete")
    document = export_json(store, conversation.id)
    assert [m["continued"] for m in document["messages"]] == [False, True]
    imported = import_json(store, json.loads(json.dumps(document)))
    assert [r.continued for r in store.list_messages(imported.id)] == [False, True]


def test_reasoning_travels_with_its_proofs_through_export_and_import(store: Store) -> None:
    from foldline.core.messages import Message, ReasoningPart, TextPart

    thoughts = (
        ReasoningPart(text="Weigh both.", signature="EqQBsig"),
        ReasoningPart(text="", redacted="opaque-data"),
        ReasoningPart(text="A summary.", item_id="rs_1", encrypted_content="gAAAAAenc"),
    )
    conversation = store.create_conversation(title="Thinking")
    store.append_messages(
        conversation.id,
        [user("Which?"), Message(role="assistant", parts=(*thoughts, TextPart(text="B.")))],
        usage={"outputTokens": 40, "reasoningSeconds": 12.5},
    )
    exported = export_json(store, conversation.id)
    parts = exported["messages"][1]["parts"]
    assert parts[:3] == [t.model_dump(exclude_none=True) for t in thoughts]
    imported = import_json(store, json.loads(json.dumps(exported)))
    _, window = store.load_window(imported.id)
    assert window[1].message.parts[:3] == thoughts
    markdown = export_markdown(store, conversation.id)
    assert "**Reasoning**" in markdown and "Weigh both." in markdown
    assert "**Reasoning** (encrypted by the provider)" in markdown


def test_a_counted_call_stays_counted_through_export_and_import(store: Store) -> None:
    conversation = store.create_conversation(title="Stopped once")
    store.append_messages(conversation.id, exchange(0))
    reported = ModelCall(
        turn=0, purpose="chat", provider="p", model="m", input_tokens=10, output_tokens=5
    )
    counted = ModelCall(
        turn=2,
        purpose="chat",
        provider="p",
        model="m",
        input_tokens=12,
        output_tokens=3,
        estimated=True,
    )
    store.record_calls(conversation.id, [reported, counted])
    document = export_json(store, conversation.id)
    assert [call["estimated"] for call in document["modelCalls"]] == [False, True]
    imported = import_json(store, json.loads(json.dumps(document)))
    assert [call.estimated for call in store.list_calls(imported.id)] == [False, True]
    total, _last = store.usage_totals(imported.id)
    assert (total.calls, total.estimated_calls) == (2, 1)


def test_the_provider_chosen_for_the_model_travels_through_export_and_import(
    store: Store,
) -> None:
    """Two providers may offer one model id; the conversation's choice is part of it.
    A file from before the choice was exported still imports, with no choice."""
    conversation = store.create_conversation(model="shared-id", provider="lab")
    store.append_messages(conversation.id, exchange(0))
    document = json.loads(json.dumps(export_json(store, conversation.id)))
    assert document["conversation"]["provider"] == "lab"
    assert store.get_conversation(import_json(store, document).id).provider == "lab"

    del document["conversation"]["provider"]
    assert store.get_conversation(import_json(store, document).id).provider is None
