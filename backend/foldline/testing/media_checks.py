"""The fake server's checks of images and documents, as strict as the real APIs.

Anthropic: an `image` block's base64 source must name one of the four image types, be
valid base64, hold bytes of the type it names, stay under 5 MB (of base64) and 8000 px a
side (2000 px once the request holds more than 20 images); a `document` block's base64
source must be a PDF of at most 100 pages; the whole request at most 32 MB. OpenAI Chat
Completions: an `image_url` data URL must hold bytes of a supported image type; a `file`
part needs a `filename` and a PDF data URL. OpenAI Responses: the same for `input_image`
and `input_file` items, which only a user (or system) message may hold, with a `detail`
the API knows, at most 500 images, files of at most 100 pages and 32 MB in all, and the
whole request at most 50 MB.

Each check returns the error the provider answers with, or None. The sizes and pages
found here are also what the fake tokenizer bills, as the providers do.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from foldline.core.attachments import (
    MAX_IMAGE_BASE64_BYTES,
    MAX_IMAGE_SIDE,
    MAX_PDF_PAGES,
    MAX_REQUEST_FILE_BYTES,
    AttachmentRefused,
    image_size,
    sniff_media_type,
)
from foldline.core.wire.common import IMAGE_TYPES
from foldline.testing.wire_errors import WireError, anthropic_error, bad_request, openai_error
from foldline.uploads import read_pdf


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def pdf_pages(data: bytes) -> int | None:
    try:
        return read_pdf("document", data)[0]
    except AttachmentRefused:
        return None


# --- Anthropic -------------------------------------------------------------------------

MANY_IMAGES = 20
MANY_IMAGES_SIDE = 2000
"""A request with more than 20 images takes none with a side over 2000 px (Anthropic)."""


def _anthropic_blocks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every image and document block with its location, tool results' content included."""
    found = []
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for k, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            where = f"messages.{i}.content.{k}"
            if block.get("type") in ("image", "document"):
                found.append((where, block))
            inner = block.get("content")
            if block.get("type") == "tool_result" and isinstance(inner, list):
                for n, item in enumerate(inner):
                    if isinstance(item, dict) and item.get("type") == "image":
                        found.append((f"{where}.content.{n}", item))
    return found


def check_anthropic_media(body: dict[str, Any]) -> WireError | None:
    blocks = _anthropic_blocks(body)
    carried = sum(len(str((block.get("source") or {}).get("data", ""))) for _, block in blocks)
    if carried > MAX_REQUEST_FILE_BYTES:
        return anthropic_error(
            413, "request_too_large", "Request exceeds the maximum allowed number of bytes."
        )
    images = [block for _, block in blocks if block["type"] == "image"]
    if len(images) > MANY_IMAGES:
        for block in images:
            pixels = image_pixels(str((block.get("source") or {}).get("data", "")))
            if pixels and max(pixels) > MANY_IMAGES_SIDE:
                return bad_request(
                    "anthropic",
                    "At least one of the image dimensions exceed max allowed size for "
                    f"many-image requests: {MANY_IMAGES_SIDE} pixels",
                )
    for where, block in blocks:
        source = block.get("source") or {}
        if source.get("type") != "base64":
            continue  # url and text sources are not what Foldline sends
        data = str(source.get("data", ""))
        media_type = source.get("media_type")
        if block["type"] == "image":
            error = _anthropic_image(where, media_type, data)
        else:
            error = _anthropic_document(where, media_type, data)
        if error is not None:
            return error
    return None


def _anthropic_image(where: str, media_type: Any, data: str) -> WireError | None:
    if media_type not in IMAGE_TYPES:
        return bad_request(
            "anthropic",
            f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', "
            "'image/png', 'image/gif' or 'image/webp'",
        )
    if len(data) > MAX_IMAGE_BASE64_BYTES:
        return bad_request(
            "anthropic",
            f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > "
            f"{MAX_IMAGE_BASE64_BYTES} bytes",
        )
    raw = _decode(data)
    if raw is None or sniff_media_type(raw) not in IMAGE_TYPES:
        return bad_request(
            "anthropic", f"{where}.image.source.base64.data: Could not process image"
        )
    if sniff_media_type(raw) != media_type:
        return bad_request(
            "anthropic",
            f"{where}.image.source.base64.data: Image does not match the provided media type "
            f"{media_type}",
        )
    try:
        width, height = image_size(raw, media_type)
    except AttachmentRefused:
        return bad_request(
            "anthropic", f"{where}.image.source.base64.data: Could not process image"
        )
    if max(width, height) > MAX_IMAGE_SIDE:
        return bad_request(
            "anthropic",
            f"{where}.image.source.base64.data: At least one of the image dimensions exceed max "
            f"allowed size: {MAX_IMAGE_SIDE} pixels",
        )
    return None


