"""The local server's defences: token, Host, Origin, CORS, docs, headers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from foldline.server import security
from foldline.server.security import (
    CONTENT_SECURITY_POLICY,
    HostAllowlist,
    bearer_token_matches,
    loopback_hosts,
    resolve_token,
)

from .conftest import AUTH, BASE_URL, PORT, TOKEN, build_app


def _api_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Every (method, path) of the API with path parameters filled in."""
    routes = []
    for template, operations in app.openapi()["paths"].items():
        path = re.sub(r"\{version\}|\{part_index\}", "1", template)
        path = re.sub(r"\{[a-z_]+\}", "x", path)
        routes.extend((method.upper(), path) for method in operations)
    return routes


def test_every_api_route_but_health_needs_the_token(app: FastAPI, anonymous: TestClient) -> None:
    routes = _api_routes(app)
    assert len(routes) >= 20  # the whole API, so a forgotten route cannot slip through
    for method, path in routes:
        if path == "/api/health":
            continue
        missing = anonymous.request(method, path)
        assert missing.status_code == 401, (method, path)
        assert missing.json()["error"]["code"] == "unauthorized"
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = anonymous.request(method, path, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401, (method, path)


def test_token_refusals_write_nothing(anonymous: TestClient, client: TestClient) -> None:
    refused = anonymous.post("/api/conversations", json={"title": "sneaky"})
    assert refused.status_code == 401
    assert client.get("/api/conversations").json()["total"] == 0


@pytest.mark.parametrize(
    "authorization",
    [TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer ", "Bearer"],
)
def test_only_the_exact_bearer_token_is_accepted(anonymous: TestClient, authorization: str) -> None:
    reply = anonymous.get("/api/conversations", headers={"Authorization": authorization})
    assert reply.status_code == 401


def test_the_bearer_scheme_is_case_insensitive(anonymous: TestClient) -> None:
    reply = anonymous.get("/api/conversations", headers={"Authorization": f"bearer {TOKEN}"})
    assert reply.status_code == 200


def test_health_needs_no_token(anonymous: TestClient) -> None:
    reply = anonymous.get("/api/health")
    assert reply.status_code == 200
    assert reply.json()["status"] == "ok"
    assert reply.json()["version"]


def test_unknown_api_paths_need_the_token_before_saying_404(
    anonymous: TestClient, client: TestClient
) -> None:
    assert anonymous.get("/api/nothing-here").status_code == 401
    found = client.get("/api/nothing-here")
    assert found.status_code == 404
    assert found.json()["error"]["code"] == "not_found"


def test_tokens_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return a == b

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    assert bearer_token_matches("Bearer abc", "abc")
    assert not bearer_token_matches("Bearer abd", "abc")
    assert seen == [(b"abc", b"abc"), (b"abd", b"abc")]


def test_token_is_random_per_launch_unless_fixed_by_the_environment() -> None:
    first, second = resolve_token({}), resolve_token({})
    assert first != second
    assert len(first) >= 43  # 32 random bytes, URL-safe base64
    assert resolve_token({"FOLDLINE_TOKEN": "fixed-token"}) == "fixed-token"
    assert resolve_token({"FOLDLINE_TOKEN": "  "}) not in ("", "  ")


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        f"evil.example:{PORT}",
        f"127.0.0.1.evil.example:{PORT}",
        f"localhost.evil.example:{PORT}",
        "192.168.1.10",
        "",
    ],
)
def test_foreign_host_headers_are_refused(client: TestClient, host: str) -> None:
    # DNS rebinding: the attacker's name resolves to 127.0.0.1, but the browser still
    # sends the attacker's name in Host.
    for path in ("/api/health", "/api/conversations", "/"):
        reply = client.get(path, headers={"Host": host})
        assert reply.status_code == 421, (host, path)
        assert reply.json()["error"]["code"] == "host_not_allowed"


