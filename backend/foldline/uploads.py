"""A person's files, from the bytes a client sent to the attachment parts of a message.

Every check happens here, before anything is stored or sent: the base64 must decode,
the bytes must be what the declared type says (magic numbers), the type must be one
Foldline takes (PNG, JPEG, GIF, WebP, PDF, text-like files) and one the conversation's
model takes (images need `[models."x"] vision`), and the providers' limits must hold
(`foldline.core.attachments`). A refusal is an `AttachmentRefused` naming the file and
the rule; nothing is kept.

PDFs are read with pypdf in a child process bounded in time and memory
(`foldline.pdf_reading`): the page count (for the limit and the token count) and the
text of every page (what a model that takes no PDFs is sent, and what search finds).
On the event loop, `read_pdfs_ahead` reads a message's PDFs first without holding the
loop (and stops at once when the waiting task is cancelled); the checks then take those
results instead of reading the PDFs again.
"""

from __future__ import annotations

import asyncio
import binascii
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from foldline.core import base64_slices
from foldline.core.attachments import (
    MAX_REQUEST_FILE_BYTES,
    MAX_TEXT_FILE_BYTES,
    PDF_TYPE,
    AttachmentRefused,
    check_image,
    check_pdf,
    check_request_size,
    image_size,
    kind_of,
    sniff_media_type,
)
from foldline.core.messages import AttachmentPart
from foldline.pdf_reading import PdfText, read_pdf_isolated, read_pdf_isolated_async

log = logging.getLogger("foldline.uploads")

MEDIA_TYPE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
"""Types some systems declare for JPEG; stored as the standard `image/jpeg`."""

ACCEPTED = "PNG, JPEG, GIF, WebP, PDF, or a text file (plain text, Markdown, CSV, JSON, code)"
PROJECT_ACCEPTED = "a PDF or a text file (plain text, Markdown, CSV, JSON, code)"


@dataclass(frozen=True)
class IncomingFile:
    name: str
    media_type: str
    data_base64: str


PdfsRead = Mapping[str, PdfText]
"""PDFs read ahead, by the sha256 of their bytes."""


def read_attachments(
    files: Sequence[IncomingFile], *, model: str, vision: bool, pdfs: PdfsRead | None = None
) -> tuple[AttachmentPart, ...]:
    """The parts for a message's files, in order, or AttachmentRefused for the first
    file that breaks a rule (then none is kept). `pdfs`: the PDFs `read_pdfs_ahead`
    read already."""
    parts = tuple(read_attachment(file, model=model, vision=vision, pdfs=pdfs) for file in files)
    check_request_size([part.size or 0 for part in parts])
    return parts


def _pdf_bytes(file: IncomingFile) -> bytes | None:
    """The bytes of a file declared and sniffed as a PDF within the size limit (the
    checks in `read_attachment` refuse anything else, with their own reasons)."""
    media_type = file.media_type.lower()
    if media_type != PDF_TYPE or len(file.data_base64) > MAX_REQUEST_FILE_BYTES * 4 // 3 + 4:
        return None
    try:
        data = base64_slices.decode(file.data_base64)
    except (binascii.Error, ValueError):
        return None
    return data if sniff_media_type(data) == PDF_TYPE else None


def _pdf_bytes_and_digest(file: IncomingFile) -> tuple[bytes, str] | None:
    """`_pdf_bytes` and their sha256, both in the worker thread: hashing 32 MB on the
    event loop held it for tens of milliseconds."""
    data = _pdf_bytes(file)
    return None if data is None else (data, hashlib.sha256(data).hexdigest())


async def read_pdfs_ahead(files: Sequence[IncomingFile]) -> dict[str, PdfText]:
    """Read the PDFs among `files` off the event loop (each in its own bounded process),
    or AttachmentRefused for the first that cannot be read. Cancelling the waiting task
    kills the reading process at once."""
    read: dict[str, PdfText] = {}
    for file in files:
        found = await asyncio.to_thread(_pdf_bytes_and_digest, file)
        if found is None:
            continue
        data, digest = found
        if digest not in read:
            read[digest] = await read_pdf_isolated_async(file.name.strip() or "file", data)
    return read


