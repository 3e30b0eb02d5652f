"""Files in the engine: what the bytes are, what they cost, how each wire carries them."""

from __future__ import annotations

import json

import pytest

from foldline.core.attachments import (
    AttachmentRefused,
    check_image,
    check_pdf,
    check_request_size,
    image_size,
    kind_of,
    sniff_media_type,
)
from foldline.core.messages import AttachmentPart, Message, TextPart, ToolResultPart
from foldline.core.tokens import ScaledCounter
from foldline.core.tokens.anthropic_messages import AnthropicEstimateCounter
from foldline.core.tokens.attachments import (
    ANTHROPIC_PDF_PAGE_IMAGE_TOKENS,
    OPENAI_PDF_PAGE_IMAGE_TOKENS,
    anthropic_image_tokens,
    openai_image_tokens,
)
from foldline.core.tokens.openai_chat import OPENAI_IMAGE_PART_TOKENS, OpenAIChatCounter
from foldline.core.tokens.openai_responses import OpenAIResponsesCounter
from foldline.core.wire import to_anthropic_messages, to_openai_messages, to_responses_input
from foldline.core.wire.attachments import (
    anthropic_attachment_blocks,
    openai_chat_attachment_parts,
    openai_responses_attachment_content,
)
from foldline.testing import sample_files
from foldline.tokenizers import get_encoder

# --- what the bytes are ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "media_type", "size"),
    [
        (sample_files.png(300, 200), "image/png", (300, 200)),
        (sample_files.jpeg_header(1024, 768), "image/jpeg", (1024, 768)),
        (sample_files.gif(50, 60), "image/gif", (50, 60)),
        (sample_files.webp(4000, 3000), "image/webp", (4000, 3000)),
    ],
)
def test_images_are_known_by_their_magic_number_and_header(data, media_type, size) -> None:
    assert sniff_media_type(data) == media_type
    assert image_size(data, media_type) == size


def test_a_pdf_is_known_and_other_bytes_are_not() -> None:
    assert sniff_media_type(sample_files.pdf(["x"])) == "application/pdf"
    assert sniff_media_type(b"just some text") is None
    assert sniff_media_type(b"") is None


