"""The meter and the model's view agree on a calibrated count with files in it: images
and PDF page images are billed by the provider's formula, so the learned ratio scales
only the text, in the stored per-message counts (the meter's sum) as in
`ScaledCounter.count_message`, for the view's tail and for its head (a pinned file
riding after the summary)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.core.calibration import Calibration
from foldline.core.tokens import ScaledCounter
from foldline.store import Store
from foldline.testing import sample_files
from foldline.tokenizers import counter_for

MODEL = "claude-fake-files"
RATIO = 1.37
PNG = sample_files.png(1200, 800)
PDF = sample_files.pdf(["Quarterly report: revenue rose 12%.", "Costs fell."])


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "config.toml").write_text(
        f"""\
[defaults]
model = "{MODEL}"

[providers.local]
kind = "anthropic"
base_url = "http://127.0.0.1:9"
api_key = "k"

[models."{MODEL}"]
provider = "local"
context_window = 200000
max_output_tokens = 1024
vision = true

[compaction]
auto_title = false
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def model(model):  # type: ignore[no-untyped-def]
    model.wire = "anthropic"
    return model


def _file(name: str, media_type: str, data: bytes) -> dict[str, str]:
    return {"name": name, "mediaType": media_type, "dataBase64": sample_files.b64(data)}


def _meter_and_view(client: TestClient, conversation: str) -> tuple[int, int]:
    base = f"/api/conversations/{conversation}/context"
    meter = client.get(base, params={"messages": "false"}).json()["tokens"]
    view = client.get(base).json()["tokens"]
    return meter, view


def _expected(chat_service: ChatService, conversation: str) -> int:
    """Base + the sum of `ScaledCounter.count_message` over the view, counted afresh by a
    counter of its own (no stored count is read)."""
    ctx = chat_service.load_context(conversation)
    counter = ScaledCounter(counter_for(MODEL, "anthropic", images=True), RATIO)
    base = counter.count_request(ctx.system, [], ctx.tools)
    return base + sum(counter.count_message(message) for message in ctx.view)


def test_the_meter_scales_only_the_text_of_messages_with_files(
    client: TestClient, store: Store, chat_service: ChatService
) -> None:
    conversation = client.post(
        "/api/conversations", json={"settings": {"compaction": {"keep_recent_tokens": 0}}}
    ).json()["id"]
    files = [_file("chart.png", "image/png", PNG), _file("report.pdf", "application/pdf", PDF)]
    for text, attached in (("What is in these?", files), ("And the outlook?", [])):
        sent = client.post(
            f"/api/conversations/{conversation}/messages",
            json={"content": text, "attachments": attached},
        )
        assert sent.status_code == 200, sent.text
    store.set_calibration("local", MODEL, Calibration(ratio=RATIO, samples=5))
    # Without the last call's reported usage the count is the estimate itself.
    chat_service.loader.drop_anchor(conversation)

    meter, view = _meter_and_view(client, conversation)
    # The stored counts were written during the turns; the meter only sums them.
    assert meter == view == _expected(chat_service, conversation)
    # Scaling the files' formula-billed tokens too would count a third of them more.
    ctx = chat_service.load_context(conversation)
    raw = counter_for(MODEL, "anthropic", images=True)
    counter = ScaledCounter(raw, RATIO)
    media = sum(raw.media_tokens(m) for m in ctx.view)  # type: ignore[attr-defined]
    assert media > 1200 * 800 // 750
    whole = counter.count_request(ctx.system, [], ctx.tools) + sum(
        counter.scale(raw.count_message(m)) for m in ctx.view
    )
    assert whole - view >= (RATIO - 1) * media - len(ctx.view)

    # Fold, then pin the message with the files: it rides in the head, after the summary.
    folded = client.post(f"/api/conversations/{conversation}/compact")
    assert folded.status_code == 200 and "compaction.completed" in folded.text, folded.text
    first = client.get(f"/api/conversations/{conversation}/messages").json()["items"][0]
    assert client.post(f"/api/conversations/{conversation}/messages/{first['id']}/pin").is_success
    chat_service.loader.drop_anchor(conversation)
    meter, view = _meter_and_view(client, conversation)
    assert meter == view == _expected(chat_service, conversation)