def _anthropic_document(where: str, media_type: Any, data: str) -> WireError | None:
    if media_type != "application/pdf":
        return bad_request(
            "anthropic",
            f"{where}.document.source.base64.media_type: Input should be 'application/pdf'",
        )
    raw = _decode(data)
    pages = pdf_pages(raw) if raw is not None and raw.startswith(b"%PDF-") else None
    if pages is None:
        return bad_request(
            "anthropic", f"{where}.document.source.base64.data: The PDF specified was not valid."
        )
    if pages > MAX_PDF_PAGES:
        return bad_request("anthropic", f"A maximum of {MAX_PDF_PAGES} PDF pages may be provided.")
    return None


# --- OpenAI ----------------------------------------------------------------------------


def check_openai_part(where: str, part: dict[str, Any]) -> WireError | None:
    """An `image_url` data URL's bytes, or a `file` part (after the shape checks)."""
    kind = part.get("type")
    if kind == "image_url":
        url = str((part.get("image_url") or {}).get("url", ""))
        if not url.startswith("data:"):
            return None
        head, _, data = url.partition(";base64,")
        raw = _decode(data) or b""
        if sniff_media_type(raw) != head.removeprefix("data:"):
            return openai_error(
                400,
                "You uploaded an unsupported image. Please make sure your image has of one the "
                "following formats: ['png', 'jpeg', 'gif', 'webp'].",
                param=None,
                code="invalid_image_format",
            )
        return None
    if kind == "file":
        file = part.get("file") or {}
        data_url = str(file.get("file_data", ""))
        if not file.get("filename") and data_url:
            return openai_error(
                400,
                f"Missing required parameter: '{where}.file.filename'.",
                param=f"{where}.file.filename",
                code="missing_required_parameter",
            )
        head, _, data = data_url.partition(";base64,")
        raw = _decode(data) if head == "data:application/pdf" else None
        if raw is None or not raw.startswith(b"%PDF-") or pdf_pages(raw) is None:
            return openai_error(
                400,
                f"Invalid file data: '{where}.file.file_data'. Expected a base64-encoded data "
                "URL with an application/pdf MIME type (e.g. "
                "'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got unsupported "
                "MIME type or invalid data.",
                param=f"{where}.file.file_data",
                code="invalid_value",
            )
    return None


# --- OpenAI Responses ------------------------------------------------------------------

RESPONSES_MAX_IMAGES = 500
RESPONSES_MAX_PAYLOAD = 50 * 1024 * 1024
"""OpenAI's image input limits: up to 500 images and 50 MB of payload a request."""
_RESPONSES_INPUT_TYPES = ("input_text", "input_image", "input_file", "input_audio")
_RESPONSES_OUTPUT_TYPES = ("output_text", "refusal")
_DETAILS = ("low", "high", "auto")


def _unsupported_image() -> WireError:
    return openai_error(
        400,
        "You uploaded an unsupported image. Please make sure your image has of one the "
        "following formats: ['png', 'jpeg', 'gif', 'webp'].",
        param=None,
        code="invalid_image_format",
    )


def _responses_image(where: str, item: dict[str, Any]) -> WireError | None:
    detail = item.get("detail", "auto")
    if detail not in _DETAILS:
        return openai_error(
            400,
            f"Invalid value: '{detail}'. Supported values are: 'low', 'high', and 'auto'.",
            param=f"{where}.detail",
            code="invalid_value",
        )
    url = str(item.get("image_url") or "")
    if url.startswith(("http://", "https://")) or (not url and item.get("file_id")):
        return None
    head, _, data = url.partition(";base64,")
    raw = _decode(data) if head.startswith("data:image/") else None
    if raw is None or not raw:
        return openai_error(
            400,
            f"Invalid '{where}.image_url'. Expected a base64-encoded data URL with an image "
            "MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got "
            "unsupported MIME type or invalid data.",
            param=f"{where}.image_url",
            code="invalid_value",
        )
    media_type = sniff_media_type(raw)
    if media_type not in IMAGE_TYPES or media_type != head.removeprefix("data:"):
        return _unsupported_image()
    try:
        image_size(raw, media_type)
    except AttachmentRefused:
        return _unsupported_image()
    return None


