"""Edit, regenerate and switch branches through the real SDKs against the fake server.

Each branch's request to the model is read back from what the fake server received:
the branch's applicable summary (or none), then its own path from that fold's
`apiStartIndex`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import MODEL, WIRES, chat_requests, fake_server, filler, make_service, run

from foldline.api.schemas_context import BackgroundFoldOut
from foldline.chat.events import ChatEvent
from foldline.chat.service import ChatService, TurnHandle, TurnInProgress, WrongMessage
from foldline.store import NotOnPath, Store
from foldline.testing import FakeProviderServer, Reply, ScriptedModel, structured_summary


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(ScriptedModel(when_empty="echo", summaries=structured_summary)) as fake:
        yield fake


async def drain(handle: TurnHandle) -> list[ChatEvent]:
    events = [event async for event in handle.events()]
    assert not [e for e in events if e.name == "error"], events
    return events


def last_request(server: FakeProviderServer, summary: str = "") -> list[str]:
    """The texts of the last chat request's messages, the summary's first (as "" when
    the request had none); the Anthropic wire merges the summary into the next user
    message, so it is split off there."""
    request = chat_requests(server)[-1].model_request
    assert request is not None
    texts = [message.text for message in request.messages]
    if not texts[0].startswith("[Conversation summary"):
        return ["", *texts]
    assert summary and summary in texts[0]
    # The summary ends with the person's words of the folded part, when it has any.
    close = "</person-words>" if "</person-words>" in texts[0] else "</summary>"
    end = texts[0].index(close) + len(close)
    rest = texts[0][end:].strip()
    return [texts[0][:end], *([rest] if rest else []), *texts[1:]]


def path_texts(store: Store, conversation_id: str) -> list[str]:
    return [r.message.text for r in store.list_messages(conversation_id, limit=1000)]


TURN = [f"Turn {turn}. " + filler(turn, 200) for turn in range(4)]


async def folded_conversation(service: ChatService, store: Store, wire: str) -> str:
    """Four exchanges, then a manual fold of everything before the last one."""
    conversation = store.create_conversation(model=MODEL[wire])
    for turn in range(4):
        await run(service, conversation.id, TURN[turn])
    await drain(await service.start_compaction(conversation.id, None))
    state = store.current_compaction(conversation.id)
    assert state is not None and state.api_start_index == 6
    return conversation.id


@pytest.mark.parametrize("wire", WIRES)
async def test_each_branch_sends_its_own_view(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    cid = await folded_conversation(service, store, wire)
    original = store.list_messages(cid)
    summary = store.current_compaction(cid).summary_message

    # Editing the first (folded) message: a branch that sees no fold at all.
    preview = service.edit_preview(cid, original[0].id)
    assert (preview.folded, preview.folds_kept, preview.folds_dropped) == (True, 0, 1)
    events = await drain(await service.start_edit(cid, original[0].id, "Turn zero, edited."))
    created = [e.data["message"] for e in events if e.name == "message.created"]
    assert created[0]["siblingIds"] == [original[0].id, created[0]["id"]]
    assert created[0]["parentId"] is None
    assert last_request(server) == ["", "Turn zero, edited."]
    assert store.current_compaction(cid) is None
    assert path_texts(store, cid) == ["Turn zero, edited.", "echo: Turn zero, edited."]

    # Back to the first version: its fold again, and its own path after the boundary.
    await service.switch_branch(cid, original[0].id)
    assert store.current_compaction(cid).version == 1
    await run(service, cid, "Turn 4.")
    sent = last_request(server, summary)
    assert sent[1:] == [TURN[3], f"echo: {TURN[3]}", "Turn 4."]

    # Regenerating the last answer: the same view up to the question, a sibling answer.
    answer = store.list_messages(cid, offset=9, limit=1)[0]
    events = await drain(await service.start_regenerate(cid, answer.id))
    sent = last_request(server, summary)
    assert sent[1:] == [TURN[3], f"echo: {TURN[3]}", "Turn 4."]
    new_answer = next(e.data["message"] for e in events if e.name == "message.created")
    assert new_answer["siblingIds"] == [answer.id, new_answer["id"]]
    assert store.current_compaction(cid).version == 1

    # An edit after the boundary keeps the fold.
    preview = service.edit_preview(cid, original[6].id)
    assert (preview.folded, preview.folds_kept, preview.folds_dropped) == (False, 1, 0)
    await drain(await service.start_edit(cid, original[6].id, "Turn 3, edited."))
    sent = last_request(server, summary)
    assert sent[1:] == ["Turn 3, edited."]

    # And the edited first branch is still there, with its view, after all this.
    await service.switch_branch(cid, created[0]["id"])
    assert store.current_compaction(cid) is None
    await run(service, cid, "Back on the edit.")
    assert last_request(server) == [
        "",
        "Turn zero, edited.",
        "echo: Turn zero, edited.",
        "Back on the edit.",
    ]
    server.assert_no_errors()


async def test_edit_preview_counts_the_view_the_branch_would_send(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    cid = await folded_conversation(service, store, "openai")
    records = store.list_messages(cid)
    ctx = service.load_context(cid)
    # After the boundary: today's view without the edited exchange.
    kept = service.edit_preview(cid, records[6].id)
    tail = sum(ctx.counter.count_message(r.message) for r in records[6:])
    assert kept.view_tokens == ctx.estimate - tail
    assert (kept.folded, kept.context_window) == (False, 8192)
    # Behind it: no summary, and the four messages before the edited one verbatim.
    folded = service.edit_preview(cid, records[4].id)
    unfolded = [r.message for r in records[:4]]
    assert folded.view_tokens == ctx.counter.count_request(ctx.system, unfolded, ctx.tools)
    assert folded.folded is True


async def test_edits_and_regenerates_are_refused_on_the_wrong_message(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL["openai"])
    await run(service, conversation.id, "Hello.")
    question, answer = store.list_messages(conversation.id)
    with pytest.raises(WrongMessage):
        await service.start_edit(conversation.id, answer.id, "no")
    with pytest.raises(WrongMessage):
        await service.start_regenerate(conversation.id, question.id)
    await drain(await service.start_edit(conversation.id, question.id, "Hello again."))
    with pytest.raises(NotOnPath):  # the first version is on the other branch now
        await service.start_edit(conversation.id, question.id, "no")


async def test_a_fold_prepared_on_one_branch_is_dropped_on_another(
    store: Store, tmp_path: Path
) -> None:
    model = ScriptedModel(
        when_empty=lambda request: Reply(text="Noted. " + filler(0, 120)),
        summaries=structured_summary,
    )
    with fake_server(model) as server:
        service = make_service(server, store, tmp_path)
        cid = store.create_conversation(model=MODEL["openai"]).id
        for turn in range(40):
            events = await run(service, cid, f"Turn {turn}. " + filler(turn, 80))
            if events[-2].data["backgroundFold"] is not None:
                break
        await service.background.wait(cid)
        assert service.background.status(cid) == BackgroundFoldOut(status="ready", kind="fold")
        assert not [c for c in store.list_calls(cid) if c.purpose == "summary"]
        # A new branch from the second question, inside what the summary folded: the
        # first gate on it drops the summary (its cost stays on the bill).
        second = store.list_messages(cid)[2]
        events = await drain(await service.start_edit(cid, second.id, "Turn 1, edited."))
        assert not [e for e in events if e.name == "compaction.completed"]
        summaries = [c for c in store.list_calls(cid) if c.purpose == "summary"]
        assert summaries and {c.fold_version for c in summaries} == {None}
        # The branch's own fold comes later, and folds only messages of the branch.
        for turn in range(40):
            events = await run(service, cid, f"Branch {turn}. " + filler(turn, 80))
            if [e for e in events if e.name == "compaction.completed"]:
                break
        fold = store.list_compactions(cid)[-1]
        path = [r.id for r in store.list_messages(cid, limit=1000)]
        assert fold.last_message_id in path and path.index(fold.last_message_id) > 2
        await service.background.wait(cid)
        server.assert_no_errors()


async def test_branches_do_not_move_while_a_turn_runs(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    cid = store.create_conversation(model=MODEL["openai"]).id
    await run(service, cid, "Hello.")
    question, answer = store.list_messages(cid)
    handle = await service.start_turn(cid, "Another.")
    with pytest.raises(TurnInProgress):
        await service.switch_branch(cid, question.id)
    with pytest.raises(TurnInProgress):
        await service.start_edit(cid, question.id, "edited")
    with pytest.raises(TurnInProgress):
        await service.start_regenerate(cid, answer.id)
    await drain(handle)
    assert len(store.list_messages(cid)) == 4