@pytest.mark.parametrize("host", [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}"])
def test_loopback_host_headers_are_accepted(client: TestClient, host: str) -> None:
    assert client.get("/api/conversations", headers={"Host": host}).status_code == 200


def test_a_host_list_with_ports_refuses_other_ports(
    data_dir: Path, store, chat_service, frontend_dir: Path
) -> None:
    app = build_app(data_dir, store, chat_service, frontend_dir, allowed_hosts=loopback_hosts(PORT))
    with TestClient(app, base_url=BASE_URL, headers=AUTH) as strict:
        assert strict.get("/api/health").status_code == 200
        other_port = strict.get("/api/health", headers={"Host": "127.0.0.1:9999"})
        assert other_port.status_code == 421


def test_host_allowlist_matching() -> None:
    hosts = HostAllowlist(["127.0.0.1:80", "localhost", "[::1]:80"])
    assert hosts.allows("127.0.0.1:80")
    assert not hosts.allows("127.0.0.1:81")
    assert hosts.allows("LOCALHOST:1234")
    assert hosts.allows("[::1]:80")
    assert not hosts.allows("[::1]:81")
    assert not hosts.allows(None)
    assert not HostAllowlist([]).allows("localhost")
    assert HostAllowlist(["*"]).allows("anything.example:1")


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        f"http://evil.example:{PORT}",
        "null",
        f"http://127.0.0.1:{PORT + 1}",
        f"http://localhost:{PORT}",  # another origin, even though it is this machine
        f"file://{PORT}",
    ],
)
def test_foreign_origins_are_refused_and_write_nothing(client: TestClient, origin: str) -> None:
    headers = {"Origin": origin}
    post = client.post("/api/conversations", json={"title": "cross-site"}, headers=headers)
    assert post.status_code == 403
    assert post.json()["error"]["code"] == "origin_not_allowed"
    assert client.get("/api/conversations", headers=headers).status_code == 403
    assert client.get("/api/health", headers=headers).status_code == 403
    assert client.get("/api/conversations").json()["total"] == 0


def test_same_origin_and_no_origin_are_allowed(client: TestClient) -> None:
    same = client.post("/api/conversations", json={}, headers={"Origin": BASE_URL})
    assert same.status_code == 201
    assert client.post("/api/conversations", json={}).status_code == 201


def test_no_cors_headers_even_for_a_preflight(client: TestClient) -> None:
    preflight = client.options(
        "/api/conversations",
        headers={
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert preflight.status_code == 403
    normal = client.get("/api/conversations")
    for reply in (preflight, normal):
        assert not [name for name in reply.headers if name.lower().startswith("access-control")]


def test_no_api_docs_in_the_shipped_app(client: TestClient, anonymous: TestClient) -> None:
    for path in ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"):
        assert client.get(path).status_code == 404, path
        assert anonymous.get(path).status_code == 404, path


def test_api_docs_only_in_testing_mode(
    data_dir: Path, store, chat_service, frontend_dir: Path
) -> None:
    app = build_app(data_dir, store, chat_service, frontend_dir, testing=True)
    with TestClient(app, base_url=BASE_URL) as testing_client:
        schema = testing_client.get("/openapi.json")
        assert schema.status_code == 200
        assert "/api/conversations/{conversation_id}/messages" in schema.json()["paths"]


def test_strict_security_headers_on_the_page_and_the_api(anonymous: TestClient) -> None:
    page = anonymous.get("/")
    assert page.status_code == 200
    assert "Foldline test UI" in page.text
    for reply in (page, anonymous.get("/app.js"), anonymous.get("/api/health")):
        csp = reply.headers["content-security-policy"]
        assert csp == CONTENT_SECURITY_POLICY
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "object-src 'none'" in csp and "base-uri 'none'" in csp
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["referrer-policy"] == "no-referrer"
    assert anonymous.get("/api/health").headers["cache-control"] == "no-store"


def test_refusals_carry_the_security_headers_too(client: TestClient) -> None:
    refused = client.get("/api/health", headers={"Host": "evil.example"})
    assert refused.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_static_files_cannot_escape_the_frontend_dir(anonymous: TestClient) -> None:
    for path in ("/../conftest.py", "/%2e%2e/conftest.py", "/..%2fconftest.py"):
        reply = anonymous.get(path)
        assert reply.status_code == 404, path
        assert "CONFIG_TOML" not in reply.text


def test_without_a_frontend_a_plain_page_says_so(
    data_dir: Path, store, chat_service, tmp_path: Path
) -> None:
    app_without_ui = build_app(data_dir, store, chat_service, tmp_path / "missing")
    with TestClient(app_without_ui, base_url=BASE_URL) as anonymous:
        page = anonymous.get("/")
        assert page.status_code == 200
        assert "user interface files were not" in page.text
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_a_bug_answers_500_in_the_error_shape_without_details(
    app: FastAPI, client: TestClient
) -> None:
    from foldline.server.routes.settings import get_local_targets

    def broken() -> tuple:
        raise RuntimeError("secret internal path /home/someone/.config")

    app.dependency_overrides[get_local_targets] = broken
    reply = client.get("/api/settings/detect-local")
    assert reply.status_code == 500
    assert reply.json() == {
        "error": {"code": "internal_error", "message": "Internal error; see the log."}
    }
    assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
