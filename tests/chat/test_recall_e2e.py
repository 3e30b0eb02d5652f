"""The recall tools through the real SDKs against the fake provider server.

A conversation is folded by a summarizer that keeps nothing; the model then calls
`searchHistory` in plain words and `readHistory` around the hit, and receives the
folded message word for word. The tools are offered only from the first fold on, and
every bad input comes back as a tool error in the same turn (never a failed turn).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import MODEL, WIRES, chat_requests, fake_server, filler, make_service, run

from foldline.core.messages import ToolResultPart, user
from foldline.core.recall import RECALL_TOOL_NAMES
from foldline.store import Store
from foldline.testing import FakeProviderServer, Reply, ScriptedModel, call

NOTHING = "## Session Narrative\nThe two talked."
SECRET = "Ana has been reading up on community gardens for the allotment."


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(ScriptedModel(when_empty="echo", summaries=NOTHING)) as fake:
        yield fake


def offered(server: FakeProviderServer) -> list[set[str]]:
    """The tool names of every chat request, in order."""
    return [
        {tool.name for tool in r.model_request.tools}
        for r in chat_requests(server)
        if r.model_request is not None
    ]


def results(store: Store, conversation_id: str) -> list[ToolResultPart]:
    return [
        part
        for record in store.list_messages(conversation_id, limit=1000)
        for part in record.message.parts
        if isinstance(part, ToolResultPart)
    ]


async def folded_conversation(
    server: FakeProviderServer, store: Store, tmp_path: Path, wire: str, **settings: object
) -> tuple[object, str]:
    service = make_service(server, store, tmp_path, **settings)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(0, 250)), summaries=NOTHING
    )
    await run(service, conversation.id, SECRET)
    # Enough history that the fold saves more than the recall tools it brings cost.
    for turn in range(1, 6):
        await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 60))
    assert not RECALL_TOOL_NAMES & set().union(*offered(server))
    events = [e async for e in (await service.start_compaction(conversation.id, None)).events()]
    assert any(e.name == "compaction.completed" for e in events), [(e.name, e.data) for e in events]
    view = store.current_compaction(conversation.id)
    assert view is not None and view.api_start_index > 0
    return service, conversation.id


@pytest.mark.parametrize("wire", WIRES)
async def test_search_after_folds_returns_the_folded_words(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id = await folded_conversation(server, store, tmp_path, wire)
    server.responder = ScriptedModel(
        Reply(tool_calls=(call("searchHistory", {"query": "What did Ana look into?"}),)),
        Reply(tool_calls=(call("readHistory", {"fromIndex": 0, "toIndex": 1}),)),
        Reply(text="She was reading about gardens."),
        summaries=NOTHING,
    )
    events = await run(service, conversation_id, "Remind me: what was Ana up to?")
    assert not [e for e in events if e.name == "error"], events
    server.assert_no_errors()

    search, read = results(store, conversation_id)[-2:]
    assert not search.is_error and not read.is_error
    hits = search.output.splitlines()[1:]
    assert all(line.startswith("#") for line in hits)
    first = next(line for line in hits if line.startswith("#0 "))
    assert first.startswith("#0 person, ")
    assert SECRET in first  # the sentence whole
    assert "in your view" not in first
    # Its own call is not a hit: the recall tools' traffic is not indexed.
    assert "searchHistory" not in search.output
    assert read.output.startswith("#0 person, ")
    assert SECRET in read.output
    # The recall tools were offered from the fold on, and the model read the results.
    names = offered(server)
    assert names[-1] >= RECALL_TOOL_NAMES
    last = chat_requests(server)[-1].model_request
    assert SECRET in "\n".join(p.output for m in last.messages for p in m.tool_results)
    # The summary says what was folded and which tools return it.
    assert "are folded: searchHistory and readHistory" in last.messages[0].text


@pytest.mark.parametrize("wire", WIRES)
async def test_bad_recall_input_is_a_tool_error_the_model_reads(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service, conversation_id = await folded_conversation(server, store, tmp_path, wire)
    elsewhere = store.create_project(name="Elsewhere")
    other = store.create_conversation(title="Private", project_id=elsewhere.id)
    store.append_message(other.id, user("the vault code is 1234"))
    deleted = store.create_conversation(title="Gone")
    store.delete_conversation(deleted.id)
    server.responder = ScriptedModel(
        Reply(
            tool_calls=(
                # (A 10,000-character query would not fit the fake model's answer; the
                # handler's own test sends one.)
                call("searchHistory", {"query": "garden " * 300}),
                call("searchHistory", {"query": 'NEAR(a b) AND "unclosed OR -x:y *'}),
                call("readHistory", {"fromIndex": 999, "toIndex": 1000}),
                call("readHistory", {"fromIndex": 0, "toIndex": 1, "conversationId": other.id}),
                call("readHistory", {"fromIndex": 0, "toIndex": 1, "conversationId": deleted.id}),
                call("searchConversations", {"query": "vault code"}),
            )
        ),
        Reply(text="Understood."),
        summaries=NOTHING,
    )
    events = await run(service, conversation_id, "Look things up.")
    assert not [e for e in events if e.name == "error"], events
    server.assert_no_errors()
    too_long, operators, out_of_range, other_project, gone, across = results(
        store, conversation_id
    )[-6:]
    assert too_long.is_error and "2,100 characters" in too_long.output
    assert not operators.is_error  # the operators are plain words, never a syntax error
    assert out_of_range.is_error and "out of range" in out_of_range.output
    assert other_project.is_error and gone.is_error
    # Out of reach and deleted read the same: nothing tells the model which exists.
    assert other_project.output.replace(other.id, "ID") == gone.output.replace(deleted.id, "ID")
    assert across.is_error and "no project" in across.output
    everything = "\n".join(p.output for p in results(store, conversation_id))
    assert "1234" not in everything
