"""Projects over HTTP: the resource, moving conversations, the shared context in the
model's request and in the counts, the cap, deleting without losing a conversation,
search within a project, and export/import."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from foldline.core.attachments import PDF_TYPE as PDF
from foldline.core.messages import assistant, user
from foldline.server.security import MESSAGE_BODY_LIMIT, default_body_limit
from foldline.store import Store
from foldline.testing.sample_files import pdf, png

SPEC = "# Spec\nThe widget must be teal and weigh 42 grams.\n"


def _project(client: TestClient, **body: Any) -> dict[str, Any]:
    reply = client.post("/api/projects", json={"name": "Widget", **body})
    assert reply.status_code == 201, reply.text
    return reply.json()


def _file(
    client: TestClient, project: str, name: str, content: bytes, media: str = "text/markdown"
):  # type: ignore[no-untyped-def]
    return client.post(
        f"/api/projects/{project}/files",
        json={"name": name, "mediaType": media, "data": base64.b64encode(content).decode()},
    )


def _send(client: TestClient, conversation: str, parse_sse: Callable, text: str = "hi") -> list:  # type: ignore[type-arg]
    reply = client.post(f"/api/conversations/{conversation}/messages", json={"content": text})
    assert reply.status_code == 200, reply.text
    events = parse_sse(reply.text)
    assert not [e for e in events if e.name == "error"], events
    return events


def test_create_list_rename_and_move_conversations(client: TestClient) -> None:
    project = _project(client, instructions="Answer in French.")
    assert project["conversationCount"] == 0 and project["files"] == []
    inside = client.post("/api/conversations", json={"projectId": project["id"]}).json()
    assert inside["projectId"] == project["id"]
    outside = client.post("/api/conversations", json={}).json()
    assert outside["projectId"] is None
    assert client.post("/api/conversations", json={"projectId": "f" * 32}).status_code == 404

    listed = client.get("/api/projects").json()["items"]
    assert [(p["name"], p["conversationCount"]) for p in listed] == [("Widget", 1)]
    renamed = client.patch(f"/api/projects/{project['id']}", json={"name": "Gadget"}).json()
    assert renamed["name"] == "Gadget" and renamed["instructions"] == "Answer in French."

    # The list filter: one project's, or those in none.
    def ids(query: str) -> list[str]:
        return [c["id"] for c in client.get(f"/api/conversations?{query}").json()["items"]]

    assert ids(f"projectId={project['id']}") == [inside["id"]]
    assert ids("projectId=none") == [outside["id"]]
    assert client.get("/api/conversations?projectId=" + "e" * 32).status_code == 404

    # Moving in and out by PATCH; leaving projectId out leaves it alone.
    moved = client.patch(
        f"/api/conversations/{outside['id']}", json={"projectId": project["id"]}
    ).json()
    assert moved["projectId"] == project["id"]
    assert (
        client.patch(f"/api/conversations/{outside['id']}", json={"title": "T"}).json()["projectId"]
        == project["id"]
    )
    out = client.patch(f"/api/conversations/{inside['id']}", json={"projectId": None}).json()
    assert out["projectId"] is None
    assert ids(f"projectId={project['id']}") == [outside["id"]]


def test_instructions_files_and_notes_reach_the_model_and_are_counted(
    client: TestClient, store: Store, model: Any, parse_sse: Callable
) -> None:
    project = _project(client, instructions="Always answer in French.")
    assert _file(client, project["id"], "spec.md", SPEC.encode()).status_code == 201
    note = client.post(
        f"/api/projects/{project['id']}/notes",
        json={"title": "Decision", "text": "We ship on Friday."},
    )
    assert note.status_code == 201
    conversation = client.post(
        "/api/conversations",
        json={"projectId": project["id"], "systemPrompt": "You are terse."},
    ).json()["id"]
    _send(client, conversation, parse_sse)

    system = model.calls[-1].system
    # Instructions first, then the conversation's own prompt, then files and notes.
    assert system.index("Always answer in French.") < system.index("You are terse.")
    assert system.index("You are terse.") < system.index('<file name="spec.md"')
    assert "weigh 42 grams" in system and "We ship on Friday." in system

    context = client.get(f"/api/conversations/{conversation}/context").json()
    assert context["system"] == system
    shown = context["project"]
    assert shown["name"] == "Widget" and shown["files"] == ["spec.md"]
    assert shown["notes"] == ["Decision"]
    assert 0 < shown["tokens"] < shown["capTokens"]
    breakdown = context["breakdown"]
    assert breakdown["project"] == shown["tokens"]
    # The project's share is counted once: moved out of `system`, not added on top.
    client.patch(f"/api/conversations/{conversation}", json={"projectId": None})
    alone = client.get(f"/api/conversations/{conversation}/context").json()
    assert alone["project"] is None and alone["breakdown"]["project"] == 0
    assert alone["breakdown"]["system"] == breakdown["system"]
    assert alone["tokens"] < context["tokens"]
    _send(client, conversation, parse_sse)
    assert "Always answer in French." not in model.calls[-1].system


def test_the_projects_default_model_and_settings_apply_under_the_conversations_own(
    client: TestClient,
) -> None:
    project = _project(
        client, model="fake-model", settings={"compaction": {"threshold": 0.6, "target": 0.3}}
    )
    conversation = client.post(
        "/api/conversations",
        json={"projectId": project["id"], "settings": {"compaction": {"threshold": 0.7}}},
    ).json()["id"]
    context = client.get(f"/api/conversations/{conversation}/context").json()
    assert context["model"] == "fake-model"
    assert context["thresholds"]["soft"] == 0.7  # the conversation's own wins
    bad = client.post("/api/projects", json={"name": "x", "settings": {"compaction": {"nope": 1}}})
    assert bad.status_code == 422


def test_a_project_over_its_cap_is_refused_with_a_clear_422(
    client: TestClient, store: Store, model: Any, parse_sse: Callable
) -> None:
    project = _project(client)
    conversation = client.post("/api/conversations", json={"projectId": project["id"]}).json()
    # fake-model reads 31,744 tokens: the cap is a quarter of that.
    big = ("alpha beta gamma delta " * 3000).encode()
    refused = _file(client, project["id"], "big.txt", big, "text/plain")
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "project_over_cap"
    assert "cap" in refused.json()["error"]["message"]
    assert client.get(f"/api/projects/{project['id']}").json()["files"] == []
    # Instructions too long are refused and the old ones kept.
    long = client.patch(f"/api/projects/{project['id']}", json={"instructions": big.decode()})
    assert long.status_code == 422
    assert client.get(f"/api/projects/{project['id']}").json()["instructions"] == ""

    # A file that fits the project's default model but not a conversation's smaller one:
    # the turn is refused before anything is written.
    store.create_project(name="tmp")  # unrelated project, untouched
    fits = _file(client, project["id"], "mid.txt", ("word " * 6000).encode(), "text/plain")
    assert fits.status_code == 201, fits.text
    store.update_project(project["id"], instructions="x " * 4000)  # written behind the cap
    before = len(model.calls)
    reply = client.post(
        f"/api/conversations/{conversation['id']}/messages", json={"content": "hello"}
    )
    assert reply.status_code == 422
    assert reply.json()["error"]["code"] == "project_over_cap"
    assert len(model.calls) == before
    assert store.list_messages(conversation["id"]) == []
    # Moving another conversation into it is refused the same way; it stays where it was.
    other = client.post("/api/conversations", json={}).json()["id"]
    moved = client.patch(f"/api/conversations/{other}", json={"projectId": project["id"]})
    assert moved.status_code == 422
    assert store.get_conversation(other).project_id is None


def _refusal(reply: Any) -> str:
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["code"] == "attachment_refused"
    return reply.json()["error"]["message"]


def test_files_are_checked_as_a_messages_files_and_refused_with_the_rule(
    client: TestClient,
) -> None:
    project = _project(client)["id"]
    # Images: the project block is text in the system prompt, which holds no images.
    message = _refusal(_file(client, project, "photo.png", png(8, 8), "image/png"))
    assert message.startswith("photo.png: a project takes no images")
    assert "system prompt" in message and "attach the image to a message" in message
    # The bytes must be what the type says (magic numbers), as for a message's files.
    message = _refusal(_file(client, project, "fake.pdf", png(8, 8), "application/pdf"))
    assert message == "fake.pdf: declared as application/pdf but holds the bytes of image/png"
    message = _refusal(_file(client, project, "notes.txt", png(8, 8), "text/plain"))
    assert message == "notes.txt: declared as text but holds the bytes of image/png"
    damaged = _refusal(_file(client, project, "broken.pdf", b"%PDF-1.4\nnot a pdf", PDF))
    assert damaged == "broken.pdf: the PDF is damaged and cannot be read"
    long_pdf = pdf([f"page {n}" for n in range(101)])
    assert "101 pages is over the 100 pages" in _refusal(
        _file(client, project, "long.pdf", long_pdf, PDF)
    )
    assert "NUL" in _refusal(_file(client, project, "a.txt", b"ab\x00cd", "text/plain"))
    assert "UTF-8" in _refusal(_file(client, project, "latin.txt", "café".encode("latin-1")))
    message = _refusal(_file(client, project, "a.zip", b"PK\x03\x04", "application/zip"))
    assert message.endswith(
        "not accepted; attach a PDF or a text file (plain text, Markdown, CSV, JSON, code)"
    )
    big_text = b"a" * (2 * 1024 * 1024 + 1)
    assert "over the 2 MB a text file may be" in _refusal(
        _file(client, project, "big.txt", big_text, "text/plain")
    )
    bad = client.post(f"/api/projects/{project}/files", json={"name": "x", "data": "not base64!!"})
    assert "not valid base64" in _refusal(bad)
    # Nothing of any refused file was kept.
    assert client.get(f"/api/projects/{project}").json()["files"] == []

    added = _file(client, project, "data.csv", b"a,b\n1,2\n", "text/csv")
    assert added.status_code == 201
    meta = added.json()
    assert meta["size"] == 8 and len(meta["sha256"]) == 64 and meta["pages"] is None
    assert _file(client, project, "again.csv", b"a,b\n1,2\n", "text/csv").status_code == 409
    download = client.get(f"/api/projects/{project}/files/{meta['id']}")
    assert download.content == b"a,b\n1,2\n"
    assert download.headers["content-type"].startswith("text/plain")
    assert client.delete(f"/api/projects/{project}/files/{meta['id']}").status_code == 204
    assert client.get(f"/api/projects/{project}/files/{meta['id']}").status_code == 404
    # A project file takes the body a message with files takes (32 MB of files in base64).
    assert default_body_limit("POST", f"/api/projects/{project}/files") == MESSAGE_BODY_LIMIT


def test_a_pdf_reaches_the_model_as_its_text_page_by_page_and_is_counted(
    client: TestClient, model: Any, parse_sse: Callable
) -> None:
    project = _project(client)["id"]
    conversation = client.post("/api/conversations", json={"projectId": project}).json()["id"]
    empty = client.get(f"/api/conversations/{conversation}/context").json()
    spec = pdf(["Widget spec", "Colour: teal\nMass: 42 grams"])
    added = _file(client, project, "spec.pdf", spec, PDF)
    assert added.status_code == 201, added.text
    assert (added.json()["pages"], added.json()["size"]) == (2, len(spec))
    _send(client, conversation, parse_sse)

    system = model.calls[-1].system
    assert (
        '<file name="spec.pdf" media-type="application/pdf" pages="2">\n'
        "[page 1]\nWidget spec\n\n[page 2]\nColour: teal\nMass: 42 grams\n</file>"
    ) in system
    # Sent as text in the system prompt only: no file part among the messages.
    assert all("attachment" not in str(m.parts) for m in model.calls[-1].messages)
    # The meter counts the project's share; the PDF's text is part of it.
    context = client.get(f"/api/conversations/{conversation}/context").json()
    assert context["project"]["files"] == ["spec.pdf"]
    assert context["breakdown"]["project"] == context["project"]["tokens"]
    assert context["project"]["tokens"] > (empty["project"]["tokens"] or 0) + 10
    download = client.get(f"/api/projects/{project}/files/{added.json()['id']}")
    assert download.content == spec and download.headers["content-type"] == PDF
    # Search within the project finds the PDF by its text.
    found = client.get(f"/api/projects/{project}/search?q=teal").json()["shared"]
    assert [(h["kind"], h["name"]) for h in found] == [("file", "spec.pdf")]


def test_a_file_of_almost_two_mebibytes_reaches_the_checks(client: TestClient) -> None:
    project = _project(client)["id"]
    # Its base64 is well over the 1 MiB of an ordinary body: it gets through, to be
    # refused by the cap of fake-model's 32k window (not by the body limit).
    almost = b"ab\n" * (1900 * 1024 // 3)
    reply = _file(client, project, "big.txt", almost, "text/plain")
    assert reply.json()["error"]["code"] == "project_over_cap"


def test_notes_edit_and_delete(client: TestClient) -> None:
    project = _project(client)["id"]
    note = client.post(f"/api/projects/{project}/notes", json={"title": "A", "text": "one"}).json()
    edited = client.patch(f"/api/projects/{project}/notes/{note['id']}", json={"text": "two"})
    assert edited.json()["text"] == "two" and edited.json()["title"] == "A"
    assert client.delete(f"/api/projects/{project}/notes/{note['id']}").status_code == 204
    assert client.get(f"/api/projects/{project}").json()["notes"] == []
    assert client.delete(f"/api/projects/{project}/notes/{note['id']}").status_code == 404


def test_deleting_a_project_moves_its_conversations_or_deletes_them_after_confirmation(
    client: TestClient, store: Store
) -> None:
    project = _project(client)["id"]
    kept = []
    for i in range(3):
        conversation = client.post("/api/conversations", json={"projectId": project}).json()["id"]
        store.append_messages(conversation, [user(f"q{i}"), assistant(f"a{i}")])
        kept.append(conversation)
    _file(client, project, "spec.md", SPEC.encode())

    # The default moves them to "no project", with every message.
    gone = client.delete(f"/api/projects/{project}")
    assert gone.json() == {"moved": 3, "deleted": 0}
    assert client.get(f"/api/projects/{project}").status_code == 404
    for conversation in kept:
        record = store.get_conversation(conversation)
        assert record.project_id is None and record.message_count == 2

    # Deleting them too needs the count the person confirmed.
    second = _project(client, name="Second")["id"]
    for conversation in kept[:2]:
        client.patch(f"/api/conversations/{conversation}", json={"projectId": second})
    unconfirmed = client.delete(f"/api/projects/{second}?conversations=delete")
    assert unconfirmed.status_code == 409
    assert "2 conversation" in unconfirmed.json()["error"]["message"]
    wrong = client.delete(f"/api/projects/{second}?conversations=delete&confirmCount=1")
    assert wrong.status_code == 409
    assert [c.id for c in store.list_conversations(project_id=second)] != []
    done = client.delete(f"/api/projects/{second}?conversations=delete&confirmCount=2")
    assert done.json() == {"moved": 0, "deleted": 2}
    assert [c.id for c in store.list_conversations()] == [kept[2]]


def test_search_within_a_project(client: TestClient, store: Store) -> None:
    project = _project(client)["id"]
    inside = client.post("/api/conversations", json={"projectId": project}).json()["id"]
    outside = client.post("/api/conversations", json={}).json()["id"]
    for conversation in (inside, outside):
        store.append_message(conversation, user("the teal walrus"))
    _file(client, project, "spec.md", SPEC.replace("teal", "teal walrus").encode())
    client.post(f"/api/projects/{project}/notes", json={"title": "Walrus", "text": "teal"})
    found = client.get(f"/api/projects/{project}/search?q=walrus").json()
    assert [c["id"] for c in found["conversations"]] == [inside]
    assert found["conversations"][0]["searchHit"]["snippet"]
    assert sorted(h["kind"] for h in found["shared"]) == ["file", "note"]
    assert client.get(f"/api/projects/{project}/search?q=zebra").json()["shared"] == []


def test_a_handoff_stays_in_its_project(
    client: TestClient, store: Store, parse_sse: Callable
) -> None:
    project = _project(client)["id"]
    conversation = client.post("/api/conversations", json={"projectId": project}).json()["id"]
    store.append_messages(conversation, [user("q " * 30), assistant("a " * 30)] * 3)
    reply = client.post(f"/api/conversations/{conversation}/handoff", json={"keepLast": 2})
    assert reply.status_code == 201, reply.text
    assert reply.json()["projectId"] == project


def test_export_and_import_a_project_and_a_conversation_of_one(
    client: TestClient, store: Store
) -> None:
    project = _project(client, instructions="Be exact.", model="fake-model")["id"]
    _file(client, project, "spec.md", SPEC.encode())
    _file(client, project, "loads.pdf", pdf(["Design load 9.6 kN"]), PDF)
    client.post(f"/api/projects/{project}/notes", json={"title": "N", "text": "note text"})
    ids = []
    for i in range(2):
        conversation = client.post(
            "/api/conversations", json={"projectId": project, "title": f"C{i}"}
        ).json()["id"]
        store.append_messages(conversation, [user(f"q{i}"), assistant(f"a{i}")])
        ids.append(conversation)

    exported = client.get(f"/api/projects/{project}/export").json()
    assert exported["format"] == "foldline.project"
    assert len(exported["conversations"]) == 2
    assert "project" not in exported["conversations"][0]

    # Imported here again: the id is taken, so a new project with everything.
    imported = client.post("/api/projects/import", json=exported)
    assert imported.status_code == 201, imported.text
    body = imported.json()
    assert body["id"] != project and body["conversationCount"] == 2
    assert body["instructions"] == "Be exact." and body["model"] == "fake-model"
    assert [(f["name"], f["pages"]) for f in body["files"]] == [("spec.md", None), ("loads.pdf", 1)]
    assert [n["text"] for n in body["notes"]] == ["note text"]
    (pdf_copy,) = store.list_project_files(body["id"], text=True)[1:]
    assert pdf_copy.text == "[page 1]\nDesign load 9.6 kN"
    copies = store.list_conversations(project_id=body["id"])
    assert sorted(c.title for c in copies) == ["C0", "C1"]
    assert all(c.message_count == 2 for c in copies)

    markdown = client.get(f"/api/conversations/{ids[0]}/export?format=markdown").text
    assert "- Project: Widget" in markdown
    # A conversation exported alone carries its project.
    single = client.get(f"/api/conversations/{ids[0]}/export").json()
    assert single["project"]["id"] == project
    assert base64.b64decode(single["project"]["files"][0]["data"]).decode() == SPEC
    # Into this app (the project exists): it joins it.
    joined = client.post("/api/conversations/import", json=single).json()
    assert joined["projectId"] == project
    # Into an app without the project: the project comes with it, whole, under its id;
    # a second conversation of it joins the same project.
    client.delete(f"/api/projects/{project}?conversations=delete&confirmCount=3")
    assert client.get(f"/api/projects/{project}").status_code == 404
    alone = client.post("/api/conversations/import", json=single).json()
    assert alone["projectId"] == project
    restored = client.get(f"/api/projects/{project}").json()
    assert restored["instructions"] == "Be exact."
    assert [f["name"] for f in restored["files"]] == ["spec.md", "loads.pdf"]
    assert store.get_conversation(alone["id"]).message_count == 2
    again = client.post("/api/conversations/import", json=single).json()
    assert again["projectId"] == project
    assert len(client.get("/api/projects").json()["items"]) == 2


def test_an_invalid_project_import_leaves_nothing(client: TestClient, store: Store) -> None:
    project = _project(client)["id"]
    conversation = client.post("/api/conversations", json={"projectId": project}).json()["id"]
    store.append_messages(conversation, [user("q"), assistant("a")])
    exported = client.get(f"/api/projects/{project}/export").json()
    exported["conversations"].append({"format": "foldline.conversation", "formatVersion": 9})
    before_projects = len(client.get("/api/projects").json()["items"])
    before_conversations = len(store.list_conversations())
    reply = client.post("/api/projects/import", json=exported)
    assert reply.status_code == 422
    assert "conversations.1" in reply.json()["error"]["message"]
    assert len(client.get("/api/projects").json()["items"]) == before_projects
    assert len(store.list_conversations()) == before_conversations
    bad_file = json.loads(json.dumps(exported))
    bad_file["conversations"] = []
    bad_file["project"]["files"] = [
        {
            "name": "x.png",
            "mediaType": "image/png",
            "createdAt": "2025-01-01T00:00:00Z",
            "data": base64.b64encode(b"\x89PNG\x00").decode(),
        }
    ]
    refused = client.post("/api/projects/import", json=bad_file)
    assert refused.status_code == 422 and "project.files.0" in refused.json()["error"]["message"]
    assert (
        client.post(
            "/api/projects/import", content=b"{nope", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )


def test_a_project_export_larger_than_an_ordinary_body_imports(
    client: TestClient, store: Store
) -> None:
    project = _project(client)["id"]
    conversation = client.post("/api/conversations", json={"projectId": project}).json()["id"]
    store.append_messages(conversation, [user("w" * 400_000), assistant("v" * 400_000)] * 2)
    exported = client.get(f"/api/projects/{project}/export").content
    assert len(exported) > 1024 * 1024
    reply = client.post(
        "/api/projects/import", content=exported, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 201, reply.text
    (copy,) = store.list_conversations(project_id=reply.json()["id"])
    assert copy.message_count == 4
