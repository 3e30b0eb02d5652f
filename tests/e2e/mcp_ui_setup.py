"""The Foldline the MCP Settings tests start: a fake provider and one real MCP test
server (built with the `mcp` SDK) with a secret in its environment."""

from __future__ import annotations

import sys
from pathlib import Path

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "mcp_host" / "mcp_test_server.py"
CONFIG = """\
[defaults]
model = "fake-model"

[providers.fake]
kind = "openai-compatible"
base_url = "{base_url}"

[models."fake-model"]
provider = "fake"
context_window = 200000
max_output_tokens = 500

# A title is made by a model call of its own, which would take a scripted answer.
[compaction]
auto_title = false

[mcp_servers.tests]
command = "{python}"
args = ["{script}"]
env = {{ API_TOKEN = "ui-secret-value" }}
"""


def start(start_foldline, fake_provider):
    return start_foldline(
        CONFIG.format(
            base_url=fake_provider.openai_url, python=sys.executable, script=SERVER_SCRIPT
        )
    )