def read_project_file(file: IncomingFile, pdfs: PdfsRead | None = None) -> AttachmentPart:
    """A project's file, checked by the same rules as a message's. A project sends its
    files as text inside the system prompt (so they stay cached and are never folded),
    and the system prompt takes no images on either wire: an image is refused, a PDF
    keeps its extracted text (`[page N]` headers) for the model."""
    media_type = MEDIA_TYPE_ALIASES.get(file.media_type.lower(), file.media_type.lower())
    if kind_of(file.name, media_type) == "image":
        raise AttachmentRefused(
            f"{file.name.strip() or 'file'}: a project takes no images, since its files "
            "are sent as text in the system prompt, which holds no images; attach the "
            f"image to a message instead, or give the project {PROJECT_ACCEPTED}"
        )
    part = read_attachment(file, model="", vision=False, accepted=PROJECT_ACCEPTED, pdfs=pdfs)
    check_request_size([part.size or 0])
    return part


def read_attachment(
    file: IncomingFile,
    *,
    model: str,
    vision: bool,
    accepted: str = ACCEPTED,
    pdfs: PdfsRead | None = None,
) -> AttachmentPart:
    name = file.name.strip() or "file"
    media_type = MEDIA_TYPE_ALIASES.get(file.media_type.lower(), file.media_type.lower())
    # 4/3 of the request limit in base64 is as large as any accepted file can be; a
    # larger string is refused before decoding it.
    if len(file.data_base64) > MAX_REQUEST_FILE_BYTES * 4 // 3 + 4:
        raise AttachmentRefused(f"{name}: over the 32 MB a request may carry")
    try:
        data = base64_slices.decode(file.data_base64)
    except (binascii.Error, ValueError):
        raise AttachmentRefused(f"{name}: its data is not valid base64") from None
    if not data:
        raise AttachmentRefused(f"{name}: the file is empty")
    kind = kind_of(name, media_type)
    sniffed = sniff_media_type(data)
    if not kind:
        raise AttachmentRefused(
            f"{name}: files of type {media_type or 'unknown'} are not accepted; attach {accepted}"
        )
    if kind in ("image", "pdf") and sniffed != media_type:
        found = f"the bytes of {sniffed}" if sniffed else "bytes of no image or PDF format"
        raise AttachmentRefused(f"{name}: declared as {media_type} but holds {found}")
    common = {
        "name": name,
        "media_type": media_type,
        "data_base64": base64_slices.encode(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
    }
    if kind == "image":
        if not vision:
            raise AttachmentRefused(
                f"{name}: the model {model} does not take images; if it does, set "
                f'vision = true under [models."{model}"] in the configuration'
            )
        try:
            width, height = image_size(data, media_type)
        except AttachmentRefused as refusal:
            raise AttachmentRefused(f"{name}: {refusal}") from None
        check_image(name, len(data), width, height)
        return AttachmentPart(**common, width=width, height=height)
    if kind == "pdf":
        ahead = (pdfs or {}).get(common["sha256"])
        pages, text = (ahead.pages, ahead.text) if ahead else read_pdf(name, data)
        check_pdf(name, pages)
        return AttachmentPart(**common, pages=pages, text=text)
    return AttachmentPart(**common, text=read_text(name, data, sniffed))


def read_text(name: str, data: bytes, sniffed: str | None) -> str:
    if sniffed is not None:
        raise AttachmentRefused(f"{name}: declared as text but holds the bytes of {sniffed}")
    if len(data) > MAX_TEXT_FILE_BYTES:
        raise AttachmentRefused(
            f"{name}: {len(data) / 1_048_576:.1f} MB of text is over the 2 MB a text file may be"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AttachmentRefused(f"{name}: a text file must be UTF-8; this one is not") from None
    if "\x00" in text:
        raise AttachmentRefused(f"{name}: holds NUL bytes, so it is not a text file")
    return text


def read_pdf(name: str, data: bytes) -> tuple[int, str]:
    """(page count, the text of every page, each headed by a `[page N]` line so a model
    reading the text can cite pages), read in a bounded child process; for code already
    off the event loop."""
    read = read_pdf_isolated(name, data)
    return read.pages, read.text
