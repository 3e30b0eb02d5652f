"""A server's binary resources (an image and a PDF, `mcp_feature_server.py`) through a
conversation: the real SDKs against the strict fake provider server.

A tool that embeds the image and links the PDF, then the model reading the PDF through
`mcp_read_resource`: the image reaches the model as an image block (Anthropic: inside the
tool result; OpenAI: in a user message after the results, when the model takes images),
counted from its pixels; the PDF as a document where the wire reads PDFs (Anthropic,
OpenAI's own API); otherwise each as a line naming it. A file a provider would refuse
is named with the reason. The person attaching a resource goes through the message
route's file checks like any file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_feature_server import CHART, CHART_URI, REPORT, REPORT_URI

import foldline
from foldline.chat.service import ChatService
from foldline.config import AppConfig, parse_config
from foldline.core.attachments import AttachmentRefused
from foldline.core.messages import AttachmentPart
from foldline.core.tokens.anthropic_messages import (
    ANTHROPIC_IMAGE_TOKENS,
    AnthropicEstimateCounter,
)
from foldline.core.tokens.attachments import anthropic_image_tokens
from foldline.mcp.manager import McpManager
from foldline.mcp.results import READ_RESOURCE_TOOL, binary_attachment
from foldline.store import Store
from foldline.testing import (
    FakeProviderServer,
    ModelLimits,
    Reply,
    ScriptedModel,
    call,
    sample_files,
)
from foldline.uploads import IncomingFile, read_attachments

FEATURES = Path(__file__).with_name("mcp_feature_server.py")
BACKEND = Path(foldline.__file__).resolve().parents[1]
MODELS = {
    "anthropic": "claude-fake-res",
    "own": "gpt-fake-res-own",
    "vision": "gpt-fake-res-vision",
    "plain": "local-res",
}


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    limits = ModelLimits(context_window=200_000, max_output_tokens=4096)
    with FakeProviderServer(
        ScriptedModel(), models={name: limits for name in MODELS.values()}, api_key="k"
    ) as fake:
        yield fake


def config_for(server: FakeProviderServer) -> AppConfig:
    return parse_config(f"""
{server.providers_toml()}[models."{MODELS["anthropic"]}"]
provider = "fake-anthropic"
context_window = 200000
max_output_tokens = 4096

[models."{MODELS["own"]}"]
provider = "fake-openai"
context_window = 200000
max_output_tokens = 4096
vision = true

[models."{MODELS["vision"]}"]
provider = "fake-compat"
context_window = 200000
max_output_tokens = 4096
vision = true

[models."{MODELS["plain"]}"]
provider = "fake-compat"
context_window = 200000
max_output_tokens = 4096

[compaction]
auto_title = false

