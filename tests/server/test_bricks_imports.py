"""Forged imports that reached across conversations or stored files no provider takes.

An imported message naming another conversation's sha256 without bytes once got that
conversation's file; an imported image skipped every upload rule, and then every turn of
the conversation was refused. Both are refused now, with nothing stored.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from typing import Any

from fastapi.testclient import TestClient

from foldline.core.messages import Message, TextPart
from foldline.store import Store
from foldline.testing import sample_files
from foldline.uploads import IncomingFile, read_attachment

JSON = {"content-type": "application/json"}


def _with_file(client: TestClient, store: Store, data: bytes, media_type: str) -> str:
    conversation = client.post("/api/conversations", json={"title": "with a file"}).json()["id"]
    part = read_attachment(
        IncomingFile("f", media_type, sample_files.b64(data)), model="m", vision=True
    )
    store.append_messages(conversation, [Message(role="user", parts=(TextPart(text="look"), part))])
    return conversation


def _export(client: TestClient, conversation: str) -> dict[str, Any]:
    exported = client.get(f"/api/conversations/{conversation}/export")
    assert exported.status_code == 200
    return exported.json()


def _import(client: TestClient, document: dict[str, Any]) -> Any:
    return client.post("/api/conversations/import", json=document)


def _file_part(document: dict[str, Any]) -> dict[str, Any]:
    return document["messages"][0]["parts"][1]


def test_an_import_naming_another_conversations_file_gets_nothing(
    client: TestClient, store: Store
) -> None:
    secret = sample_files.png(20, 20, rgb=(9, 9, 9))
    theirs = _with_file(client, store, secret, "image/png")
    document = _export(client, theirs)
    forged = copy.deepcopy(document)
    del _file_part(forged)["data_base64"]  # the hash alone, as a stranger could know it
    imported = _import(client, forged)
    assert imported.status_code == 422, imported.text
    assert "must carry its bytes" in imported.json()["error"]["message"]
    assert client.get("/api/conversations").json()["total"] == 1

    # Bytes paired with another file's hash are refused too.
    other = copy.deepcopy(document)
    _file_part(other)["data_base64"] = sample_files.b64(sample_files.png(21, 21))
    assert _import(client, other).status_code == 422
    # The export itself imports, with its own bytes.
    assert _import(client, document).status_code == 201


def test_an_imported_image_goes_through_every_upload_rule(client: TestClient, store: Store) -> None:
    conversation = _with_file(client, store, sample_files.png(20, 20), "image/png")
    document = _export(client, conversation)
    huge = sample_files.png(9000, 10)  # over the 8000 px a provider takes
    for data, media_type in (
        (huge, "image/png"),
        (sample_files.png(20, 20), "image/jpeg"),  # not what it says it is
        (b"not an image at all", "image/png"),
    ):
        forged = copy.deepcopy(document)
        part = _file_part(forged)
        part["data_base64"] = sample_files.b64(data)
        part["media_type"] = media_type
        part["sha256"] = hashlib.sha256(data).hexdigest()
        imported = _import(client, forged)
        assert imported.status_code == 422, imported.text
    assert client.get("/api/conversations").json()["total"] == 1

    # Forged sizes are replaced by the file's own, so a turn counts it right.
    forged = copy.deepcopy(document)
    _file_part(forged)["width"] = 1
    _file_part(forged)["height"] = 99_999
    imported = _import(client, forged)
    assert imported.status_code == 201, imported.text
    copy_id = imported.json()["id"]
    stored = store.list_messages(copy_id)[0].message.parts[1]
    assert (stored.width, stored.height) == (20, 20)  # type: ignore[union-attr]
    sent = client.post(f"/api/conversations/{copy_id}/messages", json={"content": "and?"})
    assert sent.status_code == 200 and "event: error" not in sent.text
    served = client.get(f"/api/conversations/{copy_id}/attachments/{stored.sha256}")  # type: ignore[union-attr]
    assert served.status_code == 200
    assert served.content == base64.b64decode(_file_part(document)["data_base64"])
