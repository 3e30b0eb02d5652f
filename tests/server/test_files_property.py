"""Hostile files, generated: whatever a file holds, a message with it is refused with a
4xx, or the conversation it lands in works: every read, a turn, a fold, an export and a
re-import. The same for a project export changed at random. Never a 500.

The files start from real ones (a PNG, a PDF, a text file) and are changed at random:
bytes flipped, cut short, repeated, a declared type that is not theirs, a name with odd
characters; the project exports have fields, files and ids changed.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from foldline.testing import hostile_files, sample_files

JSON = {"content-type": "application/json"}

SEEDS = {
    "png": (sample_files.png(30, 20), "image/png"),
    "pdf": (sample_files.pdf(["page one", "page two"]), "application/pdf"),
    "deep pdf": (hostile_files.deep_page_tree_pdf(70), "application/pdf"),
    "text": (b"hello, world\n" * 20, "text/plain"),
}
TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"]


@st.composite
def hostile_file(draw: st.DrawFn) -> tuple[str, str, bytes]:
    data, media_type = SEEDS[draw(st.sampled_from(sorted(SEEDS)))]
    data = bytearray(data)
    for _ in range(draw(st.integers(0, 4))):
        how = draw(st.sampled_from(["flip", "cut", "repeat", "insert"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif how == "cut":
            del data[at:]
        elif how == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 64))] * draw(st.integers(1, 50))
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=32))
    if draw(st.booleans()):
        media_type = draw(st.sampled_from(TYPES))
    name = draw(st.sampled_from(["f.png", "f.pdf", "f.txt", "../x", "a/b.pdf", "ü.md", ""]))
    return name, media_type, bytes(data)


def _works(client: TestClient, conversation: str) -> None:
    base = f"/api/conversations/{conversation}"
    for path in ("", "/messages", "/context", "/compactions", "/compactions/preview"):
        answer = client.get(base + path)
        assert answer.status_code == 200, (path, answer.text)
    for message in client.get(f"{base}/messages").json()["items"]:
        for part in message["parts"]:
            if part["kind"] == "attachment" and part.get("sha256"):
                served = client.get(f"{base}/attachments/{part['sha256']}")
                assert served.status_code == 200
    sent = client.post(f"{base}/messages", json={"content": "and now?"})
    assert sent.status_code == 200 and "event: error" not in sent.text, sent.text[-500:]
    folded = client.post(f"{base}/compact", json={})
    assert folded.status_code == 200 and "event: error" not in folded.text, folded.text[-500:]
    exported = client.get(f"{base}/export")
    assert exported.status_code == 200
    again = client.post("/api/conversations/import", content=exported.content, headers=JSON)
    assert again.status_code == 201, again.text


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(hostile_file(), min_size=1, max_size=2))
def test_a_hostile_file_is_refused_or_leaves_everything_working(
    client: TestClient, files: list[tuple[str, str, bytes]]
) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    attachments = [
        {"name": name, "mediaType": media_type, "dataBase64": base64.b64encode(data).decode()}
        for name, media_type, data in files
    ]
    sent = client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "look", "attachments": attachments},
    )
    assert sent.status_code in (200, 400, 413, 422), sent.text
    event(f"status {sent.status_code}")
    if sent.status_code == 200:
        assert "event: error" not in sent.text, sent.text[-500:]
        _works(client, conversation)
    else:
        assert client.get(f"/api/conversations/{conversation}").json()["messageCount"] == 0


BASE_PROJECT: dict[int, dict[str, Any]] = {}

PROJECT_CHANGES = st.one_of(
    st.tuples(st.just("id"), st.sampled_from(["a/b", "..", "x" * 65, "", "ok-id_1", "é"])),
    st.tuples(st.just("file"), hostile_file()),
    st.tuples(st.just("name"), st.sampled_from(["", "x" * 300, "\ud800", "fine"])),
    st.tuples(st.just("settings"), st.sampled_from([{"compaction": {"nope": 1}}, {}, []])),
    st.tuples(st.just("drop"), st.sampled_from(["project", "conversations", "format"])),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(PROJECT_CHANGES, min_size=1, max_size=3))
def test_a_forged_project_import_is_refused_or_leaves_everything_working(
    client: TestClient, changes: list[tuple[str, Any]]
) -> None:
    if id(client) not in BASE_PROJECT:
        BASE_PROJECT.clear()
        project = client.post("/api/projects", json={"name": "P"}).json()["id"]
        client.post(
            f"/api/projects/{project}/files",
            json={"name": "a.md", "mediaType": "text/markdown", "data": "IyBoaQ=="},
        )
        conversation = client.post("/api/conversations", json={"projectId": project}).json()
        client.post(f"/api/conversations/{conversation['id']}/messages", json={"content": "q"})
        BASE_PROJECT[id(client)] = client.get(f"/api/projects/{project}/export").json()
    document = copy.deepcopy(BASE_PROJECT[id(client)])
    for what, value in changes:
        if what == "drop":
            document.pop(value, None)
        elif what == "file":
            name, media_type, data = value
            # An earlier change may have dropped the project object itself: the file goes
            # into a fresh one, which the import must refuse or take as well.
            project_object = document.setdefault("project", {})
            project_object.setdefault("files", []).append(
                {
                    "name": name or "f",
                    "mediaType": media_type,
                    "createdAt": "2026-01-01T00:00:00Z",
                    "data": base64.b64encode(data).decode(),
                }
            )
        elif "project" in document:
            document["project"][what] = value
    before = len(client.get("/api/projects").json()["items"])
    body = json.dumps(document).replace('"\\ud800"', '"\\ud800"')
    imported = client.post("/api/projects/import", content=body, headers=JSON)
    assert imported.status_code in (201, 400, 422), imported.text
    event(f"status {imported.status_code}")
    if imported.status_code != 201:
        assert len(client.get("/api/projects").json()["items"]) == before
        return
    project = imported.json()["id"]
    assert client.get(f"/api/projects/{project}").status_code == 200
    for conversation in client.get("/api/conversations", params={"projectId": project}).json()[
        "items"
    ]:
        _works(client, conversation["id"])
    exported = client.get(f"/api/projects/{project}/export")
    assert exported.status_code == 200
    again = client.post("/api/projects/import", content=exported.content, headers=JSON)
    assert again.status_code == 201, again.text
    assert client.delete(f"/api/projects/{project}").status_code in (200, 204)
