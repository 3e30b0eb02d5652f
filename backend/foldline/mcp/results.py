"""An MCP `CallToolResult` as Foldline's tool outcome.

Everything the server returned is kept: text blocks in order, embedded text resources
with their URI, structured content as JSON (when the text blocks do not already carry
it), links and binary resources named. Images become attachments stored after the
result, shown in the chat and dropped from the model's view with the result when it is
pruned. The text then goes through ingest truncation like any tool output (the full
text stays in storage).
"""

from __future__ import annotations

import json
from typing import Any

from foldline.chat.tool_registry import ToolOutcome
from foldline.core.messages import AttachmentPart


def outcome_from_result(result: Any, tool: str) -> ToolOutcome:
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
            attachments.append(
                AttachmentPart(name=name, media_type=block.mime_type, data_base64=block.data)
            )
            texts.append(f"[{kind} {name} ({block.mime_type})]")
        elif kind == "resource":
            resource = block.resource
            mime = resource.mime_type or "text/plain"
            if getattr(resource, "text", None) is not None:
                texts.append(f"[resource {resource.uri} ({mime})]\n{resource.text}")
            else:
                name = resource.uri.rsplit("/", 1)[-1] or f"{tool}-{number}"
                attachments.append(
                    AttachmentPart(name=name, media_type=mime, data_base64=resource.blob)
                )
                texts.append(f"[resource {resource.uri} ({mime}), binary]")
        elif kind == "resource_link":
            texts.append(f"[link {block.uri}{' ' + block.name if block.name else ''}]")
        else:
            texts.append(f"[{kind or 'unknown'} content]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and not _already_in_text(structured, texts):
        texts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    output = "\n".join(texts) if texts else "(the tool returned nothing)"
    return ToolOutcome(output, is_error=bool(result.is_error), attachments=tuple(attachments))


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
