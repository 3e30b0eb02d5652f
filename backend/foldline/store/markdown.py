"""A conversation as readable Markdown: the active path, tool calls, each fold line, and
a list of the other branches.

Meant for people (sharing, archiving), not for re-import; the JSON export is the lossless
one (every branch). Each fold version of the active path is drawn where its boundary
(`apiStartIndex`) falls, with its summary, and marked current, superseded (an earlier fold
the current one builds on) or undone. The other branches are listed at the end: where
each leaves the active path, and its first line.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from foldline.core.messages import (
    AttachmentPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from foldline.store.records import CompactionRecord, MessageRecord

if TYPE_CHECKING:
    from foldline.store.store import Store

ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool"}


def fenced(text: str, language: str = "") -> str:
    """A code block that the content cannot close: the fence is longer than any run of
    backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text.removesuffix("\n")  # the fence's own line break ends the last line
    return f"{fence}{language}\n{body}\n{fence}"


def quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines() or [""])


def _part_markdown(part: Part) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ReasoningPart):
        if not part.text:
            return "**Reasoning** (encrypted by the provider)"
        return "**Reasoning**\n\n" + quoted(part.text)
    if isinstance(part, ToolCallPart):
        arguments = json.dumps(part.input, indent=2, ensure_ascii=False)
        return f"**Tool call** `{part.name}` (id `{part.id}`)\n\n" + fenced(arguments, "json")
    if isinstance(part, ToolResultPart):
        notes = [f"for call `{part.call_id}`"]
        if part.is_error:
            notes.append("error")
        if part.compacted_at:
            notes.append(f"pruned from the model's view at {part.compacted_at}")
        output = part.full_output if part.full_output is not None else part.output
        if part.full_output is not None:
            notes.append("full output; the model saw a truncated version")
        return f"**Tool result** `{part.name}` ({', '.join(notes)})\n\n" + fenced(output)
    if isinstance(part, AttachmentPart):
        details = [part.media_type]
        size = part.size if part.size is not None else len(part.data_base64 or "") * 3 // 4
        details.append(f"{size:,} bytes")
        if part.width and part.height:
            details.append(f"{part.width}×{part.height} px")
        if part.pages:
            details.append(f"{part.pages} page{'s' if part.pages != 1 else ''}")
        heading = f"**Attachment** `{part.name}` ({', '.join(details)})"
        if part.text is not None and part.media_type != "application/pdf":
            return heading + "\n\n" + fenced(part.text)
        return heading + " — the file itself is in the JSON export"
    raise TypeError(f"unknown part {part!r}")


def _message_markdown(record: MessageRecord) -> str:
    role = ROLE_LABELS.get(record.message.role, record.message.role)
    heading = f"### #{record.seq} · {role} · {record.created_at}"
    if record.status != "complete":
        heading += f" · *{record.status}*"
    blocks = [heading]
    blocks.extend(_part_markdown(part) for part in record.message.parts)
    if record.error:
        blocks.append(f"*Error: {record.error}*")
    return "\n\n".join(blocks)


def _fold_status(records: list[CompactionRecord]) -> dict[int, str]:
    """current / superseded (on the current fold's chain) / undone, by version."""
    parents = {r.state.version: r.parent_version for r in records}
    status = {r.state.version: "undone" for r in records}
    version = next((r.state.version for r in records if r.is_current), 0)
    label = "current"
    while version:
        status[version] = label
        label = "superseded"
        version = parents.get(version, 0)
    return status


def _fold_markdown(record: CompactionRecord, status: str) -> str:
    state = record.state
    summarized = state.summarized_range
    facts = [
        f"{status}",
        f"trigger {state.trigger}",
        f"strategy {state.strategy}",
        f"{state.compacted_at}",
        f"summarizes messages #{summarized.from_index}–#{summarized.to_index - 1} "
        f"({summarized.message_count})",
        f"tokens {state.tokens_before:,} → {state.tokens_after:,}",
    ]
    if state.model:
        facts.append(f"by {state.model}")
    if state.degraded:
        facts.append("degraded (emergency digest)")
    line = (
        f"---\n\n> ✂ **Fold v{state.version}** — the model sees this summary instead of "
        f"the messages above #{state.api_start_index} · " + " · ".join(facts)
    )
    return line + "\n>\n" + quoted(state.summary_message) + "\n\n---"


def _versions(count: int) -> str:
    return "1 version" if count == 1 else f"{count} versions"


def _first_line(record: MessageRecord, limit: int = 120) -> str:
    text = record.message.text.strip() or "(no text)"
    line = text.splitlines()[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _branches_markdown(starts: list[MessageRecord]) -> str:
    lines = ["## Other branches", ""]
    lines.append(
        "Other versions of messages of the history above, each the start of a branch "
        "(the JSON export holds them in full):"
    )
    lines.append("")
    for record in starts:
        role = ROLE_LABELS.get(record.message.role, record.message.role)
        lines.append(f"- at #{record.seq} ({role}, {record.created_at}): {_first_line(record)}")
    return "\n".join(lines)


def export_markdown(store: Store, conversation_id: str, default_model: str | None = None) -> str:
    """The active path as Markdown. `default_model` names the model a conversation without
    its own uses (config.toml's default), so the export never says just "default"."""
    conversation, messages, compactions = store.read_conversation(conversation_id)
    # Only the folds of the active path: the others summarize other branches.
    on_path = {record.id for record in messages}
    compactions = [
        c for c in compactions if c.last_message_id is None or c.last_message_id in on_path
    ]
    status = _fold_status(compactions)
    folds_at: dict[int, list[CompactionRecord]] = {}
    for record in compactions:
        folds_at.setdefault(record.state.api_start_index, []).append(record)

    lines = [f"# {conversation.title}", ""]
    model = conversation.model or (
        f"{default_model} (the default model)" if default_model else "the default model (none set)"
    )
    lines.append(f"- Model: {model}")
    if conversation.project_id:
        # The project's instructions and files are in its own export (JSON).
        lines.append(f"- Project: {store.get_project(conversation.project_id).name}")
    lines.append(f"- Created: {conversation.created_at}")
    lines.append(f"- Updated: {conversation.updated_at}")
    lines.append(f"- Messages: {len(messages)}")
    current = next((r for r in compactions if r.is_current), None)
    if current is not None:
        lines.append(
            f"- Folds: {_versions(len(compactions))}; v{current.state.version} is current "
            f"(the model sees its summary and messages from #{current.state.api_start_index})"
        )
    else:
        lines.append(f"- Folds: {_versions(len(compactions))}; none is current")
    blocks = ["\n".join(lines)]
    if conversation.system_prompt:
        blocks.append("## System prompt\n\n" + fenced(conversation.system_prompt))
    for index in range(len(messages) + 1):
        for record in folds_at.get(index, []):
            blocks.append(_fold_markdown(record, status[record.state.version]))
        if index < len(messages):
            blocks.append(_message_markdown(messages[index]))
    starts = store.branch_starts(conversation_id)
    if starts:
        blocks.append(_branches_markdown(starts))
    return "\n\n".join(blocks) + "\n"
