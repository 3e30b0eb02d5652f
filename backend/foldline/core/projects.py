"""A project's shared context: what every conversation of a project sends the model.

The project's instructions come first, before the conversation's own system prompt;
its files and pinned notes follow the system prompt in one block (a PDF as its
extracted text, page by page). All of it is part of the system prompt sent with every
call, so it sits in the stable prefix the providers cache, is counted like the rest of
the request, and is never folded: a fold only ever replaces messages. Its size is
capped at a share of the input budget so that it cannot crowd out the conversation
itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PROJECT_BUDGET_SHARE = 0.25
"""A project's instructions, files and notes together may take at most this share of
the input budget of the model a conversation uses."""
UNLIMITED_PROJECT_TOKENS = 64_000
"""The cap when the model's window is unlimited (no budget to take a share of)."""

FILES_INTRO = (
    "The person attached these files and notes to the project this conversation belongs "
    "to; every conversation of the project sees them. They are quoted exactly:"
)


@dataclass(frozen=True)
class ProjectFile:
    """A project file as the model reads it: a text file's content, or a PDF's extracted
    text with a `[page N]` line before each page (`pages` is then its page count)."""

    name: str
    media_type: str
    text: str
    pages: int | None = None


@dataclass(frozen=True)
class ProjectNote:
    title: str
    text: str


@dataclass(frozen=True)
class ProjectContext:
    """What a project adds to each of its conversations' requests."""

    name: str
    instructions: str
    files: tuple[ProjectFile, ...] = ()
    notes: tuple[ProjectNote, ...] = ()


def project_cap(input_budget: int | None) -> int:
    """How many tokens a project's shared context may take in a request."""
    if input_budget is None:
        return UNLIMITED_PROJECT_TOKENS
    return int(input_budget * PROJECT_BUDGET_SHARE)


def _attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def project_block(files: Sequence[ProjectFile], notes: Sequence[ProjectNote], name: str) -> str:
    """The block of files and notes sent after the system prompt ('' when none)."""
    if not files and not notes:
        return ""
    quoted = [
        f'<file name="{_attribute(f.name)}" media-type="{_attribute(f.media_type)}"'
        + (f' pages="{f.pages}"' if f.pages else "")
        + f">\n{f.text}\n</file>"
        for f in files
    ]
    quoted += [f'<note title="{_attribute(n.title)}">\n{n.text}\n</note>' for n in notes]
    body = "\n\n".join(quoted)
    return f'<project name="{_attribute(name)}">\n{FILES_INTRO}\n\n{body}\n</project>'


def compose_system(own: str, project: ProjectContext | None) -> str:
    """The system prompt sent: the project's instructions, then the conversation's own
    prompt, then the project's files and notes."""
    if project is None:
        return own
    pieces = [
        project.instructions.strip(),
        own,
        project_block(project.files, project.notes, project.name),
    ]
    return "\n\n".join(piece for piece in pieces if piece)
