"""What a file attached to a message may be, checked from its bytes alone.

The person declares a name and a media type; the bytes must agree (magic numbers), an
image's pixel size comes from its header (PNG, JPEG, GIF, WebP: no image library), and
the providers' published limits hold before anything is stored or sent. Everything here
is pure: PDF text and page counts are read by the caller (`foldline.uploads`, with pypdf).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from foldline.core.messages import AttachmentPart, Message
from foldline.core.wire.attachments import attachment_label
from foldline.core.wire.common import IMAGE_TYPES

PDF_TYPE = "application/pdf"

# The providers' limits, as documented (checked November 2026):
# - Anthropic vision: PNG, JPEG, GIF and WebP; at most 5 MB per image (the API measures
#   the base64 string), at most 8000x8000 px (2000x2000 px once a request holds more than
#   20 images); images with a long edge over 1568 px are downscaled before the model sees
#   them. PDF support: at most 100 pages and 32 MB per request.
# - OpenAI images and vision: PNG, JPEG, non-animated GIF and WebP, up to 50 MB of
#   images per request; file inputs (PDF) on Chat Completions as `file` parts, and at
#   most 100 pages / 32 MB of files per request.
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
"""Anthropic refuses an image whose base64 string is over 5 MB (the stricter provider)."""
MAX_IMAGE_SIDE = 8000
"""Anthropic refuses an image with a side over 8000 px."""
MAX_PDF_PAGES = 100
"""Both providers read at most 100 pages of PDF per request."""
MAX_REQUEST_FILE_BYTES = 32 * 1024 * 1024
"""Anthropic's request size limit (32 MB) is what a message's files must fit in, with
their base64 overhead; OpenAI's file inputs share the same 32 MB."""
MAX_TEXT_FILE_BYTES = 2 * 1024 * 1024
"""A text file is sent as text: 2 MB of text is ~500k tokens, more than any window."""
MAX_PDF_TEXT_CHARS = 2 * 1024 * 1024
"""A PDF's extracted text, like a text file's, is at most 2 Mi characters: more is more
than any window reads, and a small PDF can inflate to gigabytes of text."""

TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/typescript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/x-python",
        "application/x-ndjson",
    }
)
"""Media types that are text although they are not `text/*`."""

TEXT_EXTENSIONS = frozenset(
    {
        ".txt", ".md", ".markdown", ".rst", ".csv", ".tsv", ".json", ".jsonl", ".ndjson",
        ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml", ".html", ".htm", ".css",
        ".log", ".py", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".go", ".rs",
        ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".scala", ".sh",
        ".bash", ".zsh", ".sql", ".r", ".lua", ".pl", ".hs", ".ex", ".exs", ".erl", ".clj",
        ".dart", ".vue", ".svelte", ".tex", ".diff", ".patch", ".env", ".gitignore",
        ".dockerfile", ".makefile", ".gradle", ".proto", ".graphql",
    }
)  # fmt: skip
"""Extensions of text files a browser labels `application/octet-stream` or leaves blank."""


class AttachmentRefused(ValueError):
    """A file that cannot be attached; the message names the file and the rule."""


def kind_of(name: str, media_type: str) -> str:
    """ "image", "pdf" or "text" for a type Foldline takes; "" for any other."""
    if media_type in IMAGE_TYPES:
        return "image"
    if media_type == PDF_TYPE:
        return "pdf"
    if is_text_like(name, media_type):
        return "text"
    return ""


def is_text_like(name: str, media_type: str) -> bool:
    if media_type.startswith("text/") or media_type in TEXT_TYPES:
        return True
    if media_type in ("", "application/octet-stream"):
        base = name.lower().rsplit("/", 1)[-1]
        suffix = "." + base.rsplit(".", 1)[-1] if "." in base else ""
        return suffix in TEXT_EXTENSIONS or base in ("makefile", "dockerfile")
    return False


