"""The `[mcp_servers.NAME]` tables of config.toml, as the configuration holds them.

```toml
[mcp_servers.files]              # a local server, spoken to over stdio
command = "python"
args = ["-m", "my_server"]
env = { API_TOKEN = "..." }
cwd = "/some/dir"
approval = "ask"                 # ask (default) | always | never
timeout = 60                     # seconds per tool call
enabled = true

[mcp_servers.files.tools.delete_file]   # per-tool overrides
approval = "ask"
enabled = false

[mcp_servers.remote]             # a server spoken to over streamable HTTP
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer ..." }
roots = ["/home/me/project"]     # folders the server may ask about (none by default)

[mcp_servers.remote.oauth]       # only for servers whose sign-in needs a fixed client
client_id = "..."                # registered with the authorization server beforehand
client_secret = "..."            # when that registration has one
redirect_port = 33418            # the loopback port registered as http://127.0.0.1:PORT/callback
client_metadata_url = "https://example.com/foldline-client.json"
scopes = ["read", "write"]
# grant = "client_credentials"   # a machine account: no browser, with client_secret
# private_key_file = "/path/key.pem"   # or a signed assertion (private_key_jwt)
```

This module sits beside `foldline.config`, below it, so the configuration can hold these
tables without depending on the MCP client (`foldline.mcp`), which builds on the
configuration. What Settings does with a server (checking a new one, masking its secrets,
importing Claude Desktop's file) is `foldline.mcp.settings`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Approval = Literal["ask", "always", "never"]
"""`ask`: every call waits for the person; `always`: calls run without asking; `never`:
calls are refused (the model reads an error result)."""

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DEFAULT_TIMEOUT_SECONDS = 60.0


class _Table(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class McpToolOverride(_Table):
    """`[mcp_servers.NAME.tools.TOOL]`: one tool's own approval and switch."""

    approval: Approval | None = None
    enabled: bool | None = None


class McpOAuthConfig(_Table):
    """`[mcp_servers.NAME.oauth]`: how Foldline identifies itself when signing in.

    Empty (the default) is right for most servers: Foldline registers itself (dynamic
    client registration) with a loopback redirect on a free port."""

    client_id: str | None = None
    client_secret: str | None = None
    redirect_port: int | None = Field(default=None, ge=1024, le=65535)
    client_metadata_url: str | None = None
    """A client ID metadata document (an HTTPS URL) used as the client ID where the
    authorization server supports it, instead of registering."""
    scopes: tuple[str, ...] = ()
    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    """`client_credentials`: a machine account, no browser (needs `client_id` and either
    `client_secret` or `private_key_file`)."""
    private_key_file: str | None = None
    """A PEM private key signing the client's assertion (`private_key_jwt`)."""
    signing_algorithm: str = "RS256"

    @model_validator(mode="after")
    def _machine_account_complete(self) -> McpOAuthConfig:
        if self.grant == "client_credentials" and not (
            self.client_id and (self.client_secret or self.private_key_file)
        ):
            raise ValueError(
                "oauth.grant = client_credentials needs `client_id` and either "
                "`client_secret` or `private_key_file`"
            )
        return self


class McpServerConfig(_Table):
    """One `[mcp_servers.NAME]` table: how to reach a server and how to treat its calls."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    approval: Approval = "ask"
    timeout: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=3600)
    enabled: bool = True
    tools: dict[str, McpToolOverride] = Field(default_factory=dict)
    roots: tuple[str, ...] = ()
    """Folders (absolute paths) the server is told it may work in, when it asks."""
    oauth: McpOAuthConfig = Field(default_factory=McpOAuthConfig)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either `command` (stdio) or `url` (streamable HTTP), not both")
        if self.url and not re.match(r"^https?://", self.url):
            raise ValueError("`url` must start with http:// or https://")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"

    def tool_approval(self, tool: str) -> Approval:
        override = self.tools.get(tool)
        return override.approval if override and override.approval else self.approval

    def tool_enabled(self, tool: str) -> bool:
        override = self.tools.get(tool)
        return self.enabled and (override is None or override.enabled is not False)

    def with_tool_override(self, tool: str, **changes: Any) -> McpServerConfig:
        current = self.tools.get(tool, McpToolOverride())
        tools = {**self.tools, tool: current.model_copy(update=changes)}
        return self.model_copy(update={"tools": tools})

    def secrets(self) -> list[str]:
        """The values that must never be shown or logged."""
        values = (*self.env.values(), *self.headers.values(), self.oauth.client_secret)
        return [value for value in values if value]


def check_server_name(name: str) -> None:
    if not SERVER_NAME.match(name):
        raise ValueError(
            f"MCP server name {name!r}: use letters, digits, `_` and `-` (at most 64 characters)"
        )
