"""Sign-in to remote MCP servers: OAuth 2.1 as the MCP authorization spec describes it.

The SDK's `OAuthClientProvider` does the protocol: protected-resource and
authorization-server metadata discovery with the spec's fallbacks, dynamic client
registration or a client ID metadata document, PKCE, the token exchange, refresh, and a
scope step-up when a call answers 403 `insufficient_scope`. This module gives it what a
desktop app has to supply:

- storage: the tokens and the client registration of each server in the OS keychain
  (through `foldline.secrets`, which falls back to a 0600 file where no keychain works),
  bound to the server's URL so a changed URL never receives another server's tokens;
- the person: the authorization page opens in the system browser, and the answer comes
  back to a loopback listener (`http://127.0.0.1:PORT/callback`, RFC 8252) that lives
  only while a sign-in waits;
- consent: a server is never signed in to behind the person's back. Until the person
  presses Sign in, a server that answers 401 stops with `SignInRequired`, which Settings
  shows as "Sign in required" with a Sign in button.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import socket
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from foldline import __version__
from foldline.config_mcp import McpServerConfig
from foldline.secrets import delete_api_key, get_api_key, set_api_key

log = logging.getLogger(__name__)

SIGN_IN_TIMEOUT_SECONDS = 300.0
"""How long a sign-in waits for the browser before it gives up."""
CALLBACK_PATH = "/callback"
EXPIRY_MARGIN_SECONDS = 30.0
"""A token this close to its expiry is refreshed before use rather than sent."""


class SignInRequired(Exception):
    """The server wants an OAuth sign-in, and the person has not asked for one yet."""


def _secret_name(server: str) -> str:
    return f"mcp-oauth:{server}"


@dataclass
class KeychainTokenStorage(TokenStorage):
    """One server's tokens and client registration, kept as one JSON secret.

    Stored under `mcp-oauth:NAME` with the server's URL: a record made for another URL
    is ignored (and replaced at the next sign-in). Without a data directory (tests, the
    conformance driver) the record lives in memory only.
    """

    server: str
    url: str
    data_dir: Path | None = None
    _memory: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self.data_dir is None:
            return dict(self._memory or {})
        raw = get_api_key(self.data_dir, _secret_name(self.server))
        try:
            record = json.loads(raw) if raw else {}
        except ValueError:
            record = {}
        if not isinstance(record, dict) or record.get("url") != self.url:
            return {}
        return record

    def _save(self, record: dict[str, Any]) -> None:
        record = {**record, "url": self.url}
        if self.data_dir is None:
            self._memory = record
            return
        set_api_key(self.data_dir, _secret_name(self.server), json.dumps(record))

    async def get_tokens(self) -> OAuthToken | None:
        record = self._load()
        stored = record.get("tokens")
        if not stored:
            return None
        tokens = OAuthToken.model_validate(stored)
        expires_at = record.get("expires_at")
        if expires_at is not None and time.time() >= expires_at - EXPIRY_MARGIN_SECONDS:
            # The SDK learns a token's expiry only when it receives one, so a token
            # read back after it expired would be sent as valid and answered 401. Handed
            # over without its access token, it is refreshed before the first request.
            tokens = tokens.model_copy(update={"access_token": ""})
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = {**self._load(), "tokens": tokens.model_dump(mode="json", exclude_none=True)}
        record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        self._save(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        stored = self._load().get("client")
        return OAuthClientInformationFull.model_validate(stored) if stored else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        client = client_info.model_dump(mode="json", exclude_none=True)
        self._save({**self._load(), "client": client})

    def has_tokens(self) -> bool:
        return bool(self._load().get("tokens"))

    def forget(self) -> None:
        """Sign out: the tokens and the registration go."""
        if self.data_dir is None:
            self._memory = None
        else:
            delete_api_key(self.data_dir, _secret_name(self.server))


class LoopbackCallback:
    """The redirect URI's listener: one GET with `code` and `state`, then it closes."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._answer: asyncio.Future[AuthorizationCodeResult] | None = None
        self._server: asyncio.Server | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def open(self) -> None:
        self._answer = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def wait(self, timeout: float) -> AuthorizationCodeResult:
        assert self._answer is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._answer), timeout)
        except TimeoutError:
            raise TimeoutError(
                f"no answer from the browser within {timeout:g} seconds; sign in again"
            ) from None
        finally:
            await self.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line.split(" ")
            target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
            query = {key: values[0] for key, values in parse_qs(target.query).items()}
            if target.path != CALLBACK_PATH or not (query.get("code") or query.get("error")):
                _respond(writer, 404, "Not the sign-in answer.")
                return
            if query.get("error"):
                reason = query.get("error_description") or query["error"]
                _respond(writer, 400, f"Sign-in failed: {reason}. You can close this tab.")
                self._settle(error=f"the server refused the sign-in: {reason}")
                return
            _respond(writer, 200, "Signed in. You can close this tab and return to Foldline.")
            self._settle(
                AuthorizationCodeResult(
                    code=query["code"], state=query.get("state"), iss=query.get("iss")
                )
            )
        except (TimeoutError, OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()

    def _settle(self, result: AuthorizationCodeResult | None = None, error: str = "") -> None:
        if self._answer is None or self._answer.done():
            return
        if result is not None:
            self._answer.set_result(result)
        else:
            self._answer.set_exception(RuntimeError(error))


def _respond(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    body = (
        "<!doctype html><meta charset=utf-8><title>Foldline</title>"
        f"<p style='font:16px system-ui;margin:3em'>{html.escape(text)}</p>"
    ).encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _AskFirst(httpx2.Auth):
    """Before any sign-in: requests go out bare, and a 401 means the person must sign in."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code == 401:
            raise SignInRequired("the server asks you to sign in")


@dataclass
class SignIn:
    """What one HTTP server's connection needs to authorize its requests."""

    server: str
    config: McpServerConfig
    data_dir: Path | None
    open_url: Callable[[str], Any] | None
    """Opens the authorization page (the system browser); None: no sign-in possible."""
    interactive: bool = False
    """True when the person pressed Sign in: the browser may open."""

    def storage(self) -> KeychainTokenStorage:
        assert self.config.url is not None
        return KeychainTokenStorage(self.server, self.config.url, self.data_dir)

    async def auth(self) -> httpx2.Auth | None:
        """The httpx2 auth of this server's requests, or None when headers carry it."""
        if any(key.lower() == "authorization" for key in self.config.headers):
            return None
        storage = self.storage()
        oauth = self.config.oauth
        if oauth.grant == "client_credentials":
            return _machine_account(self.config, storage)
        client = await storage.get_client_info()
        if oauth.client_id:
            # A client registered beforehand: its redirect URI is the configured port's.
            port = oauth.redirect_port or _free_port()
            if client is None or client.client_id != oauth.client_id:
                client = OAuthClientInformationFull(
                    client_id=oauth.client_id,
                    client_secret=oauth.client_secret,
                    redirect_uris=[AnyUrl(LoopbackCallback(port).redirect_uri)],
                    token_endpoint_auth_method=(
                        "client_secret_basic" if oauth.client_secret else "none"
                    ),
                )
                await storage.set_client_info(client)
        else:
            port = _port_of(client) or oauth.redirect_port or _free_port()
        if not self.interactive and not storage.has_tokens():
            return _AskFirst()
        callback = LoopbackCallback(port)
        metadata = OAuthClientMetadata(
            client_name="Foldline",
            client_uri=None,
            software_id="foldline",
            software_version=__version__,
            redirect_uris=[AnyUrl(callback.redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=" ".join(oauth.scopes) or None,
        )

        async def redirect(authorization_url: str) -> None:
            if not self.interactive or self.open_url is None:
                raise SignInRequired("the server asks you to sign in again")
            await callback.open()
            log.info("MCP server %s: opening the sign-in page", self.server)
            await asyncio.to_thread(self.open_url, authorization_url)

        async def answer() -> AuthorizationCodeResult:
            return await callback.wait(SIGN_IN_TIMEOUT_SECONDS)

        return OAuthClientProvider(
            server_url=self.config.url or "",
            client_metadata=metadata,
            storage=storage,
            redirect_handler=redirect,
            callback_handler=answer,
            client_metadata_url=oauth.client_metadata_url,
        )


def _machine_account(config: McpServerConfig, storage: KeychainTokenStorage) -> httpx2.Auth:
    """The client-credentials grant: a secret, or an assertion signed with a private key."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    oauth = config.oauth
    assert oauth.client_id is not None and config.url is not None
    scope = " ".join(oauth.scopes) or None
    if oauth.private_key_file:
        key = Path(oauth.private_key_file).expanduser().read_text(encoding="utf-8")
        assertion = SignedJWTParameters(
            issuer=oauth.client_id,
            subject=oauth.client_id,
            signing_key=key,
            signing_algorithm=oauth.signing_algorithm,
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=config.url,
            storage=storage,
            client_id=oauth.client_id,
            assertion_provider=assertion.create_assertion_provider(),
            scope=scope,
        )
    assert oauth.client_secret is not None
    return ClientCredentialsOAuthProvider(
        server_url=config.url,
        storage=storage,
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
        scope=scope,
    )


def _port_of(client: OAuthClientInformationFull | None) -> int | None:
    """The loopback port a registration was made for: redirect URIs must match exactly,
    so a later sign-in listens on the same port."""
    if client is None or not client.redirect_uris:
        return None
    parts = urlsplit(str(client.redirect_uris[0]))
    if parts.hostname not in ("127.0.0.1", "localhost"):
        return None
    return parts.port


def find_sign_in_required(error: BaseException) -> SignInRequired | None:
    """The `SignInRequired` inside the SDK's exception groups and chains, if any."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SignInRequired):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return None
