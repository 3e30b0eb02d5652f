"""Projects in the store: 50 conversations sorted into 5 projects, moves, deleting a
project without losing a conversation, files and notes, hand-offs and imports."""

from __future__ import annotations

import pytest

from foldline.core.messages import assistant, user
from foldline.store import NotFound, Store
from foldline.store.projects import DuplicateFile
from foldline.testing.sample_files import pdf, project_file


def test_fifty_conversations_in_five_projects_and_nothing_lost(store: Store) -> None:
    projects = [store.create_project(name=f"P{n}") for n in range(5)]
    conversations = []
    for n in range(50):
        conversation = store.create_conversation(title=f"C{n}")
        store.append_messages(conversation.id, [user(f"q{n}"), assistant(f"a{n}")])
        store.move_conversation(conversation.id, projects[n % 5].id)
        conversations.append(conversation.id)
    assert [p.conversation_count for p in store.list_projects()] == [10] * 5
    for n, project in enumerate(projects):
        listed = {c.id for c in store.list_conversations(project_id=project.id)}
        assert listed == set(conversations[n::5])
    assert store.list_conversations(no_project=True) == []
    # Moving keeps the history as it was.
    store.move_conversation(conversations[0], projects[4].id)
    assert store.get_conversation(conversations[0]).message_count == 2
    assert store.list_messages(conversations[0])[1].message.text == "a0"

    # Deleting a project moves its conversations to no project, whole.
    assert store.delete_project(projects[1].id) == 10
    with pytest.raises(NotFound):
        store.get_project(projects[1].id)
    orphans = store.list_conversations(no_project=True)
    assert {c.id for c in orphans} == set(conversations[1::5])
    assert all(c.message_count == 2 for c in orphans)
    assert len(store.list_conversations()) == 50


def test_a_move_into_an_unknown_project_is_refused(store: Store) -> None:
    conversation = store.create_conversation()
    with pytest.raises(NotFound):
        store.move_conversation(conversation.id, "f" * 32)
    with pytest.raises(NotFound):
        store.create_conversation(project_id="f" * 32)
    with pytest.raises(NotFound):
        store.move_conversation("e" * 32, None)
    assert store.get_conversation(conversation.id).project_id is None


def test_files_and_notes(store: Store) -> None:
    project = store.create_project(name="P", instructions="Be brief.", model="m")
    first = store.add_project_file(project.id, project_file("a.md", "text/markdown", b"# A\n"))
    assert (first.size, len(first.sha256)) == (4, 64)
    with pytest.raises(DuplicateFile):
        store.add_project_file(project.id, project_file("copy.md", "text/markdown", b"# A\n"))
    store.add_project_file(project.id, project_file("b.csv", "text/csv", b"x,y\n"))
    spec = pdf(["Span 417 metres", "Deck ochre"])
    store.add_project_file(project.id, project_file("spec.pdf", "application/pdf", spec))
    assert [f.name for f in store.list_project_files(project.id)] == ["a.md", "b.csv", "spec.pdf"]
    assert store.list_project_files(project.id)[0].content is None
    assert store.list_project_files(project.id)[0].text is None
    # A PDF keeps its bytes for download and its text, page by page, for the model.
    *_, stored = store.list_project_files(project.id, text=True, content=True)
    assert (stored.pages, stored.size, stored.content) == (2, len(spec), spec)
    assert stored.text == "[page 1]\nSpan 417 metres\n\n[page 2]\nDeck ochre"
    assert store.get_project_file(project.id, first.id).content == b"# A\n"
    other = store.create_project(name="Other")
    with pytest.raises(NotFound):
        store.get_project_file(other.id, first.id)
    note = store.add_project_note(project.id, "T", "text")
    edited = store.update_project_note(project.id, note.id, title=None, text="new")
    assert (edited.title, edited.text) == ("T", "new")
    store.delete_project_file(project.id, first.id)
    store.delete_project_note(project.id, note.id)
    assert [f.name for f in store.list_project_files(project.id)] == ["b.csv", "spec.pdf"]
    assert store.list_project_notes(project.id) == []
    updated = store.update_project(project.id, clear_model=True)
    assert updated.model is None and updated.instructions == "Be brief."
    # Deleting the project deletes its files and notes.
    store.add_project_note(project.id, "T", "text")
    store.delete_project(project.id)
    assert store.list_project_files(project.id) == []
    assert store.list_project_notes(project.id) == []


def test_a_handoff_and_a_restored_conversation_keep_their_project(store: Store) -> None:
    project = store.create_project(name="P")
    origin = store.create_conversation(project_id=project.id)
    records = store.append_messages(origin.id, [user("q"), assistant("a")])
    copy = store.create_handoff(
        store.get_conversation(origin.id), records[-1].id, records, None, {}
    )
    assert copy.project_id == project.id
    restored = store.restore_conversation(store.get_conversation(origin.id), records, [])
    assert store.get_conversation(restored.id).project_id == project.id