def _responses_file(where: str, item: dict[str, Any]) -> tuple[WireError | None, int]:
    """The error for an `input_file` item, or None and its page count."""
    data_url = str(item.get("file_data") or "")
    if not data_url:
        return None, 0  # a `file_id` or `file_url`: nothing Foldline sends
    if not item.get("filename"):
        return openai_error(
            400,
            f"Missing required parameter: '{where}.filename'.",
            param=f"{where}.filename",
            code="missing_required_parameter",
        ), 0
    head, _, data = data_url.partition(";base64,")
    raw = _decode(data) if head == "data:application/pdf" else None
    pages = pdf_pages(raw) if raw is not None and raw.startswith(b"%PDF-") else None
    if pages is None:
        return openai_error(
            400,
            f"Invalid file data: '{where}.file_data'. Expected a base64-encoded data URL "
            "with an application/pdf MIME type (e.g. "
            "'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got unsupported MIME "
            "type or invalid data.",
            param=f"{where}.file_data",
            code="invalid_value",
        ), 0
    return None, pages


def check_responses_media(items: list[dict[str, Any]]) -> WireError | None:
    """The content items of a Responses `input`: types the role may send, then every
    image's and file's data, then the request's totals."""
    images = 0
    carried = 0
    pdf_bytes = 0
    pages = 0
    for i, item in enumerate(items):
        content = item.get("content")
        if str(item.get("type") or "message") != "message" or not isinstance(content, list):
            continue
        allowed = _RESPONSES_OUTPUT_TYPES if item.get("role") == "assistant" else None
        for k, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            where = f"input[{i}].content[{k}]"
            if kind not in (allowed or _RESPONSES_INPUT_TYPES):
                names = allowed or _RESPONSES_INPUT_TYPES
                listed = ", ".join(f"'{n}'" for n in names[:-1]) + f", and '{names[-1]}'"
                return openai_error(
                    400,
                    f"Invalid value: '{kind}'. Supported values are: {listed}.",
                    param=f"{where}.type",
                    code="invalid_value",
                )
            if kind == "input_image":
                error = _responses_image(where, part)
                images += 1
                carried += len(str(part.get("image_url") or ""))
            elif kind == "input_file":
                error, file_pages = _responses_file(where, part)
                pages += file_pages
                size = len(str(part.get("file_data") or ""))
                carried += size
                pdf_bytes += size
            else:
                error = None
            if error is not None:
                return error
    if images > RESPONSES_MAX_IMAGES:
        return openai_error(
            400,
            f"Too many images in request. Max is {RESPONSES_MAX_IMAGES}.",
            param="input",
        )
    if pages > MAX_PDF_PAGES or pdf_bytes > MAX_REQUEST_FILE_BYTES:
        return openai_error(
            400,
            f"Invalid input: files may hold at most {MAX_PDF_PAGES} pages and "
            f"{MAX_REQUEST_FILE_BYTES // (1024 * 1024)}MB of content in all, got {pages} "
            f"pages and {pdf_bytes} bytes.",
            param="input",
        )
    if carried > RESPONSES_MAX_PAYLOAD:
        return openai_error(
            413,
            f"Request too large: at most {RESPONSES_MAX_PAYLOAD // (1024 * 1024)}MB of "
            "image and file data a request.",
            param="input",
        )
    return None


# --- billing ---------------------------------------------------------------------------


def image_pixels(data: str) -> tuple[int, int] | None:
    """An image's size from its base64 data (None when it is not a readable image)."""
    raw = _decode(data)
    media_type = sniff_media_type(raw) if raw is not None else None
    if raw is None or media_type not in IMAGE_TYPES:
        return None
    try:
        return image_size(raw, media_type)
    except AttachmentRefused:
        return None


def pdf_pages_and_text(data: str) -> tuple[int, str] | None:
    raw = _decode(data)
    if raw is None:
        return None
    try:
        return read_pdf("document", raw)
    except AttachmentRefused:
        return None
