"""A file attached to a message in each wire's own shape.

One function a wire, each returning the content items one attachment becomes:

- Anthropic Messages: an `image` block (base64 source), a `document` block for a PDF
  (base64 source, the file name as its `title`), text for anything else.
- OpenAI Chat Completions: an `image_url` part with a data URL for an image (when the
  model takes images), a `file` part with a data URL for a PDF (on OpenAI's own API,
  which reads PDFs; an OpenAI-compatible server gets the PDF's extracted text), text
  otherwise.
- OpenAI Responses: `input_image`, `input_file` and `input_text` items, on the same rules.

An image or a PDF is preceded by a one-line text label naming it, so the model (and a
summary written later) can refer to the file by name. A PDF marked `as_text` (its page
images would take more than half of what the model reads) goes as its extracted text on
every wire, under a label that says so. Everything is built from the part alone, so
an attachment's serialization is byte-identical every turn and the cached prefix holds.
"""

from __future__ import annotations

from typing import Any

from foldline.core.messages import AttachmentPart
from foldline.core.wire.common import IMAGE_TYPES, attachment_text

PDF_TYPE = "application/pdf"


def attachment_label(part: AttachmentPart) -> str:
    """The line naming an image or a PDF sent as such: name, type and size."""
    details = [part.media_type]
    if part.width and part.height:
        details.append(f"{part.width}x{part.height} px")
    if part.pages:
        details.append(f"{part.pages} page{'s' if part.pages != 1 else ''}")
    return f"[attachment {part.name} ({', '.join(details)})]"


def pdf_text_label(part: AttachmentPart) -> str:
    """The line before a PDF's extracted text when the PDF is sent as text."""
    return (
        f"[attachment {part.name} ({part.media_type}, {part.pages or 1} "
        f"page{'s' if (part.pages or 1) != 1 else ''}), sent as its extracted text: "
        "its page images would not fit in the model's window]"
    )


def _text_form(part: AttachmentPart) -> str:
    """How a file that is not sent as an image or a document reads as text."""
    if part.as_text and part.media_type == PDF_TYPE:
        return f"{pdf_text_label(part)}\n{part.text or ''}"
    return attachment_text(part)


def _data_url(part: AttachmentPart) -> str:
    return f"data:{part.media_type};base64,{part.data_base64}"


def _sends_image(part: AttachmentPart, images: bool) -> bool:
    return images and part.media_type in IMAGE_TYPES and bool(part.data_base64)


def _sends_pdf(part: AttachmentPart, documents: bool) -> bool:
    return documents and part.media_type == PDF_TYPE and bool(part.data_base64) and not part.as_text


def anthropic_attachment_blocks(
    part: AttachmentPart, *, images: bool = True, documents: bool = True
) -> list[dict[str, Any]]:
    """Messages API content blocks for one attachment (every Claude model reads images
    and PDFs, hence the defaults)."""
    label = {"type": "text", "text": attachment_label(part)}
    if _sends_image(part, images):
        source = {"type": "base64", "media_type": part.media_type, "data": part.data_base64}
        return [label, {"type": "image", "source": source}]
    if _sends_pdf(part, documents):
        source = {"type": "base64", "media_type": PDF_TYPE, "data": part.data_base64}
        return [label, {"type": "document", "source": source, "title": part.name}]
    return [{"type": "text", "text": _text_form(part)}]


def openai_chat_attachment_parts(
    part: AttachmentPart, *, images: bool, documents: bool
) -> list[dict[str, Any]]:
    """Chat Completions content parts for one attachment in a user message.

    `images`: the model takes image input (`[models."x"] vision`). `documents`: the
    server reads PDF `file` parts (OpenAI's own API, for models that take images).
    """
    label = {"type": "text", "text": attachment_label(part)}
    if _sends_image(part, images):
        return [label, {"type": "image_url", "image_url": {"url": _data_url(part)}}]
    if _sends_pdf(part, documents):
        file = {"filename": part.name, "file_data": _data_url(part)}
        return [label, {"type": "file", "file": file}]
    return [{"type": "text", "text": _text_form(part)}]


def openai_responses_attachment_content(
    part: AttachmentPart, *, images: bool, documents: bool
) -> list[dict[str, Any]]:
    """Responses API input content items for one attachment in a user message, on the
    same rules as `openai_chat_attachment_parts`."""
    label = {"type": "input_text", "text": attachment_label(part)}
    if _sends_image(part, images):
        return [label, {"type": "input_image", "image_url": _data_url(part), "detail": "auto"}]
    if _sends_pdf(part, documents):
        return [
            label,
            {"type": "input_file", "filename": part.name, "file_data": _data_url(part)},
        ]
    return [{"type": "input_text", "text": _text_form(part)}]
