"""A project's shared context: the system prompt it composes, its cap, a PDF as text."""

from __future__ import annotations

from foldline.core.projects import (
    ProjectContext,
    ProjectFile,
    ProjectNote,
    compose_system,
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


def test_a_pdf_is_quoted_as_its_text_with_its_page_count() -> None:
    pdf = ProjectFile("spec.pdf", "application/pdf", "[page 1]\nSpan 417 m\n\n[page 2]\nOchre", 2)
    system = compose_system("", ProjectContext("P", "", files=(pdf,)))
    assert (
        '<file name="spec.pdf" media-type="application/pdf" pages="2">\n'
        "[page 1]\nSpan 417 m\n\n[page 2]\nOchre\n</file>"
    ) in system
