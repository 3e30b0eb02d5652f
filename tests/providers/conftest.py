from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_http import FakeHTTPServer


@pytest.fixture(scope="session")
def fake_http_server() -> Iterator[FakeHTTPServer]:
    server = FakeHTTPServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fake(fake_http_server: FakeHTTPServer) -> Iterator[FakeHTTPServer]:
    """The shared server with no scripts and no recorded requests."""
    fake_http_server.reset()
    yield fake_http_server
    fake_http_server.reset()


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDKs and the configuration read these; a developer's own must not leak in.
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
