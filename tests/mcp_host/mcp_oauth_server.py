"""A remote MCP server that needs a sign-in, built with the SDK's own authorization server.

Run as `python mcp_oauth_server.py PORT`: streamable HTTP on 127.0.0.1:PORT/mcp, with the
authorization server in the same process (metadata, dynamic client registration, PKCE,
tokens, refresh). Its authorization page is a real page: it names the client and waits
for the person to press Allow (or Deny), then redirects to the client's redirect URI, as
a hosted server's sign-in page does. Tokens expire after `TOKEN_SECONDS` (an environment
variable, 3600 by default) so a test can make Foldline refresh them.
"""

from __future__ import annotations

import html
import os
import secrets
import sys
import time
from urllib.parse import urlencode

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 9300
BASE = f"http://127.0.0.1:{PORT}"
TOKEN_SECONDS = int(os.environ.get("TOKEN_SECONDS", "3600"))


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.waiting: dict[str, tuple[OAuthClientInformationFull, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        ticket = secrets.token_urlsafe(16)
        self.waiting[ticket] = (client, params)
        return f"{BASE}/consent?{urlencode({'ticket': ticket})}"

    def consent(self, ticket: str, allow: bool) -> str:
        client, params = self.waiting.pop(ticket)
        if not allow:
            return construct_redirect_uri(
                str(params.redirect_uri), error="access_denied", state=params.state
            )
        assert client.client_id is not None
        code = AuthorizationCode(
            code=secrets.token_urlsafe(16),
            client_id=client.client_id,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        expires = int(time.time()) + TOKEN_SECONDS
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=TOKEN_SECONDS,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._tokens(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]
        assert client.client_id is not None
        return self._tokens(client.client_id, scopes or refresh_token.scopes, None)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
server = MCPServer(
    "signed-in",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=AnyHttpUrl(BASE),
        resource_server_url=AnyHttpUrl(f"{BASE}/mcp"),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
        ),
        required_scopes=["mcp"],
    ),
)


@server.tool()
def whoami() -> str:
    """Say that the caller is signed in."""
    return "signed in as the test person"


@server.custom_route("/consent", methods=["GET", "POST"])
async def consent(request: Request) -> Response:
    ticket = request.query_params.get("ticket", "")
    if ticket not in provider.waiting:
        return HTMLResponse("This sign-in request is unknown or used.", status_code=400)
    if request.method == "POST":
        form = await request.form()
        return RedirectResponse(provider.consent(ticket, form.get("answer") == "allow"), 302)
    client, _ = provider.waiting[ticket]
    name = html.escape(client.client_name or client.client_id or "an app")
    return HTMLResponse(
        "<!doctype html><title>Sign in</title><h1>Sign in to signed-in</h1>"
        f"<p id=client>{name} asks to use your account.</p>"
        f"<form method=post action='/consent?ticket={html.escape(ticket)}'>"
        "<button name=answer value=allow id=allow>Allow</button> "
        "<button name=answer value=deny id=deny>Deny</button></form>"
    )


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=PORT)