def test_a_truncated_header_is_refused_not_guessed() -> None:
    with pytest.raises(AttachmentRefused, match="header"):
        image_size(sample_files.png(10, 10)[:14], "image/png")
    with pytest.raises(AttachmentRefused, match="header"):
        image_size(b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg")


def test_webp_lossy_and_lossless_headers() -> None:
    lossy = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 10 + (640).to_bytes(2, "little")
    lossy += (480).to_bytes(2, "little")
    assert image_size(lossy, "image/webp") == (640, 480)
    bits = (99) | (49 << 14)
    lossless = b"RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f" + bits.to_bytes(4, "little")
    assert image_size(lossless, "image/webp") == (100, 50)


@pytest.mark.parametrize(
    ("name", "media_type", "kind"),
    [
        ("a.png", "image/png", "image"),
        ("a.pdf", "application/pdf", "pdf"),
        ("notes.md", "text/markdown", "text"),
        ("data.json", "application/json", "text"),
        ("main.rs", "application/octet-stream", "text"),
        ("Makefile", "", "text"),
        ("a.zip", "application/zip", ""),
        ("a.svg", "image/svg+xml", ""),
        ("a.bin", "application/octet-stream", ""),
    ],
)
def test_the_kinds_foldline_takes(name: str, media_type: str, kind: str) -> None:
    assert kind_of(name, media_type) == kind


def test_the_providers_limits() -> None:
    check_image("ok.png", 3_000_000, 8000, 8000)
    with pytest.raises(AttachmentRefused, match=r"big\.png.*5 MB"):
        check_image("big.png", 4_000_000, 100, 100)  # 5.3 MB in base64
    with pytest.raises(AttachmentRefused, match=r"wide\.png.*8000"):
        check_image("wide.png", 1000, 8001, 10)
    check_pdf("a.pdf", 100)
    with pytest.raises(AttachmentRefused, match=r"a\.pdf: 101 pages.*100"):
        check_pdf("a.pdf", 101)
    check_request_size([10_000_000, 10_000_000])
    with pytest.raises(AttachmentRefused, match="32 MB"):
        check_request_size([13_000_000, 13_000_000])


# --- what they cost -------------------------------------------------------------------


def test_anthropic_image_tokens_follow_the_documented_rule() -> None:
    # Anthropic's table: 200x200 ~54 tokens, 1000x1000 ~1334, 1092x1092 ~1590.
    assert anthropic_image_tokens(200, 200) == 54
    assert anthropic_image_tokens(1000, 1000) == 1334
    assert anthropic_image_tokens(1092, 1092) == 1590
    # Larger images are scaled down first: never much above ~1,600 tokens.
    assert 1500 <= anthropic_image_tokens(4000, 3000) <= 1600
    assert anthropic_image_tokens(8000, 100) == anthropic_image_tokens(1568, 19)


def test_openai_image_tokens_follow_the_tile_formula() -> None:
    # OpenAI's worked examples: 1024x1024 -> 765; 2048x4096 -> 1105.
    assert openai_image_tokens(1024, 1024) == 765
    assert openai_image_tokens(2048, 4096) == 1105
    assert openai_image_tokens(100, 100) == 85 + 170
    assert OPENAI_PDF_PAGE_IMAGE_TOKENS == 765
    assert 1500 <= ANTHROPIC_PDF_PAGE_IMAGE_TOKENS <= 1600


PNG = sample_files.png(1000, 1000)
IMAGE = AttachmentPart(
    name="chart.png",
    media_type="image/png",
    data_base64=sample_files.b64(PNG),
    sha256="a" * 64,
    size=len(PNG),
    width=1000,
    height=1000,
)
PDF_BYTES = sample_files.pdf(["alpha " * 50, "beta " * 50, "gamma " * 50])
PDF = AttachmentPart(
    name="paper.pdf",
    media_type="application/pdf",
    data_base64=sample_files.b64(PDF_BYTES),
    sha256="b" * 64,
    size=len(PDF_BYTES),
    pages=3,
    text="[page 1]\n"
    + "alpha " * 50
    + "\n\n[page 2]\n"
    + "beta " * 50
    + "\n\n[page 3]\n"
    + "gamma " * 50,
)
CODE = AttachmentPart(name="main.py", media_type="text/x-python", text="print('hi')\n")


def _with(*parts: AttachmentPart) -> Message:
    return Message(role="user", parts=(TextPart(text="look at these"), *parts))


def test_anthropic_counts_an_image_by_its_size_and_a_pdf_by_pages_and_text() -> None:
    def count(text: str) -> int:
        return len(text.split())

    words = AnthropicEstimateCounter(count)
    base = words.count_message(_with())
    label_image = count("[attachment chart.png (image/png, 1000x1000 px)]")
    assert words.count_message(_with(IMAGE)) - base == label_image + 1334
    label_pdf = count("[attachment paper.pdf (application/pdf, 3 pages)]")
    pdf_cost = len((PDF.text or "").split()) + 3 * ANTHROPIC_PDF_PAGE_IMAGE_TOKENS
    assert words.count_message(_with(PDF)) - base == label_pdf + pdf_cost


def test_openai_counts_an_image_by_its_tiles_and_a_pdf_only_where_sent_as_a_file() -> None:
    encoder = get_encoder("o200k_base")
    vision = OpenAIChatCounter(encoder, images=True, documents=True)
    wire = to_openai_messages("", [_with(IMAGE)], images=True)
    label = len(encoder.encode("[attachment chart.png (image/png, 1000x1000 px)]"))
    text = len(encoder.encode("look at these"))
    role = len(encoder.encode("user"))
    assert vision.count_message(_with(IMAGE)) == 3 + role + text + label + 765
    assert wire[0]["content"][2]["type"] == "image_url"
    with_pdf = vision.count_message(_with(PDF))
    pdf_text = len(encoder.encode(PDF.text or ""))
    assert with_pdf >= 3 + text + pdf_text + 3 * 765
    # A compatible server gets the PDF's text: counted as text, no page images.
    compat = OpenAIChatCounter(encoder, images=True, documents=False)
    assert compat.count_message(_with(PDF)) < with_pdf - 3 * 700


def test_counts_add_up_and_are_stable() -> None:
    words = AnthropicEstimateCounter(lambda text: len(text.split()))
    message = _with(IMAGE, PDF, CODE)
    assert words.count_request("sys", [message, message], []) == words.count_request(
        "sys", [], []
    ) + 2 * words.count_message(message)


# --- the wires ------------------------------------------------------------------------


def test_anthropic_blocks() -> None:
    [wire] = to_anthropic_messages([_with(IMAGE, PDF, CODE)])
    kinds = [block["type"] for block in wire["content"]]
    assert kinds == ["text", "text", "image", "text", "document", "text"]
    image, document = wire["content"][2], wire["content"][4]
    assert image["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": IMAGE.data_base64,
    }
    assert document["source"]["media_type"] == "application/pdf"
    assert document["title"] == "paper.pdf"
    assert wire["content"][5]["text"].startswith("[attachment main.py (text/x-python)]\nprint")


def test_openai_chat_parts_by_what_the_server_takes() -> None:
    sent = openai_chat_attachment_parts(PDF, images=True, documents=True)
    assert sent[1]["type"] == "file"
    assert sent[1]["file"]["file_data"].startswith("data:application/pdf;base64,JVBER")
    assert sent[1]["file"]["filename"] == "paper.pdf"
    as_text = openai_chat_attachment_parts(PDF, images=True, documents=False)
    assert as_text == [
        {"type": "text", "text": f"[attachment paper.pdf (application/pdf)]\n{PDF.text}"}
    ]
    no_vision = openai_chat_attachment_parts(IMAGE, images=False, documents=False)
    assert [p["type"] for p in no_vision] == ["text"]
    image = openai_chat_attachment_parts(IMAGE, images=True, documents=False)
    assert image[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


def test_openai_responses_items() -> None:
    image = openai_responses_attachment_content(IMAGE, images=True, documents=True)
    assert image[0] == {
        "type": "input_text",
        "text": "[attachment chart.png (image/png, 1000x1000 px)]",
    }
    assert image[1]["type"] == "input_image"
    assert image[1]["image_url"].startswith("data:image/png;base64,")
    pdf = openai_responses_attachment_content(PDF, images=True, documents=True)
    assert pdf[1] == {
        "type": "input_file",
        "filename": "paper.pdf",
        "file_data": f"data:application/pdf;base64,{PDF.data_base64}",
    }
    code = openai_responses_attachment_content(CODE, images=True, documents=True)
    assert code == [
        {"type": "input_text", "text": "[attachment main.py (text/x-python)]\nprint('hi')\n"}
    ]


def test_a_user_message_with_files_is_content_items_on_the_responses_wire() -> None:
    [item] = to_responses_input([_with(IMAGE, PDF, CODE)], images=True, documents=True)
    assert item["role"] == "user"
    assert [part["type"] for part in item["content"]] == [
        "input_text",
        "input_text",
        "input_image",
        "input_text",
        "input_file",
        "input_text",
    ]
    assert item["content"][0] == {"type": "input_text", "text": "look at these"}
    # The same rules as Chat Completions: no PDF file where the server does not read it,
    # no image for a model without vision.
    [compat] = to_responses_input([_with(IMAGE, PDF)], images=True, documents=False)
    assert "input_file" not in [part["type"] for part in compat["content"]]
    assert PDF.text in compat["content"][-1]["text"]
    [blind] = to_responses_input([_with(IMAGE)], images=False)
    assert [part["type"] for part in blind["content"]] == ["input_text", "input_text"]
    # A message without files keeps its plain string content.
    [plain] = to_responses_input([_with()], images=True, documents=True)
    assert plain["content"] == "look at these"


def test_a_tools_images_follow_its_outputs_on_the_responses_wire() -> None:
    result = ToolResultPart(call_id="c1", name="shot", output="[image shot.png]")
    shot = AttachmentPart(name="shot.png", media_type="image/png", data_base64="iVBORw0KGgo=")
    tool = Message(role="tool", parts=(result, shot, CODE))
    output, files = to_responses_input([tool], images=True)
    assert output == {"type": "function_call_output", "call_id": "c1", "output": "[image shot.png]"}
    assert files["role"] == "user"
    assert [part["type"] for part in files["content"]] == [
        "input_text",
        "input_image",
        "input_text",
    ]
    assert files["content"][1]["image_url"] == "data:image/png;base64,iVBORw0KGgo="
    # Without vision, the tool's files are described in text.
    _, described = to_responses_input([tool], images=False)
    assert isinstance(described["content"], str) and "shot.png" in described["content"]
    encoder = get_encoder("o200k_base")
    vision = OpenAIResponsesCounter(encoder, images=True)
    blind = OpenAIResponsesCounter(encoder, images=False)
    # A tool's image (size unknown) costs the fixed estimate; it is no person's file, so
    # it is not among the formula-billed tokens either.
    assert vision.count_message(tool) - blind.count_message(tool) > OPENAI_IMAGE_PART_TOKENS - 40
    assert vision.media_tokens(tool) == 0


def test_the_responses_counter_bills_files_like_the_chat_counter() -> None:
    encoder = get_encoder("o200k_base")
    responses = OpenAIResponsesCounter(encoder, images=True, documents=True)
    chat = OpenAIChatCounter(encoder, images=True, documents=True)
    base = responses.count_message(_with())
    label = len(encoder.encode("[attachment chart.png (image/png, 1000x1000 px)]"))
    assert responses.count_message(_with(IMAGE)) == base + label + 765
    pdf_label = len(encoder.encode("[attachment paper.pdf (application/pdf, 3 pages)]"))
    pdf_cost = len(encoder.encode(PDF.text or "")) + 3 * OPENAI_PDF_PAGE_IMAGE_TOKENS
    assert responses.count_message(_with(PDF)) == base + pdf_label + pdf_cost
    # Same formula-billed part as on Chat Completions, on the same rules.
    message = _with(IMAGE, PDF, CODE)
    assert responses.media_tokens(message) == chat.media_tokens(message) == 765 + 3 * 765
    assert OpenAIResponsesCounter(encoder, images=True).media_tokens(message) == 765
    assert OpenAIResponsesCounter(encoder).media_tokens(message) == 0
    # Calibration leaves them unscaled.
    scaled = ScaledCounter(responses, 0.5)
    raw, media = responses.count_message(message), responses.media_tokens(message)
    assert scaled.count_message(message) == scaled.scale(raw - media) + media


def test_serialization_is_byte_identical_every_time() -> None:
    # The cached prefix holds only if a message's files serialize the same every turn.
    message = _with(IMAGE, PDF, CODE)
    first = json.dumps(to_anthropic_messages([message]))
    again = json.dumps(to_anthropic_messages([Message.model_validate(message.model_dump())]))
    assert first == again
    one = json.dumps(to_openai_messages("s", [message], images=True, documents=True))
    two = json.dumps(to_openai_messages("s", [message], images=True, documents=True))
    assert one == two
    copy = Message.model_validate(message.model_dump())
    three = json.dumps(to_responses_input([message], images=True, documents=True))
    four = json.dumps(to_responses_input([copy], images=True, documents=True))
    assert three == four
    assert anthropic_attachment_blocks(IMAGE) == anthropic_attachment_blocks(IMAGE.model_copy())


def test_calibration_scales_text_but_not_formula_billed_images() -> None:
    words = AnthropicEstimateCounter(lambda text: len(text.split()))
    scaled = ScaledCounter(words, 2.0)
    message = _with(IMAGE, PDF)
    media = words.media_tokens(message)
    assert media == 1334 + 3 * ANTHROPIC_PDF_PAGE_IMAGE_TOKENS
    raw = words.count_message(message)
    assert scaled.count_message(message) == 2 * (raw - media) + media
    # A text-only message is scaled whole.
    assert scaled.count_message(_with(CODE)) == 2 * words.count_message(_with(CODE))
    # OpenAI counts media only where the wire sends it.
    encoder = get_encoder("o200k_base")
    assert OpenAIChatCounter(encoder, images=True, documents=False).media_tokens(message) == 765
    assert OpenAIChatCounter(encoder, images=False).media_tokens(message) == 0


def test_nested_scaled_counters_keep_images_unscaled() -> None:
    # The app wraps the Anthropic estimate in a ScaledCounter twice (the shipped
    # counter, then the learned ratio): the image must stay unscaled through both.
    words = AnthropicEstimateCounter(lambda text: len(text.split()))
    nested = ScaledCounter(ScaledCounter(words, 1.0), 0.5)
    message = _with(IMAGE)
    media = words.media_tokens(message)
    raw = words.count_message(message)
    assert nested.count_message(message) == nested.scale(raw - media) + media


def test_a_folded_pin_names_its_files_in_the_block_and_they_ride_as_files() -> None:
    from foldline.core.pins import Pin, pinned_files, pins_block, pins_tokens

    person = Pin(0, _with(IMAGE, CODE))
    tool_file = AttachmentPart(name="out.txt", media_type="text/plain", text="tool said hi")
    tool = Pin(1, Message(role="tool", parts=(tool_file,)))
    block = pins_block([person, tool], before=5)
    assert "[attachment chart.png (image/png, 1000x1000 px)]" in block
    assert "print('hi')" not in block  # the code file rides as a file, not twice
    assert "tool said hi" in block  # a tool's attachment is quoted as the transcript shows it
    assert pinned_files([person, tool], before=5) == (IMAGE, CODE)
    assert pinned_files([person, tool], before=0) == ()  # still in the view: not repeated
    words = AnthropicEstimateCounter(lambda text: len(text.split()))
    with_files = pins_tokens([person], words.count_text, words.count_message)
    assert with_files >= pins_tokens([person], words.count_text) + 1334


@pytest.mark.parametrize("reads_files", [True, False])
async def test_the_summarizer_gets_the_files_only_when_it_reads_them(reads_files: bool) -> None:
    from foldline.core.budget import Budget
    from foldline.core.compaction import summarize_range
    from foldline.core.fold_inputs import FoldInputs
    from foldline.core.messages import assistant
    from foldline.core.prompts import STRUCTURED_HEADINGS
    from foldline.core.settings import CompactionSettings

    words = AnthropicEstimateCounter(lambda text: len(text.split()))
    history = [_with(IMAGE, CODE), assistant("I see a chart."), _with()]
    inputs = FoldInputs.of(
        history,
        None,
        counter=words,
        system="s",
        tools=[],
        budget=Budget(context_window=100_000, max_output_tokens=4_000),
        settings=CompactionSettings(),
        now="2026-01-01T00:00:00Z",
        summarizer_reads_files=reads_files,
    )
    requests = []

    async def summarize(request):
        requests.append(request)
        return "\n\n".join(f"## {heading}\nNone." for heading in STRUCTURED_HEADINGS)

    summary, _run = await summarize_range(
        history[:2], 0, inputs=inputs, previous_summary=None, instructions=None, summarize=summarize
    )
    [request] = requests
    assert request.files == ((IMAGE, CODE) if reads_files else ())
    # Either way the transcript names each file and holds a text file's content, and the
    # summary names what was folded.
    assert "[attachment chart.png (image/png, 1000x1000 px)]" in request.prompt
    assert "print('hi')" in request.prompt
    assert summary is not None and "chart.png" in summary and "main.py" in summary
