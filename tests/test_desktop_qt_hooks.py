"""Downloads get a Save dialog, the open conversation is read back, requests are seen."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

from foldline_desktop.qt_hooks import (
    READ_CURRENT_CONVERSATION,
    conversation_from_storage,
    handle_download,
    safe_file_name,
)
from foldline_desktop.request_log import RequestLog, SeenRequest

REPO = Path(__file__).resolve().parents[1]


class FakeDownload:
    """Stands in for QWebEngineDownloadRequest and records what the hook did to it."""

    def __init__(self, suggested: str) -> None:
        self.suggested = suggested
        self.directory: str | None = None
        self.file_name: str | None = None
        self.outcome: str | None = None

    def suggestedFileName(self) -> str:
        return self.suggested

    def setDownloadDirectory(self, directory: str) -> None:
        self.directory = directory

    def setDownloadFileName(self, name: str) -> None:
        self.file_name = name

    def accept(self) -> None:
        self.outcome = "accepted"

    def cancel(self) -> None:
        self.outcome = "cancelled"


def test_a_download_goes_where_the_user_chose(tmp_path: Path) -> None:
    asked: list[str] = []
    download = FakeDownload("Long-chat.md")
    target = tmp_path / "exports" / "mine.md"

    def ask(name: str) -> Path:
        asked.append(name)
        return target

    assert handle_download(download, ask) == target
    assert asked == ["Long-chat.md"]
    assert (download.directory, download.file_name, download.outcome) == (
        str(tmp_path / "exports"),
        "mine.md",
        "accepted",
    )


def test_cancelling_the_dialog_cancels_the_download() -> None:
    download = FakeDownload("x.json")
    assert handle_download(download, lambda name: None) is None
    assert download.outcome == "cancelled"
    assert download.directory is None


@pytest.mark.parametrize(
    ("suggested", "offered"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\export.json", "export.json"),
        ("", "foldline-export"),
        ("a\x00b.json", "ab.json"),
    ],
)
def test_the_page_cannot_choose_the_directory(suggested: str, offered: str) -> None:
    assert safe_file_name(suggested) == offered


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("c_01J9ZK", "c_01J9ZK"),
        (None, None),
        ("", None),
        ("x" * 500, None),
        ("line\nbreak", None),
        (42, None),
    ],
)
def test_conversation_read_from_the_page_is_validated(stored: object, expected: str | None) -> None:
    assert conversation_from_storage(stored) == expected


def test_the_key_read_is_the_one_the_ui_writes() -> None:
    # If the UI renames its localStorage key, the shell silently stops reopening the last
    # conversation; this keeps the two in step.
    opening_js = (REPO / "frontend" / "js" / "opening.js").read_text(encoding="utf-8")
    key = READ_CURRENT_CONVERSATION.split("(")[1].rstrip(")").strip("'\"")
    assert f'CURRENT_KEY = "{key}"' in opening_js
    # And the UI reads `c` from the fragment, which the shell uses to reopen it.
    assert '.get("c")' in opening_js


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/api/conversations")
    def conversations(q: str = "") -> list[str]:
        return []

    @app.get("/boom", response_class=PlainTextResponse)
    def boom() -> str:
        raise RuntimeError("broken route")

    return app


async def test_the_request_log_keeps_method_path_and_status_but_no_query() -> None:
    log = RequestLog(_app())
    transport = httpx2.ASGITransport(app=log, raise_app_exceptions=False)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        await client.get("/api/conversations", params={"q": "my private search"})
        await client.get("/missing")
        await client.get("/boom")
    assert log.recent() == [
        SeenRequest("GET", "/api/conversations", 200),
        SeenRequest("GET", "/missing", 404),
        SeenRequest("GET", "/boom", 500),
    ]


async def test_the_request_log_forgets_the_oldest() -> None:
    log = RequestLog(_app(), size=2)
    transport = httpx2.ASGITransport(app=log)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        for _ in range(3):
            await client.get("/missing")
        await client.get("/api/conversations")
    assert [seen.path for seen in log.recent()] == ["/missing", "/api/conversations"]
