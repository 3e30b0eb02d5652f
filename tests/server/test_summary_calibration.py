"""A summary call teaches the calibration too: a conversation folded before its first
turn (an import, a fold right after a model switch) is not counted with the unsampled
ratio until a chat turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.core.messages import assistant, user
from foldline.providers.base import ModelRequest, ProviderEvent, Stop, TextDelta, Usage
from foldline.store import Store
from foldline.testing import looks_like_summary_request

from .conftest import SHORT_SUMMARY


@dataclass
class ReportingModel:
    """Answers every summary request and reports an input a fixed amount larger than
    `reported(request)` says (set by the test once it can count)."""

    name: str = "local"
    wire: str = "openai"
    reported: int = 0
    calls: list[ModelRequest] = field(default_factory=list)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.calls.append(request)
        yield Usage(input_tokens=self.reported, output_tokens=20)
        # A summary written from what it was given, so the fold keeps it.
        yield TextDelta(SHORT_SUMMARY(request))
        yield Stop("end_turn")

    def warm_up(self) -> None:
        """Nothing to build ahead: the Provider protocol's warm-up."""

    async def aclose(self) -> None:
        """Nothing to close: the Provider protocol's shutdown."""


@pytest.fixture
def model() -> ReportingModel:  # type: ignore[override]
    return ReportingModel()


def test_a_fold_before_any_turn_calibrates_the_model(
    client: TestClient, store: Store, chat_service: ChatService, model: ReportingModel, parse_sse
) -> None:
    conversation = client.post(
        "/api/conversations", json={"settings": {"compaction": {"keep_recent_tokens": 0}}}
    ).json()["id"]
    messages = []
    for i in range(8):
        messages += [user(f"question {i} about the garden " * 15), assistant(f"answer {i} " * 30)]
    store.append_messages(conversation, messages)
    assert store.get_calibration("local", "fake-model").samples == 0
    model.reported = 4_321

    reply = client.post(f"/api/conversations/{conversation}/compact")
    assert reply.status_code == 200, reply.text
    assert parse_sse(reply.text)[-1].name == "done"

    (request,) = model.calls
    assert looks_like_summary_request(request)  # a summary call, not a turn
    base = chat_service.load_context(conversation).counter.base  # type: ignore[attr-defined]
    # Asked after the conversation's view, the summary request carries the turn's tools.
    estimate = base.count_request(request.system, request.messages, list(request.tools))
    learned = store.get_calibration("local", "fake-model")
    assert learned.samples == 1
    assert learned.ratio == pytest.approx(min(3.0, max(0.5, 4_321 / estimate)))
    # The meter now counts with the learned ratio.
    assert chat_service.load_context(conversation).ratio == pytest.approx(learned.ratio)
