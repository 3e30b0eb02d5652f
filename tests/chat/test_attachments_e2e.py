"""A person's files through the real `anthropic` and `openai` SDKs against the strict
fake server: image and document blocks on the Anthropic wire, `image_url` and `file`
parts on OpenAI's, the PDF's text for an OpenAI-compatible server, byte-identical
serialization turn after turn, and the fake server's refusals of bad media."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_sessions import SERVICES

from foldline.chat.service import ChatService
from foldline.config import parse_config
from foldline.store import Store
from foldline.testing import FakeProviderServer, ModelLimits, Reply, ScriptedModel, sample_files
from foldline.testing.validation import check_structure
from foldline.uploads import IncomingFile

MODELS = {"anthropic": "claude-fake-files", "openai": "gpt-fake-files", "compat": "local-files"}
PNG = sample_files.png(1200, 800)
PDF = sample_files.pdf(["Quarterly report: revenue rose 12%.", "Costs fell.", "Outlook: calm."])
CODE = b"def answer():\n    return 42\n"
FILES = [
    IncomingFile("chart.png", "image/png", sample_files.b64(PNG)),
    IncomingFile("report.pdf", "application/pdf", sample_files.b64(PDF)),
    IncomingFile("answer.py", "text/x-python", sample_files.b64(CODE)),
]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    model = ScriptedModel(when_empty=lambda request: Reply(text="I see a chart and a report."))
    limits = ModelLimits(context_window=200_000, max_output_tokens=4096)
    with FakeProviderServer(
        model, models={name: limits for name in MODELS.values()}, api_key="k"
    ) as fake:
        yield fake


def service(server: FakeProviderServer, store: Store, tmp_path: Path) -> ChatService:
    config = parse_config(f"""
{server.providers_toml()}[models."{MODELS["anthropic"]}"]
provider = "fake-anthropic"
context_window = 200000
max_output_tokens = 4096

[models."{MODELS["openai"]}"]
provider = "fake-openai"
context_window = 200000
max_output_tokens = 4096
vision = true

[models."{MODELS["compat"]}"]
provider = "fake-compat"
context_window = 200000
max_output_tokens = 4096
vision = true

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


def _chat_bodies(server: FakeProviderServer) -> list[dict]:
    return [r.body for r in server.requests if r.body is not None and r.status == 200]


@pytest.mark.parametrize("which", ["anthropic", "openai", "compat"])
async def test_files_reach_the_model_in_the_wires_own_shape(
    server: FakeProviderServer, store: Store, tmp_path: Path, which: str
) -> None:
    chat = service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODELS[which]).id
    await turn(chat, conversation, "What is in these?", FILES)
    await turn(chat, conversation, "And the outlook?")

    first, second = _chat_bodies(server)
    if which == "anthropic":
        content = first["messages"][0]["content"]
        image = next(b for b in content if b["type"] == "image")
        document = next(b for b in content if b["type"] == "document")
        assert image["source"]["data"] == sample_files.b64(PNG)
        assert document["source"]["data"] == sample_files.b64(PDF)
        assert document["title"] == "report.pdf"
        assert any("def answer()" in b.get("text", "") for b in content)
    else:
        parts = first["messages"][1]["content"]
        kinds = [p["type"] for p in parts]
        assert kinds.count("image_url") == 1
        url = next(p for p in parts if p["type"] == "image_url")["image_url"]["url"]
        assert url == "data:image/png;base64," + sample_files.b64(PNG)
        if which == "openai":
            # OpenAI's own API reads the PDF as a file part.
            file = next(p for p in parts if p["type"] == "file")["file"]
            assert file["filename"] == "report.pdf"
            assert file["file_data"].endswith(sample_files.b64(PDF))
        else:
            # A compatible server gets the PDF's extracted text.
            assert "file" not in kinds
            assert any("revenue rose 12%" in p.get("text", "") for p in parts)
    # The files sit in the cached prefix: the first message is byte-identical next turn.
    index = 0 if which == "anthropic" else 1
    first_message = json.dumps(first["messages"][index], sort_keys=True)
    again = dict(second["messages"][index])
    if which == "anthropic":
        # The next turn's cache marker moves to the newest block; compare without markers.
        again["content"] = [
            {k: v for k, v in b.items() if k != "cache_control"} for b in again["content"]
        ]
        first_message = json.dumps(
            {
                **first["messages"][0],
                "content": [
                    {k: v for k, v in b.items() if k != "cache_control"}
                    for b in first["messages"][0]["content"]
                ],
            },
            sort_keys=True,
        )
    assert json.dumps(again, sort_keys=True) == first_message


def _anthropic_body(block: dict) -> dict:
    return {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "see"}, block]}],
    }


