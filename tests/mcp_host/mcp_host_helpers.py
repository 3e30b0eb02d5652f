"""Helpers for the MCP tests: the test server's settings over stdio, and a free port."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from foldline.config_mcp import McpServerConfig

SERVER_SCRIPT = str(Path(__file__).with_name("mcp_test_server.py"))


def stdio_server(**settings: object) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=(SERVER_SCRIPT,), **settings)


def stdio_toml(name: str = "tests", **settings: object) -> str:
    """A `[mcp_servers.NAME]` table that starts the test server over stdio."""
    lines = [
        f"[mcp_servers.{name}]",
        f'command = "{sys.executable}"',
        f'args = ["{SERVER_SCRIPT}"]',
    ]
    for key, value in settings.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, str):
            value = f'"{value}"'
        elif isinstance(value, dict):
            value = "{ " + ", ".join(f'{k} = "{v}"' for k, v in value.items()) + " }"
        lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


BASE_CONFIG = """
[defaults]
model = "test-model"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."test-model"]
provider = "local"
context_window = 200000
max_output_tokens = 1024

# A title is made by a model call of its own, which would take a scripted answer.
[compaction]
auto_title = false

"""
"""A config whose default model is served by a fake the tests inject."""
