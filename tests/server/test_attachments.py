"""Files sent with a message: checked before anything is stored, stored once, served by
their own route, in the model's view, kept or dropped by an edit."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import AttachmentPart
from foldline.store import Store
from foldline.testing import sample_files


@pytest.fixture
def vision(data_dir: Path) -> None:
    config = (data_dir / "config.toml").read_text(encoding="utf-8")
    (data_dir / "config.toml").write_text(
        config.replace('[models."fake-model"]\n', '[models."fake-model"]\nvision = true\n'),
        encoding="utf-8",
    )


def _new(client: TestClient) -> str:
    return client.post("/api/conversations", json={}).json()["id"]


def _file(name: str, media_type: str, data: bytes) -> dict[str, str]:
    return {"name": name, "mediaType": media_type, "dataBase64": sample_files.b64(data)}


PNG = sample_files.png(640, 480)
PDF = sample_files.pdf(["Quarterly report\nRevenue rose", "Second page"])
CODE = b"def main():\n    return 42\n"


def test_a_message_with_an_image_a_pdf_and_a_code_file(
    client: TestClient, model, store: Store, vision
) -> None:
    conversation = _new(client)
    files = [
        _file("chart.png", "image/png", PNG),
        _file("report.pdf", "application/pdf", PDF),
        _file("main.py", "text/x-python", CODE),
    ]
    reply = client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "What do you see?", "attachments": files},
    )
    assert reply.status_code == 200, reply.text

    page = client.get(f"/api/conversations/{conversation}/messages").json()
    parts = page["items"][0]["parts"]
    assert parts[0] == {"kind": "text", "text": "What do you see?"}
    image, pdf, code = parts[1:]
    assert image["name"] == "chart.png" and image["mediaType"] == "image/png"
    assert (image["width"], image["height"], image["size"]) == (640, 480, len(PNG))
    assert pdf["pages"] == 2 and pdf["size"] == len(PDF)
    assert code["size"] == len(CODE)
    # Pages stay light: metadata only, the bytes come from their own route.
    for part in (image, pdf, code):
        assert part["dataBase64"] is None and part["text"] is None
        assert (
            part["sha256"]
            == hashlib.sha256(
                {"chart.png": PNG, "report.pdf": PDF, "main.py": CODE}[part["name"]]
            ).hexdigest()
        )
        served = client.get(f"/api/conversations/{conversation}/attachments/{part['sha256']}")
        assert served.status_code == 200
        assert (
            served.content == {"chart.png": PNG, "report.pdf": PDF, "main.py": CODE}[part["name"]]
        )
    assert (
        client.get(f"/api/conversations/{conversation}/attachments/{image['sha256']}").headers[
            "content-type"
        ]
        == "image/png"
    )
    # A code file is served as plain text, never as something a browser would run.
    assert (
        client.get(f"/api/conversations/{conversation}/attachments/{code['sha256']}")
        .headers["content-type"]
        .startswith("text/plain")
    )

    # The model got the files themselves: an image, the PDF's text (a compatible
    # server), the code as text.
    [request] = [call for call in model.calls if call.tools]
    sent = [p for p in request.messages[0].parts if isinstance(p, AttachmentPart)]
    assert [p.data_base64 for p in sent] == [sample_files.b64(d) for d in (PNG, PDF, CODE)]
    assert sent[1].text is not None and "Revenue rose" in sent[1].text
    assert sent[2].text == CODE.decode()

    # The row holds no bytes; the attachments table holds them once.
    row = (
        store._pool.get()
        .conn.execute(
            "SELECT parts FROM messages WHERE seq = 0 AND conversation_id = ?", (conversation,)
        )
        .fetchone()[0]
    )
    assert sample_files.b64(PNG)[:200] not in row
    assert "Revenue rose" in row  # the PDF's text is kept for search and for text-only models


def test_identical_bytes_are_stored_once(client: TestClient, store: Store, vision) -> None:
    first, second = _new(client), _new(client)
    for conversation in (first, second):
        for name in ("a.png", "copy.png"):
            body = {"content": "x", "attachments": [_file(name, "image/png", PNG)]}
            assert (
                client.post(f"/api/conversations/{conversation}/messages", json=body).status_code
                == 200
            )
    count = store._pool.get().conn.execute("SELECT count(*) FROM attachments").fetchone()[0]
    assert count == 1
    # A file is served only in a conversation that holds it.
    digest = hashlib.sha256(PNG).hexdigest()
    other = _new(client)
    assert client.get(f"/api/conversations/{other}/attachments/{digest}").status_code == 404
    assert client.get(f"/api/conversations/{first}/attachments/{'0' * 64}").status_code == 404
    assert client.get(f"/api/conversations/{first}/attachments/not-a-hash").status_code == 422


@pytest.mark.parametrize(
    ("file", "words"),
    [
        (_file("fake.png", "image/png", b"GIF89a" + b"\x00" * 20), ["fake.png", "image/gif"]),
        (_file("fake.pdf", "application/pdf", PNG), ["fake.pdf", "image/png"]),
        (_file("x.zip", "application/zip", b"PK\x03\x04"), ["x.zip", "not accepted"]),
        (_file("notes.txt", "text/plain", PNG), ["notes.txt", "image/png"]),
        (_file("latin.txt", "text/plain", "café".encode("latin-1")), ["latin.txt", "UTF-8"]),
        (_file("empty.md", "text/markdown", b""), ["empty.md", "empty"]),
        (
            {"name": "bad.png", "mediaType": "image/png", "dataBase64": "***"},
            ["bad.png", "base64"],
        ),
        (_file("huge.png", "image/png", sample_files.png(9000, 10)), ["huge.png", "8000"]),
        (
            _file("long.pdf", "application/pdf", sample_files.pdf(["p"] * 101)),
            ["long.pdf", "101 pages", "100"],
        ),
        (_file("broken.pdf", "application/pdf", b"%PDF-1.4\ngarbage"), ["broken.pdf", "damaged"]),
    ],
)
def test_bad_files_are_refused_and_nothing_is_stored(
    client: TestClient, model, store: Store, vision, file, words
) -> None:
    conversation = _new(client)
    reply = client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "see", "attachments": [_file("ok.py", "text/x-python", CODE), file]},
    )
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "attachment_refused"
    for word in words:
        assert word in error["message"]
    assert client.get(f"/api/conversations/{conversation}/messages").json()["total"] == 0
    assert store._pool.get().conn.execute("SELECT count(*) FROM attachments").fetchone()[0] == 0
    assert model.calls == []


def test_an_image_for_a_model_without_vision_names_the_model_and_the_setting(
    client: TestClient, model
) -> None:
    conversation = _new(client)
    reply = client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "see", "attachments": [_file("chart.png", "image/png", PNG)]},
    )
    assert reply.status_code == 422
    message = reply.json()["error"]["message"]
    assert "fake-model" in message and '[models."fake-model"]' in message and "vision" in message
    # A PDF or a text file is fine without vision: they go as text.
    ok = client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "", "attachments": [_file("report.pdf", "application/pdf", PDF)]},
    )
    assert ok.status_code == 200


def test_a_message_larger_than_the_window_is_refused(client: TestClient, data_dir: Path) -> None:
    config = (data_dir / "config.toml").read_text(encoding="utf-8")
    (data_dir / "config.toml").write_text(
        config.replace("context_window = 32768", "context_window = 4096"), encoding="utf-8"
    )
    conversation = _new(client)
    text = ("All work and no play makes a dull model. " * 400).encode()
    reply = client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "read", "attachments": [_file("long.txt", "text/plain", text)]},
    )
    assert reply.status_code == 422
    assert "tokens" in reply.json()["error"]["message"]
    assert client.get(f"/api/conversations/{conversation}/messages").json()["total"] == 0


def test_files_only_and_empty_messages(client: TestClient) -> None:
    conversation = _new(client)
    path = f"/api/conversations/{conversation}/messages"
    assert client.post(path, json={"content": "", "attachments": []}).status_code == 422
    reply = client.post(path, json={"attachments": [_file("a.md", "text/markdown", b"# A")]})
    assert reply.status_code == 200
    assert client.get(f"/api/conversations/{conversation}").json()["title"] == "a.md"
    too_many = {"content": "x", "attachments": [_file("a.md", "text/markdown", b"# A")] * 21}
    assert client.post(path, json=too_many).status_code == 422


def test_an_edit_keeps_the_files_asked_for_and_adds_new_ones(
    client: TestClient, model, vision
) -> None:
    conversation = _new(client)
    path = f"/api/conversations/{conversation}/messages"
    files = [_file("chart.png", "image/png", PNG), _file("main.py", "text/x-python", CODE)]
    client.post(path, json={"content": "first", "attachments": files})
    first = client.get(path).json()["items"][0]
    keep = [first["parts"][1]["sha256"]]
    reply = client.post(
        f"{path}/{first['id']}/edit",
        json={
            "content": "second",
            "keepAttachments": keep,
            "attachments": [_file("notes.md", "text/markdown", b"# Notes")],
        },
    )
    assert reply.status_code == 200, reply.text
    edited = client.get(path).json()["items"][0]
    assert [p.get("name") for p in edited["parts"]] == [None, "chart.png", "notes.md"]
    # The kept image reaches the model with its bytes although the client did not resend them.
    last = [call for call in model.calls if call.tools][-1]
    image = next(p for p in last.messages[0].parts if isinstance(p, AttachmentPart) and p.width)
    assert base64.b64decode(image.data_base64 or "") == PNG


def test_export_carries_the_bytes_and_import_restores_them(
    client: TestClient, store: Store, vision
) -> None:
    conversation = _new(client)
    files = [
        _file("chart.png", "image/png", PNG),
        _file("report.pdf", "application/pdf", PDF),
        _file("main.py", "text/x-python", CODE),
    ]
    client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "keep these", "attachments": files},
    )
    exported = client.get(f"/api/conversations/{conversation}/export").json()
    parts = exported["messages"][0]["parts"]
    assert [p.get("data_base64") for p in parts[1:]] == [f["dataBase64"] for f in files]

    # Into a fresh database: the bytes come from the export alone.
    store._pool.get().conn.execute("DELETE FROM attachments")
    imported = client.post("/api/conversations/import", json=exported).json()["id"]
    page = client.get(f"/api/conversations/{imported}/messages").json()
    for part, original in zip(page["items"][0]["parts"][1:], (PNG, PDF, CODE), strict=True):
        served = client.get(f"/api/conversations/{imported}/attachments/{part['sha256']}")
        assert served.content == original
    again = client.get(f"/api/conversations/{imported}/export").json()
    assert again["messages"][0]["parts"] == parts

    # An export whose bytes do not match their hash is refused, and nothing is kept.
    tampered = json.loads(json.dumps(exported))
    tampered["messages"][0]["parts"][1]["data_base64"] = sample_files.b64(sample_files.png(2, 2))
    refused = client.post("/api/conversations/import", json=tampered)
    assert refused.status_code in (400, 422)
    assert "sha256" in refused.json()["error"]["message"]


def test_markdown_lists_the_files_and_search_finds_names_and_text(
    client: TestClient, vision
) -> None:
    conversation = _new(client)
    files = [
        _file("chart.png", "image/png", PNG),
        _file("report.pdf", "application/pdf", PDF),
        _file("main.py", "text/x-python", b"def quixotic_helper():\n    pass\n"),
    ]
    client.post(
        f"/api/conversations/{conversation}/messages", json={"content": "x", "attachments": files}
    )
    markdown = client.get(f"/api/conversations/{conversation}/export?format=markdown").text
    assert f"**Attachment** `chart.png` (image/png, {len(PNG):,} bytes, 640×480 px)" in markdown
    assert "`report.pdf` (application/pdf" in markdown and "2 pages" in markdown
    assert "def quixotic_helper" in markdown
    for query in ("chart.png", "quixotic_helper", "Revenue"):
        found = client.get("/api/conversations", params={"q": query}).json()["items"]
        assert [item["id"] for item in found] == [conversation], query


def test_deleting_a_conversation_drops_the_bytes_no_other_one_holds(
    client: TestClient, store: Store, vision
) -> None:
    first, second = _new(client), _new(client)
    shared = _file("chart.png", "image/png", PNG)
    own = _file("main.py", "text/x-python", CODE)
    client.post(
        f"/api/conversations/{first}/messages",
        json={"content": "x", "attachments": [shared, own]},
    )
    client.post(
        f"/api/conversations/{second}/messages", json={"content": "y", "attachments": [shared]}
    )

    def stored() -> set[str]:
        rows = store._pool.get().conn.execute("SELECT sha256 FROM attachments").fetchall()
        return {row[0] for row in rows}

    assert stored() == {hashlib.sha256(PNG).hexdigest(), hashlib.sha256(CODE).hexdigest()}
    assert client.delete(f"/api/conversations/{first}").status_code == 204
    assert stored() == {hashlib.sha256(PNG).hexdigest()}
    digest = hashlib.sha256(PNG).hexdigest()
    assert client.get(f"/api/conversations/{second}/attachments/{digest}").content == PNG
