"""Browser fixtures: a real Foldline server with a fake provider, and Chromium on it.

Every test gets a fresh data directory and its own in-process server
(`create_app` + `start_server_in_thread`, exactly what `foldline serve` runs), configured
with one OpenAI-compatible provider that is `FakeProviderServer`: the real `openai` SDK
talks to it over loopback, and its `ScriptedModel` echoes the user's text unless a test
scripts other answers, and answers summary requests with a structured summary.

The browser is Debian's Chromium (`/usr/bin/chromium`; `playwright install` cannot run
here). Pages keep the server's strict Content-Security-Policy (no `bypass_csp`), so a UI
that needed inline script or eval would fail these tests; CSP violations and page errors
are collected and fail the test that caused them.

Helpers reach the tests through fixtures (`ui`, `foldline`), so test modules import
nothing from each other or from this file.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keyring
import pytest
from keyring.backends import fail
from playwright.sync_api import Page, expect

from foldline.server.app import create_app
from foldline.server.local_servers import LocalServerTarget
from foldline.server.routes.settings import get_local_targets
from foldline.server.runner import RunningServer, start_server_in_thread
from foldline.testing import (
    DEFAULT_LIMITS,
    FakeProviderServer,
    ScriptedModel,
    structured_summary,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKEN = "e2e-token-0123456789abcdefghijklmnopqrstuvwxyz"
MODEL = "fake-model"
REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"

# A small window so a few long messages reach the fold threshold: the budget is
# 4000 - 500 = 3500 tokens and the automatic fold starts at `threshold` (80%: 2800).
CONFIG_TEMPLATE = """\
[defaults]
model = "{model}"

[providers.fake]
kind = "openai-compatible"
base_url = "{base_url}"

[models."{model}"]
provider = "fake"
context_window = 4000
max_output_tokens = 500

[compaction]
keep_recent_tokens = 300
# A title is made by a model call of its own, which would take scripted answers
# (test_ui_titles.py turns it on).
auto_title = false
"""

# The first turn of a session loads the SDK and the tokenizer, which takes seconds on a
# busy 2-core machine; assertions wait for state, so a longer ceiling costs nothing.
expect.set_options(timeout=15_000)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/test_ui" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


PROVIDER_ENVIRONMENT = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture(autouse=True)
def _own_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test's API keys stay in its own data directory's 0600 file.

    The servers run in this process, so a key one test saves would otherwise reach the
    next one: keyring picks its backend once per process, and with a test keyring class
    loaded (any test module importing one) that backend is one in-memory keyring shared by
    every test. A key typed in onboarding then made "anthropic" configured for the tests
    after it. No keyring (as on a machine without one) sends keys to the data directory,
    and none of the person's own keys or provider addresses from the environment leak in;
    a test that wants a keyring or a variable sets its own."""
    for name in PROVIDER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    original = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(original)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium is required for the UI tests: install Debian's `chromium` ({CHROMIUM})"
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {
        **browser_context_args,
        "viewport": {"width": 1280, "height": 800},
        "accept_downloads": True,
        "color_scheme": "light",
    }


@pytest.fixture(scope="session")
def fake_provider() -> Iterator[FakeProviderServer]:
    """One fake provider for the session; each test resets its script and records."""
    script = ScriptedModel(when_empty="echo", summaries=structured_summary)
    # Naming the model makes it appear in the fake's /v1/models, which onboarding lists.
    with FakeProviderServer(script, models={MODEL: DEFAULT_LIMITS}) as server:
        yield server


@dataclass
class Foldline:
    """A running Foldline server for one test, and a small API client for setup."""

    server: RunningServer
    data_dir: Path
    fake: FakeProviderServer
    token: str = TOKEN

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def script(self) -> ScriptedModel:
        return self.fake.script

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the HTTP API as the UI does (token, JSON); returns the decoded answer."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return text
        return json.loads(text) if text else None

    def create_conversation(self, title: str | None = None) -> dict[str, Any]:
        return self.api("POST", "/api/conversations", {"title": title} if title else {})

    def send(self, conversation_id: str, content: str) -> str:
        """Run one turn through the API and return the raw event stream once it is done."""
        return self.api(
            "POST", f"/api/conversations/{conversation_id}/messages", {"content": content}
        )


