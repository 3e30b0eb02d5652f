"""Through the real `anthropic` SDK to the fake server: a PDF too large for a 16k window
as a document goes as its text, and a many-image request never carries an image over
2000 px (the server refuses both mistakes as the real API does)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import SERVICES

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.core.attachments import AttachmentRefused, image_size
from foldline.core.calibration import Calibration
from foldline.core.messages import AttachmentPart
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel, sample_files
from foldline.uploads import IncomingFile

SMALL = "claude-fake-16k"
LARGE = "claude-fake-200k"
PAGE = " ".join(f"word{n}" for n in range(170))


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(when_empty=lambda request: Reply(text="Read it."))
    with FakeProviderServer(
        model,
        models={
            SMALL: ModelLimits(context_window=16_384, max_output_tokens=2048),
            LARGE: ModelLimits(context_window=200_000, max_output_tokens=4096),
        },
        api_key="k",
    ) as fake:
        yield fake


def service(server: FakeProviderServer, store: Store) -> ChatService:
    config = parse_config(f"""
[providers.fake-anthropic]
kind = "anthropic"
base_url = "{server.anthropic_url}"
api_key = "k"

[models."{SMALL}"]
provider = "fake-anthropic"
context_window = 16384
max_output_tokens = 2048

[models."{LARGE}"]
provider = "fake-anthropic"
context_window = 200000
max_output_tokens = 4096

[compaction]
auto_title = false
""")
    built = ChatService(store, lambda: config)
    SERVICES.append(built)
    return built


async def turn(chat: ChatService, conversation: str, text: str, files=()) -> None:
    handle = await chat.start_turn(conversation, text, files)
    events = [event async for event in handle.events()]
    assert not [e for e in events if e.name == "error"], events


def _bodies(server: FakeProviderServer) -> list[dict]:
    return [r.body for r in server.requests if r.body is not None and r.status == 200]


def _pdf(pages: int, words: str = PAGE) -> IncomingFile:
    data = sample_files.pdf([f"Page {n}: {words}" for n in range(1, pages + 1)])
    return IncomingFile("report.pdf", "application/pdf", sample_files.b64(data))


def _without_markers(message: dict) -> str:
    content = [{k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]]
    return json.dumps({**message, "content": content}, sort_keys=True)


async def test_a_pdf_too_large_as_a_document_goes_as_its_text(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    chat = service(server, store)
    conversation = store.create_conversation(model=SMALL).id
    await turn(chat, conversation, "Summarize the report.", [_pdf(10)])
    await turn(chat, conversation, "And page 3?")

    first, second = _bodies(server)
    content = first["messages"][0]["content"]
    assert "document" not in [block["type"] for block in content]
    [sent] = [b["text"] for b in content if "report.pdf" in b.get("text", "")]
    assert sent.startswith("[attachment report.pdf (application/pdf, 10 pages), sent as its")
    assert "[page 3]\nPage 3: word0" in sent
    # Decided once and kept: the message is byte-identical on the next turn.
    assert _without_markers(second["messages"][0]) == _without_markers(first["messages"][0])
    stored = store.hydrate([r.message for r in store.list_messages(conversation)])[0]
    [part] = [p for p in stored.parts if isinstance(p, AttachmentPart)]
    assert part.as_text is True and part.data_base64  # the bytes are kept all the same

    # On a 200k window the same PDF is a document.
    wide = store.create_conversation(model=LARGE).id
    await turn(chat, wide, "Summarize the report.", [_pdf(10)])
    content = _bodies(server)[-1]["messages"][0]["content"]
    assert [b["type"] for b in content].count("document") == 1


async def test_a_pdf_whose_text_does_not_fit_either_is_refused(
    server: FakeProviderServer, store: Store
) -> None:
    chat = service(server, store)
    conversation = store.create_conversation(model=SMALL).id
    dense = " ".join(f"term{n}" for n in range(1600))
    with pytest.raises(AttachmentRefused, match="over the 14,336 tokens"):
        await chat.start_turn(conversation, "Read this.", [_pdf(10, dense)])
    assert store.message_count(conversation) == 0
    assert not _bodies(server)


async def test_a_large_image_among_many_is_sent_at_2000_px(
    server: FakeProviderServer, store: Store
) -> None:
    chat = service(server, store)
    conversation = store.create_conversation(model=LARGE).id
    small = [
        IncomingFile(f"shot{n}.png", "image/png", sample_files.b64(sample_files.png(100, 80)))
        for n in range(20)
    ]
    large = sample_files.png(3000, 1200, rgb=(200, 40, 40))
    await turn(chat, conversation, "Twenty screenshots.", small)
    await turn(
        chat,
        conversation,
        "And a big one.",
        [IncomingFile("big.png", "image/png", sample_files.b64(large))],
    )
    await turn(chat, conversation, "Thanks.")

    bodies = _bodies(server)
    second, third = bodies[-2], bodies[-1]

    def big_image(body: dict) -> dict:
        images = [
            block
            for message in body["messages"]
            for block in message["content"]
            if block["type"] == "image"
        ]
        assert len(images) == 21
        return images[-1]["source"]

    sent = big_image(second)
    raw = base64.b64decode(sent["data"])
    assert sent["media_type"] == "image/png"
    assert image_size(raw, "image/png") == (2000, 800)
    # The same bytes every turn (the cached prefix), while the store keeps the original.
    assert big_image(third) == sent
    stored = store.hydrate([r.message for r in store.list_messages(conversation)])
    originals = [p for m in stored for p in m.parts if isinstance(p, AttachmentPart)]
    assert originals[-1].data_base64 == sample_files.b64(large)
    assert (originals[-1].width, originals[-1].height) == (3000, 1200)


async def test_the_calibration_ratio_scales_text_but_not_images_in_the_view(
    server: FakeProviderServer, store: Store
) -> None:
    chat = service(server, store)
    conversation = store.create_conversation(model=LARGE).id
    png = sample_files.b64(sample_files.png(1000, 1000))
    await turn(chat, conversation, "Look.", [IncomingFile("a.png", "image/png", png)])
    store.set_calibration("fake-anthropic", LARGE, Calibration(ratio=2.0, samples=5))
    ctx = chat.load_context(conversation)
    counter, ratio = chat.loader.counter(ctx.model, "anthropic")
    assert ratio == 2.0 and ctx.media == 1334
    # The view's count is the from-scratch count: the image's 1,334 tokens unscaled.
    assert ctx.estimate == counter.count_request(ctx.system, ctx.view, ctx.tools)