[mcp_servers.f]
command = "{sys.executable}"
args = ["{FEATURES}"]
approval = "always"
env = {{ PYTHONPATH = "{BACKEND}", CANCEL_LOG = "/dev/null" }}
""")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


async def snapshot_then_read_the_report(
    server: FakeProviderServer, tmp_path: Path, model: str
) -> tuple[list[dict], Store, str]:
    server.responder = ScriptedModel(
        Reply(tool_calls=(call("f__snapshot"),)),
        Reply(tool_calls=(call(READ_RESOURCE_TOOL, {"server": "f", "uri": REPORT_URI}),)),
        Reply(text="A red chart and a calm outlook."),
        Reply(text="Still the same chart."),
    )
    config = config_for(server)
    store = Store(tmp_path / "foldline.db")
    service = ChatService(store, lambda: config, tool_sources=[McpManager(lambda: config)])
    try:
        conversation = store.create_conversation(model=model).id
        handle = await service.start_turn(conversation, "Show me the chart and the report.")
        events = [event async for event in handle.events()]
        # A second turn reads the files back from the store (bytes by their sha256).
        handle = await service.start_turn(conversation, "And again?")
        events += [event async for event in handle.events()]
    finally:
        await service.shutdown()
    server.assert_no_errors()
    assert [e for e in events if e.name == "error"] == [], events
    bodies = [r.body for r in server.requests if r.body is not None and r.status == 200]
    assert len(bodies) == 4
    # The tool messages are byte-identical in the next turn: the cached prefix holds.
    turn_one, turn_two = bodies[2]["messages"], bodies[3]["messages"]
    strip = json.dumps(turn_one).replace(', "cache_control": {"type": "ephemeral"}', "")
    assert (
        json.dumps(turn_two[: len(turn_one)]).replace(
            ', "cache_control": {"type": "ephemeral"}', ""
        )
        == strip
    )
    return bodies, store, conversation


def tool_attachments(store: Store, conversation: str) -> list[AttachmentPart]:
    records = store.list_messages(conversation, limit=100)
    tool_messages = [r.message for r in records if r.message.role == "tool"]
    return [p for m in tool_messages for p in m.parts if isinstance(p, AttachmentPart)]


async def test_an_embedded_image_reaches_an_anthropic_model_as_an_image_block(
    server: FakeProviderServer, tmp_path: Path
) -> None:
    bodies, store, conversation = await snapshot_then_read_the_report(
        server, tmp_path, MODELS["anthropic"]
    )
    try:
        # The second request: the snapshot's result carries the chart as an image block.
        result = bodies[1]["messages"][-1]["content"][0]
        assert result["type"] == "tool_result"
        [image] = [b for b in result["content"] if b["type"] == "image"]
        assert image["source"] == {"type": "base64", "media_type": "image/png", "data": b64(CHART)}
        text = json.dumps(result["content"])
        assert f"[resource {CHART_URI} (image/png), binary]" in text
        assert f"[resource link {REPORT_URI} report.pdf (application/pdf)" in text
        # The third: the PDF read through mcp_read_resource, as a document in its result.
        result = bodies[2]["messages"][-1]["content"][0]
        [document] = [b for b in result["content"] if b["type"] == "document"]
        assert document["title"] == "report.pdf"
        assert document["source"]["data"] == b64(REPORT)

        # Stored like a person's file: bytes once by sha256, pixels and pages known.
        chart, report = tool_attachments(store, conversation)
        assert (chart.name, chart.width, chart.height, chart.size) == (
            "chart.png",
            300,
            200,
            len(CHART),
        )
        assert chart.sha256 is not None and chart.data_base64 is None  # bytes in their table
        assert (report.name, report.pages, report.size) == ("report.pdf", 2, len(REPORT))
        [hydrated] = store.hydrate([store.list_messages(conversation, limit=100)[2].message])
        # Counted from its pixels (300x200 -> 80 tokens), not the 1,600 of an unknown image.
        counter = AnthropicEstimateCounter(lambda text: len(text) // 4)
        with_image = counter.count_message(hydrated)
        no_chart = tuple(p for p in hydrated.parts if getattr(p, "name", "") != "chart.png")
        without = counter.count_message(hydrated.model_copy(update={"parts": no_chart}))
        assert with_image - without == anthropic_image_tokens(300, 200) == 80
        assert ANTHROPIC_IMAGE_TOKENS == 1600  # what it counted before it knew the size
    finally:
        store.close()


@pytest.mark.parametrize("which", ["own", "vision", "plain"])
async def test_an_openai_model_gets_the_files_it_takes_and_names_the_others(
    server: FakeProviderServer, tmp_path: Path, which: str
) -> None:
    bodies, store, _conversation = await snapshot_then_read_the_report(
        server, tmp_path, MODELS[which]
    )
    store.close()
    messages = bodies[1]["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert f"[resource {CHART_URI} (image/png), binary]" in tool["content"]
    images = [
        part
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
        if part["type"] == "image_url"
    ]
    if which in ("own", "vision"):
        [image] = images
        assert image["image_url"]["url"] == "data:image/png;base64," + b64(CHART)
    else:
        # The result's own line names it (above); no image is sent.
        assert images == []
    # The PDF, read through mcp_read_resource: a `file` part on OpenAI's own API, which
    # reads PDFs; named in its result on a compatible server.
    after = bodies[2]["messages"]
    last = next(m for m in reversed(after) if m["role"] == "tool")
    assert f"[resource {REPORT_URI} (application/pdf), binary]" in last["content"]
    files = [
        part["file"]
        for m in after
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
        if part["type"] == "file"
    ]
    if which == "own":
        assert files == [
            {"filename": "report.pdf", "file_data": "data:application/pdf;base64," + b64(REPORT)}
        ]
    else:
        assert files == []


def test_a_resource_the_person_attaches_takes_the_file_checks() -> None:
    """What the "/" menu sends for a binary resource is a file like any other: the chart
    and the report pass, the chart is refused (naming the rule) for a model without images."""
    chart = IncomingFile("chart.png", "image/png", b64(CHART))
    report = IncomingFile("report.pdf", "application/pdf", b64(REPORT))
    parts = read_attachments([chart, report], model="m", vision=True)
    assert [(p.width, p.height, p.pages) for p in parts] == [(300, 200, None), (None, None, 2)]
    assert "revenue rose 12%" in (parts[1].text or "")
    with pytest.raises(AttachmentRefused, match=r"chart.png: the model m does not take images"):
        read_attachments([chart], model="m", vision=False)


@pytest.mark.parametrize(
    ("name", "media_type", "data", "why"),
    [
        ("wide.png", "image/png", sample_files.png(8001, 2), "8001x2 px is over the 8000 px"),
        ("fake.png", "image/png", sample_files.gif(4, 4), "holds the bytes of image/gif"),
        ("broken.pdf", "application/pdf", b"%PDF-1.4 nothing else", "the PDF is damaged"),
    ],
)
def test_a_file_a_provider_would_refuse_is_named_with_the_reason(
    name: str, media_type: str, data: bytes, why: str
) -> None:
    part, note = binary_attachment(name, media_type, b64(data))
    assert part.data_base64 is None and part.sha256 is None and part.size == len(data)
    assert note.startswith(" (not shown to the model: ") and why in note


def test_a_good_file_from_a_tool_has_a_person_files_metadata() -> None:
    part, note = binary_attachment("chart.png", "image/png", b64(CHART))
    assert note == ""
    assert (part.width, part.height, part.size) == (300, 200, len(CHART))
    assert part.sha256 == hashlib.sha256(CHART).hexdigest()
    other, note = binary_attachment("sound.wav", "audio/wav", b64(b"RIFF....WAVE"))
    assert note == "" and other.size == 12 and other.data_base64  # kept; the wire names it
