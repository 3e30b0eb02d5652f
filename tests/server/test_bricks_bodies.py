"""Large request bodies never hold the event loop.

A message carrying a 16 MB PDF is 21 MB of JSON. FastAPI parsed it with `json.loads` on
the event loop, and the file's base64 was decoded (twice) and encoded again in single C
calls that hold the GIL for their whole length, so even from a worker thread they held
the loop: another conversation's `GET` waited over half a second. Now a large body is
parsed in a worker thread with its long strings decoded a slice at a time, and base64
is converted a slice at a time, so the loop gets the GIL back between slices. (The time
it saves is measured in `benchmarks/hostile_files_bench.py`; these tests check where
the work happens.)
"""

from __future__ import annotations

import asyncio
import binascii
import hashlib
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from foldline import uploads
from foldline.core import base64_slices
from foldline.server import json_slices
from foldline.testing import sample_files
from foldline.testing.hostile_files import FONT, pdf_from_objects

LARGE = 1024 * 1024
JSON = {"content-type": "application/json"}


def padded_pdf(padding: int) -> bytes:
    """One page of text and an unreferenced stream of `padding` bytes: a large file
    that reads in an instant."""
    text = b"BT /F1 11 Tf 72 720 Td (padded) Tj ET"
    return pdf_from_objects(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            FONT,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
            f"<< /Length {len(text)} >>\nstream\n".encode() + text + b"\nendstream",
            f"<< /Length {padding} >>\nstream\n".encode() + b"x" * padding + b"\nendstream",
        ]
    )


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _message(data: bytes) -> dict[str, Any]:
    file = {"name": "big.pdf", "mediaType": "application/pdf", "dataBase64": sample_files.b64(data)}
    return {"content": "read this", "attachments": [file]}


@pytest.mark.parametrize("path", ["send", "edit", "project file"])
def test_a_large_body_is_parsed_off_the_event_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    sent = client.post(f"/api/conversations/{conversation}/messages", json={"content": "hi"})
    assert sent.status_code == 200, sent.text
    first = client.get(f"/api/conversations/{conversation}/messages").json()["items"][0]["id"]
    project = client.post("/api/projects", json={"name": "P"}).json()["id"]
    targets = {
        "send": f"/api/conversations/{conversation}/messages",
        "edit": f"/api/conversations/{conversation}/messages/{first}/edit",
        "project file": f"/api/projects/{project}/files",
    }
    body = _message(padded_pdf(2 * LARGE))
    if path == "project file":
        file = body["attachments"][0]
        body = {"name": file["name"], "mediaType": file["mediaType"], "data": file["dataBase64"]}

    parsed: list[bool] = []
    whole: list[int] = []
    real_loads, real_sliced = json.loads, json_slices.loads

    def recording_loads(text: str | bytes, *args: Any, **kwargs: Any) -> Any:
        if len(text) > LARGE:
            whole.append(len(text))
        return real_loads(text, *args, **kwargs)

    def recording_sliced(body: bytes) -> Any:
        parsed.append(_on_event_loop())
        return real_sliced(body)

    monkeypatch.setattr(json, "loads", recording_loads)
    monkeypatch.setattr(json_slices, "loads", recording_sliced)
    answer = client.post(targets[path], content=json.dumps(body).encode(), headers=JSON)
    assert answer.status_code in (200, 201), answer.text
    # Parsed once, in a worker thread, and the file's base64 never in one C call.
    assert parsed == [False]
    assert whole == []


def test_invalid_json_in_a_large_body_is_still_a_clear_400(client: TestClient) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    broken = json.dumps(_message(padded_pdf(2 * LARGE)))[:-2].encode()
    answer = client.post(
        f"/api/conversations/{conversation}/messages", content=broken, headers=JSON
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_json"
    assert client.get(f"/api/conversations/{conversation}/messages").json()["total"] == 0


def test_a_large_files_base64_is_converted_a_slice_at_a_time(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    data = padded_pdf(4 * LARGE)
    message = _message(data)
    longest: list[int] = [0]
    real_decode, real_encode = binascii.a2b_base64, binascii.b2a_base64

    def decode(data: Any, *args: Any, **kwargs: Any) -> bytes:
        longest[0] = max(longest[0], len(data))
        return real_decode(data, *args, **kwargs)

    def encode(data: Any, *args: Any, **kwargs: Any) -> bytes:
        longest[0] = max(longest[0], len(data))
        return real_encode(data, *args, **kwargs)

    monkeypatch.setattr(binascii, "a2b_base64", decode)
    monkeypatch.setattr(binascii, "b2a_base64", encode)
    sent = client.post(f"/api/conversations/{conversation}/messages", json=message)
    assert sent.status_code == 200, sent.text
    assert "event: error" not in sent.text
    assert 0 < longest[0] <= base64_slices.SLICE_CHARS
    # And the file is stored whole.
    messages = client.get(f"/api/conversations/{conversation}/messages").json()["items"]
    assert messages[0]["parts"][-1]["size"] == len(data)


def test_a_large_pdf_is_hashed_off_the_event_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    hashed_on_loop: list[bool] = []
    real_sha256 = hashlib.sha256

    def recording_sha256(data: bytes = b"", **kwargs: Any) -> Any:
        if len(data) > LARGE:
            hashed_on_loop.append(_on_event_loop())
        return real_sha256(data, **kwargs)

    monkeypatch.setattr(uploads.hashlib, "sha256", recording_sha256)
    sent = client.post(
        f"/api/conversations/{conversation}/messages", json=_message(padded_pdf(2 * LARGE))
    )
    assert sent.status_code == 200, sent.text
    assert "event: error" not in sent.text
    assert hashed_on_loop and not any(hashed_on_loop)