def _image(media_type: str, data: bytes) -> dict:
    source = {"type": "base64", "media_type": media_type, "data": sample_files.b64(data)}
    return {"type": "image", "source": source}


@pytest.mark.parametrize(
    ("block", "words"),
    [
        (_image("image/png", sample_files.gif(10, 10)), "does not match the provided media type"),
        (_image("image/bmp", b"BM...."), "Input should be 'image/jpeg'"),
        (_image("image/png", sample_files.png(8001, 2)), "exceed max allowed size: 8000"),
        (_image("image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 4_000_000), "exceeds 5 MB"),
        (
            {
                "type": "document",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": sample_files.b64(PNG),
                },
            },
            "PDF specified was not valid",
        ),
        (
            {
                "type": "document",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": sample_files.b64(sample_files.pdf(["p"] * 101)),
                },
            },
            "maximum of 100 PDF pages",
        ),
    ],
)
def test_the_fake_anthropic_server_refuses_bad_media(block: dict, words: str) -> None:
    error = check_structure(_anthropic_body(block), "anthropic")
    assert error is not None and error.status == 400
    assert words in error.message


@pytest.mark.parametrize(
    ("part", "words"),
    [
        (
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64," + sample_files.b64(PDF)},
            },
            "unsupported image",
        ),
        (
            {
                "type": "file",
                "file": {
                    "filename": "a.pdf",
                    "file_data": "data:application/pdf;base64," + sample_files.b64(PNG),
                },
            },
            "Invalid file data",
        ),
        (
            {
                "type": "file",
                "file": {"file_data": "data:application/pdf;base64," + sample_files.b64(PDF)},
            },
            "filename",
        ),
    ],
)
def test_the_fake_openai_server_refuses_bad_media(part: dict, words: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": [part]}]}
    error = check_structure(body, "openai")
    assert error is not None and error.status == 400
    assert words in error.message
    # The same part from an assistant is refused for its role.
    body["messages"] = [{"role": "assistant", "content": [part]}]
    assert check_structure(body, "openai") is not None


async def test_a_fold_drops_the_files_unless_pinned_and_names_them(
    server: FakeProviderServer, store: Store, tmp_path: Path
) -> None:
    chat = service(server, store, tmp_path)
    conversation = store.create_conversation(model=MODELS["anthropic"]).id
    await turn(chat, conversation, "Look at this chart.", FILES[:1])
    await turn(chat, conversation, "And now something else.")
    handle = await chat.start_compaction(conversation, None)
    assert not [e for e in [e async for e in handle.events()] if e.name == "error"]

    # The summarizer (the conversation's own model, which reads images) got the image
    # itself beside a line naming it, and the summary names it.
    summary_request = next(r for r in server.requests if r.is_summary)
    assert "[attachment chart.png (image/png, 1200x800 px)]" in json.dumps(summary_request.body)
    [summary_image] = [
        block
        for message in summary_request.body["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "image"
    ]
    assert summary_image["source"]["data"] == sample_files.b64(PNG)
    state = store.current_compaction(conversation)
    assert state is not None and "chart.png" in state.summary_message

    def sent_images() -> list[dict]:
        body = _chat_bodies(server)[-1]
        return [
            block
            for message in body["messages"]
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "image"
        ]

    await turn(chat, conversation, "What was in the chart?")
    assert sent_images() == []  # folded: the bytes are gone from the model's view

    first = store.list_messages(conversation, limit=1)[0]
    store.set_pinned(conversation, first.id, True)
    await turn(chat, conversation, "Look again.")
    [image] = sent_images()  # pinned: the image rides after the summary, verbatim
    assert image["source"]["data"] == sample_files.b64(PNG)
    context = chat.load_context(conversation)
    assert context.pinned_tokens >= 1200 * 800 // 750 * 0.9
    # The fold line lists the folded files; Model view shows each file with its cost.
    assert store.folded_file_names(
        conversation, state.summarized_range.from_index, state.summarized_range.to_index
    ) == ["chart.png"]
    summary_parts = chat.context(conversation).api_messages[0].parts
    [shown] = [part for part in summary_parts if part.kind == "attachment"]
    assert shown.name == "chart.png" and shown.data_base64 is None
    assert 1200 * 800 // 750 <= shown.tokens <= 1200 * 800 // 750 + 40


def test_the_fake_anthropic_server_refuses_large_images_in_many_image_requests() -> None:
    small = _image("image/png", sample_files.png(100, 100))
    large = _image("image/png", sample_files.png(2400, 10))
    body = _anthropic_body(large)
    body["messages"][0]["content"].extend([small] * 20)
    error = check_structure(body, "anthropic")
    assert error is not None and "many-image requests: 2000 pixels" in error.message
    body["messages"][0]["content"] = body["messages"][0]["content"][:-1]  # 20 images
    assert check_structure(body, "anthropic") is None
