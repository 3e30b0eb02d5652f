"""Engine messages as an OpenAI Chat Completions payload (`messages`, `tools`), as plain dicts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from foldline.core.messages import AttachmentPart, Message, TextPart, ToolSpec
from foldline.core.wire.attachments import PDF_TYPE, openai_chat_attachment_parts
from foldline.core.wire.common import IMAGE_TYPES, attachment_text, tool_arguments_json


def _openai_tool_files(message: Message, *, images: bool, documents: bool) -> dict[str, Any] | None:
    """The images (and, with `documents`, the PDFs) of one batch of tool results as ONE
    user message, or None.

    A `tool` message's content must be text on the Chat Completions wire, so the files
    follow the batch in a user message of `image_url` and `file` parts (base64 data
    URLs), the shapes in which the API accepts them. A PDF goes only with its page
    count, known when its bytes were checked.
    """
    files = [
        part
        for part in message.parts
        if isinstance(part, AttachmentPart)
        and part.data_base64
        and (
            (images and part.media_type in IMAGE_TYPES)
            or (documents and part.media_type == PDF_TYPE and part.pages)
        )
    ]
    if not files:
        return None
    names = ", ".join(file.name for file in files)
    kind = "Images" if all(file.media_type in IMAGE_TYPES for file in files) else "Files"
    content: list[dict[str, Any]] = [
        {"type": "text", "text": f"{kind} returned by the tools above: {names}"}
    ]
    for file in files:
        url = f"data:{file.media_type};base64,{file.data_base64}"
        if file.media_type in IMAGE_TYPES:
            content.append({"type": "image_url", "image_url": {"url": url}})
        else:
            content.append({"type": "file", "file": {"filename": file.name, "file_data": url}})
    return {"role": "user", "content": content}


def to_openai_messages(
    system: str, messages: Sequence[Message], *, images: bool = False, documents: bool = False
) -> list[dict[str, Any]]:
    """Chat Completions `messages`: system first, tool results as `tool` messages.

    With `images` (a model that accepts image input), the images tool results returned
    follow their batch's `tool` messages as one user message each (with `documents`,
    their PDFs too). They wait until the run of `tool` messages has ended, because
    nothing may come between an assistant's tool calls and their results; each batch
    still gets a message of its own, so a message's wire form (and its token count) does
    not depend on its neighbours.

    The person's files go into their message as content parts: images when `images`,
    PDFs as `file` parts when `documents` (OpenAI's own API), text otherwise.
    """
    out: list[dict[str, Any]] = []
    waiting_images: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "tool":
            for result in message.tool_results:
                out.append(
                    {"role": "tool", "tool_call_id": result.call_id, "content": result.output}
                )
            files_message = _openai_tool_files(message, images=images, documents=documents)
            if files_message is not None:
                waiting_images.append(files_message)
            continue
        out.extend(waiting_images)
        waiting_images.clear()
        texts: list[str] = []
        files: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, AttachmentPart) and message.role == "user":
                files.extend(openai_chat_attachment_parts(part, images=images, documents=documents))
            elif isinstance(part, AttachmentPart):
                texts.append(attachment_text(part))
        entry: dict[str, Any] = {"role": message.role, "content": "\n\n".join(texts)}
        if files:
            # A person's files make the content a list of parts: the text first, then
            # each file (its label and its image or PDF, or its text).
            text_part = [{"type": "text", "text": entry["content"]}] if texts else []
            entry["content"] = text_part + files
        calls = message.tool_calls
        if message.role == "assistant" and calls:
            if not texts:
                entry["content"] = None
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": tool_arguments_json(call)},
                }
                for call in calls
            ]
        out.append(entry)
    out.extend(waiting_images)
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]
