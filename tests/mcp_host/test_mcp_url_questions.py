"""A server's URL question opens only web pages.

URL-mode questions once handed `javascript:`, `file:`, `data:`, `vbscript:`,
`ms-settings:`, UNC and `smb:` addresses to the system's URL opener when the person
accepted. Such a question is now declined without being shown, and the opener itself
refuses anything but http(s), whoever calls it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import mcp_types
import pytest

from foldline.mcp import elicitation
from foldline.mcp.elicitation import Answer, is_web_page, open_web_page
from foldline.mcp.interaction import ask_person

HOSTILE = [
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    "file:///etc/passwd",
    "file://server/share/x.exe",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "ms-settings:privacy",
    "\\\\server\\share\\run.exe",
    "smb://server/share",
    "http:\\\\server\\share",
    "https://",
    "http://exa mple.com",
    "https://example.com/\nfile:///x",
]


@dataclass
class _Running:
    conversation_id: str = "c"
    call_id: str = "call"
    answers: list[str] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)

    def emit(self, event: Any) -> None:
        self.events.append(event)


class _Elicitations:
    def __init__(self) -> None:
        self.asked: list[Any] = []

    def ask(self, pending: Any) -> Any:
        self.asked.append(pending)
        return pending

    async def wait(self, pending: Any) -> Answer:
        return Answer("accept")  # the person clicks "Open in browser"


@dataclass
class _Calls:
    running: _Running = field(default_factory=_Running)
    elicitations: _Elicitations = field(default_factory=_Elicitations)
    opened: list[str] = field(default_factory=list)

    def newest(self, server: str) -> _Running:
        return self.running

    def open_url(self, url: str) -> None:
        self.opened.append(url)


def _ask(calls: _Calls, url: str) -> Any:
    params = mcp_types.ElicitRequestURLParams(
        mode="url", message="Sign in, please", url=url, elicitationId="e1"
    )
    return asyncio.run(ask_person(calls, "srv", params))  # type: ignore[arg-type]


@pytest.mark.parametrize("url", HOSTILE)
def test_a_question_to_open_what_is_not_a_web_page_is_declined_unasked(url: str) -> None:
    calls = _Calls()
    result = _ask(calls, url)
    assert result.action == "decline"
    assert calls.opened == [] and calls.elicitations.asked == []
    assert "not a web page" in calls.running.answers[0]
    assert not is_web_page(url)


def test_a_web_page_is_asked_about_and_opened_on_yes() -> None:
    calls = _Calls()
    result = _ask(calls, "https://example.com/sign-in?x=1")
    assert result.action == "accept"
    assert calls.opened == ["https://example.com/sign-in?x=1"]


@pytest.mark.parametrize("url", HOSTILE)
def test_the_opener_refuses_anything_but_web_pages(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(elicitation.webbrowser, "open", lambda u: opened.append(u) or True)
    assert open_web_page(url) is False and opened == []
    assert open_web_page("http://localhost:8080/x") is True
    assert opened == ["http://localhost:8080/x"]