def sniff_media_type(data: bytes) -> str | None:
    """The image or PDF type the bytes' magic number says, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"%PDF-"):
        return PDF_TYPE
    return None


def image_size(data: bytes, media_type: str) -> tuple[int, int]:
    """(width, height) in pixels from the image's header; AttachmentRefused when the
    header is missing or damaged."""
    try:
        size = _image_size(data, media_type)
    except (struct.error, IndexError):
        size = None
    if size is None or size[0] <= 0 or size[1] <= 0:
        raise AttachmentRefused("its image header is damaged or incomplete")
    return size


def _image_size(data: bytes, media_type: str) -> tuple[int, int] | None:
    if media_type == "image/png":
        # The IHDR chunk comes first: width and height as big-endian 32-bit integers.
        if data[12:16] != b"IHDR":
            return None
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if media_type == "image/gif":
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if media_type == "image/webp":
        return _webp_size(data)
    if media_type == "image/jpeg":
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":  # lossy: 14-bit sizes after the frame tag and start code
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14-bit sizes minus one, packed after the signature
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit canvas sizes minus one
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


_JPEG_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walk the segments to the first start-of-frame marker, which holds the size."""
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if marker in _JPEG_FRAME_MARKERS:
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        index += 2 + length
    return None


def base64_length(size: int) -> int:
    """The length of `size` bytes in base64 (with padding)."""
    return (size + 2) // 3 * 4


def check_image(name: str, size: int, width: int, height: int) -> None:
    """The image limits every wire shares (see the constants above)."""
    if base64_length(size) > MAX_IMAGE_BASE64_BYTES:
        raise AttachmentRefused(
            f"{name}: {size / 1_048_576:.1f} MB is over the 5 MB providers take per image "
            "(measured in base64); make it smaller"
        )
    if max(width, height) > MAX_IMAGE_SIDE:
        raise AttachmentRefused(
            f"{name}: {width}x{height} px is over the {MAX_IMAGE_SIDE} px per side providers take"
        )


def check_pdf(name: str, pages: int) -> None:
    if pages > MAX_PDF_PAGES:
        raise AttachmentRefused(
            f"{name}: {pages} pages is over the {MAX_PDF_PAGES} pages providers read per request"
        )


def check_request_size(sizes: list[int]) -> None:
    """A message's files together, in base64, must fit in one request."""
    total = sum(base64_length(size) for size in sizes)
    if total > MAX_REQUEST_FILE_BYTES:
        raise AttachmentRefused(
            f"the files together are {total / 1_048_576:.1f} MB in base64, over the 32 MB "
            "a request may carry; send them in separate messages"
        )


PDF_DOCUMENT_SHARE = 0.5
"""The most of a model's input budget a PDF's page images may take for it to be sent as
a document; a larger PDF goes as its extracted text."""


def settle_pdf_form(
    part: AttachmentPart, page_image_tokens: int, input_budget: int | None
) -> AttachmentPart:
    """`part`, marked `as_text` when it is a PDF whose page images would take more than
    half the model's input budget.

    A PDF sent as a document costs its text plus an image of every page (on Anthropic
    about 1,600 tokens a page), so a 10-page PDF would fill a 16k window alone; its
    extracted text carries most of what it says at a fraction of the cost. Only the page
    images are compared (`page_image_tokens`: what the wire bills for them, 0 where PDFs
    go as text anyway): the text is sent in either form. The choice is made once, when
    the message is sent, and kept on the part, so the message serializes the same on
    every turn and the prompt cache holds.
    """
    if part.media_type != PDF_TYPE or part.as_text or input_budget is None:
        return part
    if page_image_tokens <= input_budget * PDF_DOCUMENT_SHARE:
        return part
    return part.model_copy(update={"as_text": True})


def attached_files(messages: Sequence[Message]) -> list[AttachmentPart]:
    """The person's files in `messages`, in order (a tool's attachments are not files the
    person gave)."""
    return [
        part
        for message in messages
        if message.role == "user"
        for part in message.parts
        if isinstance(part, AttachmentPart)
    ]


def name_folded_files(summary: str, folded: Sequence[Message]) -> str:
    """`summary` with a closing line naming every folded file it does not name itself:
    once folded, the model no longer sees the files, so the summary must say they were
    there (a pinned message's files still ride after it)."""
    missing = [part for part in attached_files(folded) if part.name not in summary]
    if not missing:
        return summary
    names = "; ".join(
        attachment_label(part).strip("[]").removeprefix("attachment ") for part in missing
    )
    return f"{summary}\n\nFiles attached in the folded messages: {names}."
