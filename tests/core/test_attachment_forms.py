"""A PDF too large for the window as a document goes as its text; images over 2000 px
are counted at the size Foldline sends them to Anthropic."""

from __future__ import annotations

import json

from foldline.core.attachments import PDF_DOCUMENT_SHARE, settle_pdf_form
from foldline.core.messages import AttachmentPart, Message, TextPart
from foldline.core.tokens.anthropic_messages import AnthropicEstimateCounter
from foldline.core.tokens.attachments import (
    ANTHROPIC_PDF_PAGE_IMAGE_TOKENS,
    OPENAI_PDF_PAGE_IMAGE_TOKENS,
    anthropic_image_tokens,
    anthropic_sent_size,
)
from foldline.core.tokens.openai_chat import OpenAIChatCounter
from foldline.core.wire import to_anthropic_messages, to_openai_messages
from foldline.core.wire.attachments import openai_responses_attachment_content
from foldline.testing import sample_files
from foldline.tokenizers import get_encoder

TEXT = "\n\n".join(f"[page {n}]\nSection {n}: the budget rose by {n}%." for n in range(1, 11))
PDF_BYTES = sample_files.pdf([f"Section {n}: the budget rose by {n}%." for n in range(1, 11)])
PDF = AttachmentPart(
    name="report.pdf",
    media_type="application/pdf",
    data_base64=sample_files.b64(PDF_BYTES),
    sha256="c" * 64,
    size=len(PDF_BYTES),
    pages=10,
    text=TEXT,
)
WINDOW_16K_BUDGET = 16_384 - 2_048


def _message(part: AttachmentPart) -> Message:
    return Message(role="user", parts=(TextPart(text="summarize this"), part))


def _words(text: str) -> int:
    return len(text.split())


def test_a_pdf_whose_page_images_take_over_half_the_budget_is_marked_as_text() -> None:
    pages = 10 * ANTHROPIC_PDF_PAGE_IMAGE_TOKENS  # ~16,000: more than the window reads
    settled = settle_pdf_form(PDF, pages, WINDOW_16K_BUDGET)
    assert settled.as_text is True
    # On a 200k window the same PDF stays a document; so does one at exactly half.
    assert settle_pdf_form(PDF, pages, 200_000 - 32_000).as_text is None
    half = int(WINDOW_16K_BUDGET * PDF_DOCUMENT_SHARE)
    assert settle_pdf_form(PDF, half, WINDOW_16K_BUDGET).as_text is None
    assert settle_pdf_form(PDF, half + 1, WINDOW_16K_BUDGET).as_text is True
    # No window (unlimited) and wires that send text anyway (no page images) never mark.
    assert settle_pdf_form(PDF, pages, None).as_text is None
    assert settle_pdf_form(PDF, 0, WINDOW_16K_BUDGET).as_text is None
    image = AttachmentPart(name="a.png", media_type="image/png", width=10, height=10)
    assert settle_pdf_form(image, 10**6, WINDOW_16K_BUDGET) is image


def test_a_pdf_as_text_goes_as_labelled_text_on_every_wire() -> None:
    as_text = settle_pdf_form(PDF, 16_000, WINDOW_16K_BUDGET)
    [anthropic] = to_anthropic_messages([_message(as_text)])
    kinds = [block["type"] for block in anthropic["content"]]
    assert kinds == ["text", "text"]
    sent = anthropic["content"][1]["text"]
    assert sent.startswith(
        "[attachment report.pdf (application/pdf, 10 pages), sent as its extracted text: "
    )
    assert sent.endswith(TEXT)
    chat = to_openai_messages("", [_message(as_text)], images=True, documents=True)
    assert [p["type"] for p in chat[0]["content"]] == ["text", "text"]
    assert chat[0]["content"][1]["text"] == sent
    responses = openai_responses_attachment_content(as_text, images=True, documents=True)
    assert responses == [{"type": "input_text", "text": sent}]
    # The same message serializes byte-identically every time (the cached prefix).
    again = to_anthropic_messages([_message(as_text)])
    assert json.dumps(again) == json.dumps([anthropic])


def test_what_is_counted_is_the_form_that_is_sent() -> None:
    counter = AnthropicEstimateCounter(_words)
    as_document = counter.count_message(_message(PDF))
    as_text = settle_pdf_form(PDF, 16_000, WINDOW_16K_BUDGET)
    counted = counter.count_message(_message(as_text))
    [wire] = to_anthropic_messages([_message(as_text)])
    assert counted == 4 + sum(_words(block["text"]) for block in wire["content"])
    assert as_document - counted >= 10 * ANTHROPIC_PDF_PAGE_IMAGE_TOKENS - 30
    assert counted < WINDOW_16K_BUDGET // 4
    # Its page images are no longer formula-billed media (calibration scales the text).
    assert counter.media_tokens(_message(PDF)) == 10 * ANTHROPIC_PDF_PAGE_IMAGE_TOKENS
    assert counter.media_tokens(_message(as_text)) == 0
    openai = OpenAIChatCounter(get_encoder("o200k_base"), images=True, documents=True)
    assert openai.media_tokens(_message(PDF)) == 10 * OPENAI_PDF_PAGE_IMAGE_TOKENS
    assert openai.media_tokens(_message(as_text)) == 0
    assert openai.count_message(_message(PDF)) - openai.count_message(_message(as_text)) > 7_000


def test_images_over_2000_px_are_counted_at_the_size_they_are_sent() -> None:
    assert anthropic_sent_size(2000, 1000) == (2000, 1000)
    assert anthropic_sent_size(4000, 1000) == (2000, 500)
    assert anthropic_sent_size(1001, 3000) == (667, 2000)
    assert anthropic_sent_size(8000, 3) == (2000, 1)
    # The count of a large image is the count of the image as sent.
    assert anthropic_image_tokens(4000, 1000) == anthropic_image_tokens(2000, 500)
    assert anthropic_image_tokens(1001, 3000) == anthropic_image_tokens(667, 2000)
    # Below 2000 px nothing changes (Anthropic's own examples).
    assert anthropic_image_tokens(1000, 1000) == 1334
