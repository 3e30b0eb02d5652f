"""A person's files on the OpenAI Responses wire, end to end: sent through the HTTP API,
carried by the real `openai` SDK to the strict fake server as `input_image` and
`input_file` items, billed there by OpenAI's formulas, byte-identical turn after turn,
and folded away."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.core.tokens import ScaledCounter
from foldline.core.tokens.attachments import OPENAI_PDF_PAGE_IMAGE_TOKENS, openai_image_tokens
from foldline.server.config_source import ConfigSource
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel, sample_files
from foldline.testing.failures import RecordedRequest
from foldline.tokenizers import counter_for

MODEL = "gpt-fake-responses"
PNG = sample_files.png(1200, 800)
PDF = sample_files.pdf(["Quarterly report: revenue rose 12%.", "Costs fell.", "Outlook: calm."])


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(when_empty=lambda request: Reply(text="A chart and a report."))
    limits = ModelLimits(context_window=200_000, max_output_tokens=4096)
    with FakeProviderServer(model, models={MODEL: limits}, api_key="k") as fake:
        yield fake


@pytest.fixture
def data_dir(tmp_path: Path, server: FakeProviderServer) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "config.toml").write_text(
        f"""\
[defaults]
model = "{MODEL}"

[providers.fake-openai]
kind = "openai"
base_url = "{server.openai_url}"
api_key = "k"

[models."{MODEL}"]
provider = "fake-openai"
api = "responses"
vision = true
context_window = 200000
max_output_tokens = 4096

[compaction]
auto_title = false
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def chat_service(store: Store, data_dir: Path) -> ChatService:
    # The real providers (the `openai` SDK), not the conftest's in-process model.
    return ChatService(store, ConfigSource(data_dir))


def _send(client: TestClient, conversation: str, text: str, files=()) -> None:
    reply = client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": text, "attachments": list(files)},
    )
    assert reply.status_code == 200, reply.text
    assert "event: error" not in reply.text, reply.text


def _file(name: str, media_type: str, data: bytes) -> dict[str, str]:
    return {"name": name, "mediaType": media_type, "dataBase64": sample_files.b64(data)}


def _answered(server: FakeProviderServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.status == 200 and r.body is not None]


def _items_of_kind(body: dict, kind: str) -> list[dict]:
    return [
        part
        for item in body["input"]
        if isinstance(item.get("content"), list)
        for part in item["content"]
        if part.get("type") == kind
    ]


def test_files_reach_the_responses_api_as_input_items_and_fold_away(
    client: TestClient, server: FakeProviderServer, store: Store, chat_service: ChatService
) -> None:
    conversation = client.post(
        "/api/conversations", json={"settings": {"compaction": {"keep_recent_tokens": 0}}}
    ).json()["id"]
    files = [_file("chart.png", "image/png", PNG), _file("report.pdf", "application/pdf", PDF)]
    _send(client, conversation, "What is in these?", files)
    _send(client, conversation, "And the outlook?")

    first, second = _answered(server)
    assert first.path.endswith("/responses")
    content = first.body["input"][0]["content"]
    assert [part["type"] for part in content] == [
        "input_text",
        "input_text",
        "input_image",
        "input_text",
        "input_file",
    ]
    assert content[0]["text"] == "What is in these?"
    assert content[1]["text"] == "[attachment chart.png (image/png, 1200x800 px)]"
    assert content[2]["image_url"] == "data:image/png;base64," + sample_files.b64(PNG)
    assert content[4]["filename"] == "report.pdf"
    assert content[4]["file_data"] == "data:application/pdf;base64," + sample_files.b64(PDF)
    # The fake server billed the image by its tiles and every page as an image, as OpenAI
    # does, on top of the text.
    media = openai_image_tokens(1200, 800) + 3 * OPENAI_PDF_PAGE_IMAGE_TOKENS
    assert first.input_tokens is not None and first.input_tokens > media
    # The files sit in the cached prefix: the first item is byte-identical next turn.
    assert json.dumps(second.body["input"][0]) == json.dumps(first.body["input"][0])

    # The meter counts the Responses payload the turns send, files by the same formulas,
    # and calibrates only the text.
    chat_service.loader.drop_anchor(conversation)
    meter = client.get(f"/api/conversations/{conversation}/context?messages=false").json()
    ctx = chat_service.load_context(conversation)
    ratio = store.get_calibration("fake-openai", MODEL).ratio
    counter = ScaledCounter(counter_for(MODEL, "openai-responses", images=True), ratio)
    expected = counter.count_request(ctx.system, ctx.view, ctx.tools)
    assert meter["tokens"] == expected > media

    folded = client.post(f"/api/conversations/{conversation}/compact")
    assert folded.status_code == 200 and "compaction.completed" in folded.text, folded.text
    summary = next(r for r in _answered(server) if r.is_summary)
    # The summarizer (the same model) read the image and the PDF themselves.
    assert len(_items_of_kind(summary.body, "input_image")) == 1
    assert len(_items_of_kind(summary.body, "input_file")) == 1

    _send(client, conversation, "What was in the chart?")
    after = _answered(server)[-1]
    assert not after.is_summary
    assert _items_of_kind(after.body, "input_image") == []
    assert _items_of_kind(after.body, "input_file") == []
    assert "chart.png" in json.dumps(after.body["input"])  # the summary names the files
