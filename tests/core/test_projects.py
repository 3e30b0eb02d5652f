"""A project's shared context: the system prompt it composes, its cap, text files only."""

from __future__ import annotations

import pytest

from foldline.core.projects import (
    NotTextFile,
    ProjectContext,
    ProjectFile,
    ProjectNote,
    compose_system,
    file_text,
    project_cap,
)


def test_instructions_first_then_the_own_prompt_then_files_and_notes() -> None:
    shared = ProjectContext(
        name='A "quoted" <name>',
        instructions="  Use metric units.  ",
        files=(ProjectFile("a.md", "text/markdown", "alpha"),),
        notes=(ProjectNote("N", "nu"),),
    )
    system = compose_system("Own prompt.", shared)
    assert system.startswith("Use metric units.\n\nOwn prompt.\n\n<project ")
    assert system.index("alpha") < system.index("nu")
    assert '<project name="A &quot;quoted&quot; &lt;name>">' in system
    assert '<file name="a.md" media-type="text/markdown">\nalpha\n</file>' in system
    assert system.endswith("</project>")
    # Nothing but the own prompt without a project; no empty pieces with an empty one.
    assert compose_system("Own prompt.", None) == "Own prompt."
    assert compose_system("Own prompt.", ProjectContext("P", "")) == "Own prompt."


def test_the_cap_is_a_quarter_of_the_input_budget() -> None:
    assert project_cap(100_000) == 25_000
    assert project_cap(None) > 0


@pytest.mark.parametrize(
    ("name", "media_type", "content"),
    [
        ("a.png", "image/png", b"\x89PNG\r\n\x1a\n"),
        ("a.pdf", "application/pdf", b"%PDF-1.7"),
        ("a.txt", "text/plain", b"\xff\xfe\x00a"),
        ("a.txt", "text/plain", b"a\x00b"),
    ],
)
def test_only_text_files_are_accepted(name: str, media_type: str, content: bytes) -> None:
    with pytest.raises(NotTextFile):
        file_text(name, media_type, content)


def test_text_files_decode_with_their_bom_removed() -> None:
    assert file_text("a.csv", "text/csv; charset=utf-8", "\ufeffx,y".encode()) == "x,y"
    assert file_text("a.json", "application/json", b"{}") == "{}"
    assert file_text("a.py", "", b"print(1)") == "print(1)"
