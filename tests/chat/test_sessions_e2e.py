"""Long sessions through the real `anthropic` and `openai` SDKs against the fake server.

These are the end-to-end proofs of issue 3/6: the fold keeps a conversation going
indefinitely on a small window, tools never leave an orphan, every summarizer failure
that gives no summary at all ends in an emergency fold, an overflow error is folded and
retried, and the estimate calibrates to the provider's own tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import (
    FACT,
    MODEL,
    WIRES,
    chat_requests,
    fact_keeping_summary,
    fake_server,
    filler,
    make_service,
    noting_model,
    run,
)

from foldline.chat.events import ChatEvent
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    Reply,
    ScriptedModel,
    call,
    structured_summary,
)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(ScriptedModel(when_empty="echo", summaries=structured_summary)) as fake:
        yield fake


@pytest.mark.parametrize("wire", WIRES)
async def test_hundred_turns_on_an_8k_window(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = noting_model(fact_keeping_summary)
    all_events: list[ChatEvent] = []
    for turn in range(1, 101):
        text = f"Turn {turn}. " + (FACT if turn == 1 else filler(turn, 80))
        events = await run(service, conversation.id, text)
        assert not [e for e in events if e.name == "error"], events
        all_events += events

    server.assert_no_errors()
    folds = [e for e in all_events if e.name == "compaction.completed"]
    assert len(folds) >= 3
    assert [f.data["version"] for f in folds] == list(range(1, len(folds) + 1))
    assert not any(f.data["degraded"] for f in folds)
    versions = store.list_compactions(conversation.id)
    assert len(versions) == len(folds)

    requests = chat_requests(server)
    assert all(r.status == 200 for r in requests)
    final = requests[-1].model_request
    assert final is not None
    assert "Turn 100." in final.messages[-1].text
    assert "PINEAPPLE-42" in final.messages[0].text, "the turn-1 fact was lost in the folds"

    # Each request right after a fold is smaller than the one right before it.
    sizes = [r.input_tokens for r in requests]
    fold_points = [i for i in range(1, len(requests)) if sizes[i] < sizes[i - 1] - 500]
    assert len(fold_points) >= len(folds) - 1
    for fold in folds:
        assert fold.data["tokensAfter"] < fold.data["tokensBefore"]


@pytest.mark.parametrize("wire", WIRES)
async def test_tool_heavy_session_prunes_and_truncates(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    workspace = tmp_path / "workspace"
    sizes = {"small.log": 5_000, "medium.txt": 10_000, "big.py": 20_000}
    for name, tokens in sizes.items():
        lines = [f"line {i}: " + "data " * 8 for i in range(tokens // 10)]
        (workspace / name).write_text("\n".join(lines))

    script: list[object] = []
    for round_ in range(4):
        for name in sizes:
            script.append(Reply(tool_calls=(call("read_file", {"path": name}),)))
        script.append(Reply(text=f"Read everything, round {round_}."))
    server.responder = ScriptedModel(*script, summaries=structured_summary)
    conversation = store.create_conversation(model=MODEL[wire])
    events: list[ChatEvent] = []
    for round_ in range(4):
        events += await run(service, conversation.id, f"Read the files again ({round_}).")

    server.assert_no_errors()
    assert not [e for e in events if e.name == "error"]
    results = [e for e in events if e.name == "tool.result"]
    assert len(results) == 12
    assert all(r.data["truncated"] for r in results)
    assert all("omitted" in r.data["output"] for r in results)
    assert any(e.name in ("prune.completed", "compaction.completed") for e in events)
    # The full output is kept in storage.
    stored = [
        part
        for record in store.list_messages(conversation.id, limit=1000)
        for part in record.message.tool_results
    ]
    assert all(part.full_output and len(part.full_output) > len(part.output) for part in stored)


@pytest.mark.parametrize("failure", ["empty_summary", "server_error"])
@pytest.mark.parametrize("wire", WIRES)
async def test_summarizer_failures_end_in_an_emergency_fold(
    wire: str, failure: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(
        when_empty=lambda request: Reply(text="Sure. " + filler(0, 100)),
        summaries=structured_summary,
    )
    # Eight turns: the digest must save more than the summary's framing adds.
    for turn in range(8):
        await run(service, conversation.id, f"Turn {turn}: " + filler(turn, 60))
    server.fail_next(failure, times=10, on="summary")  # every retry fails too
    handle = await service.start_compaction(conversation.id, None)
    events = [event async for event in handle.events()]
    completed = [e for e in events if e.name == "compaction.completed"]
    assert completed and completed[0].data["degraded"] is True
    assert store.current_compaction(conversation.id).degraded
    # The conversation goes on.
    after = await run(service, conversation.id, "Still there?")
    assert not [e for e in after if e.name == "error"]
    assert store.list_messages(conversation.id, offset=0, limit=1000)[-1].status == "complete"


@pytest.mark.parametrize("wire", WIRES)
async def test_provider_overflow_is_folded_and_retried(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    # The model is configured with a window far larger than the server's real one, so
    # Foldline does not fold by itself and the provider's overflow error is what triggers it.
    service = make_service(server, store, tmp_path, auto=False)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(
        when_empty=lambda request: Reply(text="Yes. " + filler(0, 150)),
        summaries=structured_summary,
    )
    overflowed = False
    for turn in range(40):
        events = await run(service, conversation.id, f"Turn {turn}: " + filler(turn, 150))
        assert not [e for e in events if e.name == "error"], events
        if any(e.data.get("trigger") == "overflow" for e in events if e.name.startswith("comp")):
            overflowed = True
            break
    assert overflowed, "the session never reached the provider's limit"
    overflow_errors = [r for r in server.requests if r.error and "context" in str(r.error)]
    assert overflow_errors or any(r.status == 400 for r in server.requests)
    assert store.list_messages(conversation.id, limit=1000)[-1].status == "complete"


@pytest.mark.parametrize("wire", WIRES)
async def test_compact_context_tool_folds_after_the_batch(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(
        *[Reply(text=f"Answer {i}. " + filler(i, 60)) for i in range(5)],
        Reply(
            tool_calls=(
                call("getContextStats", {}),
                call("compactContext", {"instructions": "Keep the answers' numbers."}),
            )
        ),
        Reply(text="Folded and continuing."),
        summaries=structured_summary,
    )
    for turn in range(5):
        await run(service, conversation.id, f"Question {turn}: " + filler(turn, 40))
    events = await run(service, conversation.id, "Please compact your context.")
    order = [e.name for e in events]
    assert order.index("tool.result") < order.index("compaction.completed")
    folded = next(e for e in events if e.name == "compaction.completed")
    assert folded.data["trigger"] == "tool"
    summary_requests = [r for r in server.requests if r.is_summary]
    assert "Keep the answers' numbers." in summary_requests[-1].model_request.messages[-1].text
    assert store.list_messages(conversation.id, limit=1000)[-1].message.text == (
        "Folded and continuing."
    )


@pytest.mark.parametrize("wire", WIRES)
async def test_calibration_converges_to_the_providers_tokenizer(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODEL[wire])
    server.responder = ScriptedModel(
        when_empty=lambda request: Reply(text="Fine. " + filler(0, 30)),
        summaries=structured_summary,
    )
    for turn in range(3):
        await run(service, conversation.id, f"Turn {turn}: " + filler(turn, 50))
    # The estimate of the next request, after 3 calibrating calls...
    handle = await service.start_turn(conversation.id, "Turn 3: " + filler(3, 50))
    estimate = None
    async for event in handle.events():
        if event.name == "context.stats" and estimate is None:
            estimate = event.data["tokens"]
    reported = chat_requests(server)[-1].input_tokens
    assert estimate is not None and reported
    assert abs(estimate - reported) / reported <= 0.05, (estimate, reported)
