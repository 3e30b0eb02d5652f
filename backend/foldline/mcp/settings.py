"""What Settings does with `[mcp_servers.NAME]` tables: a server added by hand checked
field by field, secrets masked for the UI, and Claude Desktop's format imported.

The tables themselves are `foldline.config_mcp`. Environment values and headers are
secrets as far as the API, exports and logs are concerned: `public_server` masks them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ValidationError

from foldline.config_mcp import McpServerConfig, check_server_name

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
"""An HTTP header name is a token (RFC 9110): no spaces, colons or quotes."""


def _validation_message(error: ValidationError, within: str = "") -> str:
    """The first problem of a validation error as one line: `where: what`."""
    detail = error.errors()[0]
    parts = [within] if within else []
    where = ".".join(parts + [str(part) for part in detail["loc"]])
    message = str(detail["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def new_server(
    name: str, transport: Literal["stdio", "http"], fields: Mapping[str, Any]
) -> McpServerConfig:
    """A server added in Settings, checked field by field with a message a person can act
    on (a `ValueError`): the fields of the other transport, empty or malformed names,
    line breaks in headers. `fields` holds the table's keys (`command`, `args`, `env`,
    `cwd`, `url`, `headers`, `approval`, `timeout`, `enabled`)."""
    check_server_name(name)
    required, other_transport = (
        ("command", ("url", "headers"))
        if transport == "stdio"
        else ("url", ("command", "args", "env", "cwd"))
    )
    given = [key for key in other_transport if fields.get(key)]
    if given:
        listed = ", ".join(f"`{key}`" for key in given)
        raise ValueError(f"a {transport} server takes no {listed}")
    if not str(fields.get(required) or "").strip():
        what = "a command to run" if transport == "stdio" else "a URL"
        raise ValueError(f"a {transport} server needs {what} (`{required}`)")
    for kind in ("env", "headers"):
        if "" in (fields.get(kind) or {}):
            what = "an environment variable" if kind == "env" else "a header"
            raise ValueError(f"{what} has a value but no name")
    for key in fields.get("env") or {}:
        if not ENV_NAME.match(key):
            raise ValueError(
                f"environment variable {key!r}: use letters, digits and `_`, "
                "not starting with a digit"
            )
    for key, value in (fields.get("headers") or {}).items():
        if not HEADER_NAME.match(key):
            raise ValueError(f"header {key!r}: a header name has no spaces, colons or quotes")
        if "\r" in value or "\n" in value:
            raise ValueError(f"header {key!r}: a value cannot hold a line break")
    table = {key: value for key, value in fields.items() if key not in other_transport}
    table[required] = str(fields[required]).strip()
    if table.get("cwd") is not None and not str(table["cwd"]).strip():
        table["cwd"] = None
    try:
        return McpServerConfig.model_validate(table)
    except ValidationError as error:
        raise ValueError(_validation_message(error)) from error


def mask(value: str) -> str:
    """A secret's mask: its length is not even hinted beyond a short tail."""
    return "••••" + value[-2:] if len(value) > 8 else "••••"


def public_server(name: str, server: McpServerConfig) -> dict[str, Any]:
    """A server's settings as the UI may see them (camelCase), env and headers masked."""
    return {
        "name": name,
        "transport": server.transport,
        "command": server.command,
        "args": list(server.args),
        "cwd": server.cwd,
        "url": server.url,
        "env": {key: mask(value) for key, value in server.env.items()},
        "headers": {key: mask(value) for key, value in server.headers.items()},
        "approval": server.approval,
        "timeout": server.timeout,
        "enabled": server.enabled,
        "tools": {
            tool: override.model_dump(exclude_none=True) for tool, override in server.tools.items()
        },
    }


class McpImportError(ValueError):
    """The text given to the import is not a Claude Desktop configuration we can read."""


def parse_claude_desktop(text: str) -> dict[str, McpServerConfig]:
    """The servers of a Claude Desktop `claude_desktop_config.json`.

    Accepts the whole file or just its `mcpServers` object. Each entry is
    `{command, args, env}` (stdio) or `{url, headers}` (remote; Claude Desktop's own file
    has only the first kind, other apps write the second). Imported servers ask before
    every call: the person decides what to trust after seeing the tools.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise McpImportError(f"not valid JSON: {error}") from error
    if not isinstance(data, Mapping):
        raise McpImportError("expected a JSON object")
    servers = data.get("mcpServers", data)
    if not isinstance(servers, Mapping) or not servers:
        raise McpImportError("no `mcpServers` entries found")
    imported: dict[str, McpServerConfig] = {}
    for name, entry in servers.items():
        try:
            check_server_name(name)
        except ValueError as error:
            raise McpImportError(str(error)) from error
        if not isinstance(entry, Mapping):
            raise McpImportError(f"mcpServers.{name}: expected an object")
        fields = {
            key: entry[key]
            for key in ("command", "args", "env", "cwd", "url", "headers")
            if key in entry
        }
        try:
            imported[name] = McpServerConfig.model_validate(fields)
        except ValidationError as error:
            raise McpImportError(_validation_message(error, f"mcpServers.{name}")) from error
    return imported
