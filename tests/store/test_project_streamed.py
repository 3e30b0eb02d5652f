"""A project object is read a piece at a time: no single read holds more than one of
its files (a 30 MB project object was once read whole, and took 2 GB)."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from foldline.store import Store
from foldline.store.import_reader import import_stream
from foldline.store.json_stream import JsonReader
from foldline.store.project_export import import_project

T = "2026-01-01T00:00:00Z"
FILE_TEXT = "word " * 40_000  # 200 kB of text, 267 kB of base64


@pytest.fixture
def largest_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The characters of the largest single value the reader decoded (a probe)."""
    largest = [0]
    real_value = JsonReader.value

    def probed(reader: JsonReader) -> Any:
        start = reader._consumed + reader._pos
        value = real_value(reader)
        largest[0] = max(largest[0], reader._consumed + reader._pos - start)
        return value

    monkeypatch.setattr(JsonReader, "value", probed)
    return largest


def _project(files: int, notes: int) -> dict[str, Any]:
    return {
        "id": "shared-project",
        "name": "Shared",
        "instructions": "Be brief.",
        "model": None,
        "settings": {},
        "createdAt": T,
        "updatedAt": T,
        "files": [
            {
                "name": f"f{n}.txt",
                "mediaType": "text/plain",
                "createdAt": T,
                "data": base64.b64encode(f"{n} {FILE_TEXT}".encode()).decode(),
            }
            for n in range(files)
        ],
        "notes": [
            {"title": f"n{n}", "text": "a note", "createdAt": T, "updatedAt": T}
            for n in range(notes)
        ],
    }


def _body(document: dict[str, Any]) -> io.BytesIO:
    return io.BytesIO(json.dumps(document).encode())


def test_a_project_import_reads_one_file_at_a_time(store: Store, largest_read: list[int]) -> None:
    document = {
        "format": "foldline.project",
        "formatVersion": 1,
        "project": _project(files=8, notes=50),
        "conversations": [],
    }
    one_file = len(document["project"]["files"][0]["data"])
    project_id, _ = import_project(store, _body(document))
    assert len(store.list_project_files(project_id)) == 8
    assert len(store.list_project_notes(project_id)) == 50
    assert one_file < largest_read[0] < one_file + 1_000  # not the 2 MB object


def test_a_conversation_export_reads_its_project_one_file_at_a_time(
    store: Store, largest_read: list[int]
) -> None:
    project = _project(files=4, notes=3)
    document = {
        "format": "foldline.conversation",
        "formatVersion": 2,
        "project": project,
        "conversation": {},
    }
    one_file = len(project["files"][0]["data"])
    with pytest.raises(ValueError):  # the empty conversation is refused after the project
        import_stream(store, _body(document))
    assert one_file < largest_read[0] < one_file + 1_000


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"files": {}}, "project.files: Input should be a valid list"),
        ({"notes": [{"title": "t"}]}, "project.notes.0.text: Field required"),
        ({"name": ""}, "project.name"),
        ({"extra": 1}, "project.extra: Extra inputs are not permitted"),
    ],
)
def test_a_project_read_in_pieces_is_checked_like_before(
    store: Store, change: dict[str, Any], message: str
) -> None:
    project = {**_project(files=1, notes=1), **change}
    document = {"format": "foldline.project", "formatVersion": 1, "project": project}
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        import_project(store, _body({**document, "conversations": []}))
    assert store.list_projects() == []
