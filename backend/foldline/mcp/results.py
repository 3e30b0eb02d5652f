"""An MCP `CallToolResult` as Foldline's tool outcome.

Everything the server returned is kept: text blocks in order, embedded text resources
with their URI, structured content as JSON (when the text blocks do not already carry
it), links and binary resources named. Images and binary resources become attachments
stored after the result (`binary_attachment`, the one place that builds them, with the
metadata a person's file has), shown in the chat and dropped from the model's view with
the result when it is pruned; a model that cannot take a file of that type reads a line
naming it instead. A resource link tells the model how to read it: the built-in tool
`READ_RESOURCE_TOOL`. The text then goes through ingest truncation like any tool output
(the full text stays in storage).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

from foldline.chat.tool_registry import ToolOutcome
from foldline.core.attachments import (
    PDF_TYPE,
    AttachmentRefused,
    check_image,
    check_pdf,
    image_size,
    sniff_media_type,
)
from foldline.core.messages import AttachmentPart
from foldline.core.wire.common import IMAGE_TYPES
from foldline.uploads import read_pdf

READ_RESOURCE_TOOL = "mcp_read_resource"
"""The built-in tool that reads a resource of an MCP server (a link a tool returned)."""


def binary_attachment(name: str, media_type: str, data_base64: str) -> tuple[AttachmentPart, str]:
    """A binary block (image, audio, a resource's blob) as the attachment stored after the
    result, and a note for the result's text ("" when there is nothing to say).

    The part is filled in like a person's file (sha256, size, an image's pixels, a PDF's
    pages): its bytes are stored once and shown in the chat, and its tokens are counted
    from its size. The provider's wire decides whether the model sees the file or a line
    naming it. An image or PDF that breaks a provider's rule (bytes that are not what the
    server declared, over 8000 px or 5 MB, a damaged PDF) would make every later request
    of the conversation fail, so it keeps only its name and the note says why.
    """
    try:
        data = base64.b64decode(data_base64, validate=True)
    except (binascii.Error, ValueError):
        note = " (not shown to the model: its data is not base64)"
        return _named_only(name, media_type, None), note
    part = AttachmentPart(
        name=name,
        media_type=media_type,
        data_base64=base64.b64encode(data).decode("ascii"),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    if media_type not in IMAGE_TYPES and media_type != PDF_TYPE:
        return part, ""
    try:
        sniffed = sniff_media_type(data)
        if sniffed != media_type:
            found = f"the bytes of {sniffed}" if sniffed else "bytes of no image or PDF format"
            raise AttachmentRefused(f"declared as {media_type} but holds {found}")
        if media_type == PDF_TYPE:
            pages, _text = read_pdf(name, data)
            check_pdf(name, pages)
            return part.model_copy(update={"pages": pages}), ""
        width, height = image_size(data, media_type)
        check_image(name, len(data), width, height)
    except AttachmentRefused as refusal:
        reason = str(refusal).removeprefix(f"{name}: ")
        return _named_only(name, media_type, len(data)), f" (not shown to the model: {reason})"
    return part.model_copy(update={"width": width, "height": height}), ""


def _named_only(name: str, media_type: str, size: int | None) -> AttachmentPart:
    """A file the model must not be sent: its name and type, no bytes."""
    return AttachmentPart(name=name, media_type=media_type, size=size)


def outcome_from_result(result: Any, tool: str, server: str = "") -> ToolOutcome:
    """`result` is an `mcp_types.CallToolResult` (duck-typed: this module needs no SDK)."""
    texts: list[str] = []
    attachments: list[AttachmentPart] = []
    for number, block in enumerate(result.content, start=1):
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            extension = block.mime_type.split("/")[-1]
            name = f"{tool}-{number}.{extension}"
            attachment, note = binary_attachment(name, block.mime_type, block.data)
            attachments.append(attachment)
            texts.append(f"[{kind} {name} ({block.mime_type})]{note}")
        elif kind == "resource":
            text, attachment = _resource_contents(block.resource, f"{tool}-{number}")
            texts.append(text)
            if attachment is not None:
                attachments.append(attachment)
        elif kind == "resource_link":
            named = f" {block.name}" if block.name else ""
            mime = f" ({block.mime_type})" if getattr(block, "mime_type", None) else ""
            how = (
                f"; read it with {READ_RESOURCE_TOOL} (server {server!r}, this uri)"
                if server
                else ""
            )
            texts.append(f"[resource link {block.uri}{named}{mime}{how}]")
        else:
            texts.append(f"[{kind or 'unknown'} content]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and not _already_in_text(structured, texts):
        texts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    output = "\n".join(texts) if texts else "(the tool returned nothing)"
    return ToolOutcome(output, is_error=bool(result.is_error), attachments=tuple(attachments))


def _resource_contents(resource: Any, fallback: str) -> tuple[str, AttachmentPart | None]:
    """A text or blob resource: its text inline, or its bytes as an attachment."""
    uri = str(resource.uri)
    mime = resource.mime_type or "text/plain"
    if getattr(resource, "text", None) is not None:
        return f"[resource {uri} ({mime})]\n{resource.text}", None
    name = uri.rstrip("/").rsplit("/", 1)[-1] or fallback
    attachment, note = binary_attachment(name, mime, resource.blob)
    return f"[resource {uri} ({mime}), binary{note}]", attachment


def outcome_from_resource(result: Any, uri: str) -> ToolOutcome:
    """A `ReadResourceResult` (what `mcp_read_resource` returns to the model)."""
    texts: list[str] = []
    attachments: list[AttachmentPart] = []
    for number, contents in enumerate(result.contents, start=1):
        text, attachment = _resource_contents(contents, f"resource-{number}")
        texts.append(text)
        if attachment is not None:
            attachments.append(attachment)
    output = "\n".join(texts) if texts else f"(the resource {uri} is empty)"
    return ToolOutcome(output, attachments=tuple(attachments))


def _already_in_text(structured: Any, texts: list[str]) -> bool:
    """Servers are asked to send structured content also as JSON text, and the SDK's
    servers wrap a plain return value as `{"result": value}`: neither is worth the
    model's tokens twice."""
    candidates = [structured]
    if isinstance(structured, dict) and set(structured) == {"result"}:
        candidates.append(structured["result"])
    joined = "\n".join(texts)
    for candidate in candidates:
        if candidate == joined:
            return True
        for text in texts:
            try:
                if json.loads(text) == candidate:
                    return True
            except ValueError:
                continue
    return False
