"""The meter's breakdown when the provider counts fewer tokens than Foldline's estimate
of the fixed parts: the messages in view are never shown as 0 tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_sessions import MODEL, WIRES, fake_server, make_service, run

from foldline.providers.base import Usage
from foldline.store import Store
from foldline.testing import Reply, ScriptedModel


@pytest.mark.parametrize("wire", WIRES)
async def test_messages_in_view_keep_their_share_when_the_provider_counts_less(
    wire: str, store: Store, tmp_path: Path
) -> None:
    # The provider reports far fewer input tokens than the system prompt and tools alone
    # are estimated at (a server that does not render the tools, say).
    model = ScriptedModel(
        when_empty=lambda _request: Reply(
            text="Noted.", usage=Usage(input_tokens=150, output_tokens=2)
        )
    )
    with fake_server(model) as server:
        service = make_service(server, store, tmp_path)
        conversation = store.create_conversation(model=MODEL[wire])
        events = await run(service, conversation.id, "A first question about the meter.")
        assert not [e for e in events if e.name == "error"]
        context = service.context(conversation.id, include_messages=False)
    assert context.messages_in_view == 2
    parts = context.breakdown
    # The messages' own estimate, not the 0 left after the fixed parts.
    assert parts.messages > 0
