"""A project's instructions and file reach the model in every conversation of the project,
through folds, on both wires: the real `anthropic` and `openai` SDKs against the fake
server, whose strict parsing sees exactly what was sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import (
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

from foldline.store import Store
from foldline.testing import FakeProviderServer, ScriptedModel, structured_summary
from foldline.testing.sample_files import pdf, project_file

INSTRUCTIONS = "Project rule: every answer names the codename HERON."
SPEC = "Reference sheet.\nThe bridge span is 417 metres; the deck is painted ochre.\n"
LOADS_PDF = pdf(["Load table", "Design load: 9.6 kN per square metre"])
"""A two-page PDF: the model reads its text, each page headed, in the project block."""
LOADS_TEXT = "[page 1]\nLoad table\n\n[page 2]\nDesign load: 9.6 kN per square metre"


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with fake_server(ScriptedModel(when_empty="echo", summaries=structured_summary)) as fake:
        yield fake


def system_text(wire: str, body: dict) -> str:  # type: ignore[type-arg]
    if wire == "anthropic":
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    first = body["messages"][0]
    assert first["role"] == "system"
    return first["content"]


@pytest.mark.parametrize("wire", WIRES)
async def test_instructions_and_file_reach_every_conversation_through_folds(
    wire: str, server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    service = make_service(server, store, tmp_path)
    server.responder = noting_model(fact_keeping_summary)
    project = store.create_project(name="Bridge", instructions=INSTRUCTIONS)
    store.add_project_file(project.id, project_file("bridge.md", "text/markdown", SPEC.encode()))
    store.add_project_file(project.id, project_file("loads.pdf", "application/pdf", LOADS_PDF))
    store.add_project_note(project.id, "Deadline", "Drawings are due in March.")
    members = [
        store.create_conversation(model=MODEL[wire], project_id=project.id, system_prompt=p)
        for p in ("", "You are a structural engineer.", "")
    ]
    outsider = store.create_conversation(model=MODEL[wire])

    for conversation in members:
        server.reset()
        folds = 0
        for turn in range(14):
            events = await run(service, conversation.id, f"Turn {turn}. " + filler(turn, 120))
            assert not [e for e in events if e.name == "error"], events
            folds += sum(e.name == "compaction.completed" for e in events)
        server.assert_no_errors()
        # The 8k window folds the conversation at least once; what the project sends is
        # never folded away: every request, before and after each fold, carries it.
        assert folds >= 1 and store.current_compaction(conversation.id) is not None
        requests = chat_requests(server)
        assert len(requests) >= 14
        for request in requests:
            system = system_text(wire, request.body)
            assert system.startswith(INSTRUCTIONS)
            assert "417 metres" in system and 'name="bridge.md"' in system
            assert "Drawings are due in March." in system
            # The PDF is quoted as its extracted text, pages headed, never as a file part.
            assert (
                '<file name="loads.pdf" media-type="application/pdf" pages="2">\n'
                f"{LOADS_TEXT}\n</file>"
            ) in system
            # It rides in the stable prefix, never among the messages the fold replaces.
            messages = str(request.body["messages"][1:])
            assert "417 metres" not in messages and "9.6 kN" not in messages
            assert "application/pdf" not in messages
        if wire == "anthropic":
            assert all(r.body["system"][0]["cache_control"] for r in requests)
        # The meter counts it, and Model view names it as the project's.
        context = service.context(conversation.id, include_messages=False)
        assert context.project is not None
        assert context.project.files == ["bridge.md", "loads.pdf"]
        assert context.breakdown.project == context.project.tokens > 0
        own = conversation.system_prompt
        if own:
            assert system.index(INSTRUCTIONS) < system.index(own) < system.index("417 metres")

    server.reset()
    await run(service, outsider.id, "Hello, outside any project.")
    (request,) = chat_requests(server)
    assert "417 metres" not in system_text(wire, request.body)
    assert "9.6 kN" not in system_text(wire, request.body)
    assert INSTRUCTIONS not in system_text(wire, request.body)
