"""Hostile files that once froze or broke the app: PDFs that inflate, with tens of
thousands of pages, a page tree thousands deep, thousands of dangling references.

Each is refused with a 4xx, or accepted and then served, on every path that takes a PDF
(a send, an edit, a project's files); nothing is stored half; the event loop is never
held while one is read, so another conversation answers meanwhile; Stop during the read
answers at once and stores nothing; and pypdf's warnings do not flood the log.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from foldline.chat.service import ChatService
from foldline.core.attachments import AttachmentRefused
from foldline.pdf_reading import parse_pdf
from foldline.store import Store
from foldline.testing import hostile_files, sample_files

PDF = "application/pdf"

HOSTILE_PDFS: dict[str, Callable[[], bytes]] = {
    "inflating text": hostile_files.inflating_pdf,
    # 100,000 pages froze the app for 28 s; 20,000 take a few seconds to read.
    "20,000 pages": lambda: hostile_files.many_pages_pdf(20_000),
    "page tree 5,000 deep": hostile_files.deep_page_tree_pdf,
    "1,500 dangling references": lambda: hostile_files.warning_pdf(1_500),
}


def _file(data: bytes, name: str = "hostile.pdf") -> dict[str, str]:
    return {"name": name, "mediaType": PDF, "dataBase64": sample_files.b64(data)}


def _send(client: TestClient, conversation: str, data: bytes) -> Any:
    return client.post(
        f"/api/conversations/{conversation}/messages",
        json={"content": "read this", "attachments": [_file(data)]},
    )


@pytest.mark.parametrize("make", HOSTILE_PDFS.values(), ids=HOSTILE_PDFS.keys())
def test_a_hostile_pdf_is_refused_or_served_on_every_path(
    client: TestClient, store: Store, make: Callable[[], bytes]
) -> None:
    data = make()
    conversation = client.post("/api/conversations", json={}).json()["id"]
    sent = _send(client, conversation, data)
    assert sent.status_code in (200, 422), sent.text
    if sent.status_code == 422:
        assert "hostile.pdf" in sent.json()["error"]["message"]
        assert store.list_messages(conversation) == []
    else:
        assert "event: error" not in sent.text
        messages = client.get(f"/api/conversations/{conversation}/messages").json()["items"]
        assert len(messages) == 2
    assert client.get(f"/api/conversations/{conversation}/export").status_code == 200

    # The edit path and a project's files take the same PDFs, by the same rules.
    first = client.post("/api/conversations", json={}).json()["id"]
    client.post(f"/api/conversations/{first}/messages", json={"content": "hello"})
    question = store.list_messages(first)[0].id
    edited = client.post(
        f"/api/conversations/{first}/messages/{question}/edit",
        json={"content": "read this", "attachments": [_file(data)]},
    )
    assert edited.status_code == sent.status_code, edited.text
    project = client.post("/api/projects", json={"name": "p"}).json()["id"]
    added = client.post(
        f"/api/projects/{project}/files",
        json={"name": "hostile.pdf", "mediaType": PDF, "data": sample_files.b64(data)},
    )
    assert added.status_code in (201, 422), added.text
    assert (added.status_code == 422) == (sent.status_code == 422)
    files = client.get(f"/api/projects/{project}").json()["files"]
    assert len(files) == (0 if added.status_code == 422 else 1)


def test_a_pdf_deeper_than_pypdf_allows_is_a_422_not_a_500(client: TestClient) -> None:
    # pypdf's LimitReachedError is not a PdfReadError: it once escaped as a 500.
    conversation = client.post("/api/conversations", json={}).json()["id"]
    sent = _send(client, conversation, hostile_files.deep_page_tree_pdf(150))
    assert sent.status_code == 422, sent.text
    assert "nested too deep" in sent.json()["error"]["message"]


def test_the_caps_hold_while_a_pdf_is_read() -> None:
    # The inflating PDF holds gigabytes of text; reading it stops at the caps instead.
    inflated = parse_pdf("x.pdf", hostile_files.inflating_pdf())
    assert inflated.pages == 20 and len(inflated.text) < 10_000
    many = parse_pdf("x.pdf", hostile_files.many_pages_pdf(5_000))
    assert many.pages == 101 and many.text == ""  # then refused by the page limit
    # Text past the cap stops the reading, whole pages or not.
    wordy = sample_files.pdf([("word " * 6_000 + "\n") * 5 for _ in range(80)])
    with pytest.raises(AttachmentRefused, match="characters a PDF may hold"):
        parse_pdf("wordy.pdf", wordy)


def test_a_hostile_pdf_writes_one_line_to_the_log_not_thousands(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    with caplog.at_level(logging.INFO):
        sent = _send(client, conversation, hostile_files.warning_pdf(1_500))
    assert sent.status_code == 200, sent.text
    pypdf_lines = [r for r in caplog.records if r.name.startswith("pypdf")]
    assert pypdf_lines == []
    summed = [r.getMessage() for r in caplog.records if "warnings reading" in r.getMessage()]
    assert len(summed) == 1 and summed[0].endswith("warnings reading hostile.pdf")
    assert int(summed[0].split()[2]) >= 1_500  # one per dangling reference, at least


def _in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    thread.start()
    return thread, answers


def _wait_for_reading(chat_service: ChatService, conversation: str) -> None:
    """Until the conversation's files are being read (a turn of kind "reading"); an
    older version, which read on the event loop, never shows one: then after a while."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        handle = chat_service.running.get(conversation)
        if handle is not None and handle.kind == "reading":
            return
        time.sleep(0.01)


def test_other_conversations_answer_while_a_pdf_is_read(
    client: TestClient, chat_service: ChatService
) -> None:
    other = client.post("/api/conversations", json={"title": "other"}).json()["id"]
    conversation = client.post("/api/conversations", json={}).json()["id"]
    thread, answers = _in_thread(
        lambda: _send(client, conversation, hostile_files.many_pages_pdf(20_000))
    )
    _wait_for_reading(chat_service, conversation)
    assert client.get(f"/api/conversations/{other}").status_code == 200
    assert client.get("/api/conversations").status_code == 200
    # Both answered while the PDF was still being read.
    assert thread.is_alive() and answers == []
    thread.join(60)
    assert answers[0].status_code == 422, answers[0].text
    assert "100 pages" in answers[0].json()["error"]["message"]


def test_stop_during_a_pdf_read_answers_at_once_and_stores_nothing(
    client: TestClient, chat_service: ChatService, store: Store, parse_sse: Any
) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    thread, answers = _in_thread(
        lambda: _send(client, conversation, hostile_files.many_pages_pdf(20_000))
    )
    _wait_for_reading(chat_service, conversation)
    # A second send waits for the first, as during a turn.
    busy = client.post(f"/api/conversations/{conversation}/messages", json={"content": "x"})
    assert busy.status_code == 409, busy.text
    stopped = client.post(f"/api/conversations/{conversation}/cancel")
    assert stopped.json() == {"cancelled": True}
    thread.join(60)
    assert answers[0].status_code == 200, answers[0].text
    events = parse_sse(answers[0].text)
    assert [e.name for e in events] == ["done"] and events[0].data == {"cancelled": True}
    assert store.list_messages(conversation) == []
    assert not chat_service.is_running(conversation)
    # And the conversation goes on.
    again = client.post(f"/api/conversations/{conversation}/messages", json={"content": "hi"})
    assert again.status_code == 200 and "event: error" not in again.text