def _start(data_dir: Path, fake: FakeProviderServer, config: str | None) -> Foldline:
    data_dir.mkdir(parents=True, exist_ok=True)
    text = (
        config
        if config is not None
        else CONFIG_TEMPLATE.format(model=MODEL, base_url=fake.openai_url)
    )
    (data_dir / "config.toml").write_text(text, encoding="utf-8")
    app = create_app(data_dir=data_dir, token=TOKEN)
    # Onboarding probes "Ollama" at the fake provider instead of 127.0.0.1:11434, so the
    # test neither depends on nor talks to whatever runs on this machine.
    local_ollama = LocalServerTarget("ollama", "Ollama", fake.url, "/v1/models")
    app.dependency_overrides[get_local_targets] = lambda: (local_ollama,)
    server = start_server_in_thread(app, "127.0.0.1", 0)
    return Foldline(server=server, data_dir=data_dir, fake=fake)


def _reset(fake: FakeProviderServer) -> None:
    """Forget what earlier tests scripted, recorded or queued on the shared fake."""
    fake.reset()
    fake.script.reset()
    fake.script.summaries = structured_summary


@pytest.fixture
def foldline(tmp_path: Path, fake_provider: FakeProviderServer) -> Iterator[Foldline]:
    _reset(fake_provider)
    running = _start(tmp_path / "data", fake_provider, None)
    try:
        yield running
    finally:
        running.server.stop()


@pytest.fixture
def start_foldline(tmp_path: Path, fake_provider: FakeProviderServer) -> Iterator[Any]:
    """A factory for tests that need their own config.toml (or a pre-filled data dir)."""
    _reset(fake_provider)
    started: list[Foldline] = []

    def start(config: str | None = None, data_dir: Path | None = None) -> Foldline:
        running = _start(data_dir or tmp_path / "data", fake_provider, config)
        started.append(running)
        return running

    yield start
    for running in started:
        running.server.stop()


@dataclass
class UI:
    """A page on the app, with the errors it logged and screenshot saving."""

    page: Page
    app: Foldline
    problems: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)

    def open(self, fragment: str = "") -> None:
        self.page.goto(f"{self.app.url}/#token={self.app.token}{fragment}")
        expect(self.page.locator("#app")).not_to_have_attribute("data-state", "loading")

    def allow(self, pattern: str) -> None:
        """Accept console errors matching `pattern` (a test that provokes them on purpose)."""
        self.allowed.append(re.compile(pattern))

    def shot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def idle(self, timeout: float = 30_000) -> None:
        """Wait until no turn or fold is running."""
        expect(self.page.locator("#app")).to_have_attribute("data-busy", "", timeout=timeout)

    def send(self, text: str) -> None:
        """Type a message and send it with Enter, then wait for the turn to end."""
        box = self.page.locator("#composer-input")
        box.fill(text)
        box.press("Enter")
        self.idle()

    def unexpected_problems(self) -> list[str]:
        return [p for p in self.problems if not any(a.search(p) for a in self.allowed)]


@pytest.fixture
def ui(page: Page, foldline: Foldline) -> Iterator[UI]:
    yield from _ui(page, foldline)


@pytest.fixture
def make_ui(page: Page) -> Iterator[Any]:
    """Like `ui`, for an app started by `start_foldline`."""
    made: list[UI] = []

    def make(app: Foldline) -> UI:
        helper = UI(page=page, app=app)
        _watch(helper)
        made.append(helper)
        return helper

    yield make
    for helper in made:
        assert not helper.unexpected_problems(), helper.unexpected_problems()


def _watch(helper: UI) -> None:
    def on_console(message: Any) -> None:
        if message.type == "error":
            helper.problems.append(f"console: {message.text}")

    helper.page.on("console", on_console)
    helper.page.on("pageerror", lambda error: helper.problems.append(f"pageerror: {error}"))


def _ui(page: Page, foldline: Foldline) -> Iterator[UI]:
    helper = UI(page=page, app=foldline)
    _watch(helper)
    yield helper
    problems = helper.unexpected_problems()
    assert not problems, f"the page logged errors: {problems}"
