"""The command the MCP conformance suite runs as "the client": Foldline's own MCP client.

`conformance client --command "python driver.py"` starts one scenario server, then runs
this with the server's URL as the last argument and the scenario's name in
MCP_CONFORMANCE_SCENARIO (credentials for some in MCP_CONFORMANCE_CONTEXT). The driver
does what the app does with a server added in Settings: `ServerConnection` starts it
(sign-in included: the person has pressed Sign in), lists its tools, and calls one the
way a conversation would. The only stand-ins are the person's two parts:

- the browser: it loads the authorization page and follows its redirect, which lands on
  Foldline's own loopback listener, exactly as a browser would;
- the form: a question from the server is answered with the form's pre-filled values
  (`form_defaults`, what Submit sends for an untouched form), checked by `check_answer`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx2
import mcp_types

from foldline.config_mcp import McpOAuthConfig, McpServerConfig
from foldline.mcp.connection import ConnectionHooks, ServerConnection
from foldline.mcp.elicitation import check_answer, form_defaults

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
log = logging.getLogger("foldline-conformance")

KEY_DIR = Path(tempfile.mkdtemp(prefix="foldline-conformance-"))

# Which tool each scenario's server expects a call of, with which arguments.
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


def browser(url: str) -> None:
    """A browser that signs in at once: load the page, follow its redirects to the end."""
    with httpx2.Client(follow_redirects=False, timeout=30) as client:
        for _hop in range(10):
            response = client.get(url)
            location = response.headers.get("location")
            if response.status_code not in (301, 302, 303, 307, 308) or not location:
                return
            url = str(httpx2.URL(url).join(location))


async def answer_form(server: str, params: Any) -> Any:
    if isinstance(params, mcp_types.ElicitRequestFormParams):
        content = check_answer(params.requested_schema, form_defaults(params.requested_schema))
        return mcp_types.ElicitResult(action="accept", content=content)
    return mcp_types.ElicitResult(action="decline")


def server_config(url: str, scenario: str) -> McpServerConfig:
    """The `[mcp_servers]` table a person would write for this scenario's server."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    machine = scenario.startswith("auth/client-credentials")
    key_file = None
    if context.get("private_key_pem"):
        key_file = KEY_DIR / "client-key.pem"
        key_file.write_text(context["private_key_pem"], encoding="utf-8")
    oauth = McpOAuthConfig(
        client_id=context.get("client_id"),
        client_secret=None if key_file else context.get("client_secret"),
        # The client ID metadata document the suite's authorization servers know; Foldline
        # uses it only where a server says it takes such documents (else it registers).
        client_metadata_url="https://conformance-test.local/client-metadata.json",
        grant="client_credentials" if machine else "authorization_code",
        private_key_file=str(key_file) if key_file else None,
        signing_algorithm=context.get("signing_algorithm", "RS256"),
    )
    return McpServerConfig(url=url, oauth=oauth, timeout=20)


async def run(url: str, scenario: str) -> int:
    hooks = ConnectionHooks(
        elicit=answer_form,
        open_url=lambda page: threading.Thread(target=browser, args=(page,)).start(),
    )
    connection = ServerConnection("conformance", server_config(url, scenario), hooks)
    connection.interactive = True
    await connection.start(timeout=25)
    if connection.state != "running":
        log.error("the server did not start: %s (%s)", connection.state, connection.error)
        return 1
    try:
        tool, arguments = CALLS.get(scenario, ("", {}))
        if not tool and connection.tools:
            tool = connection.tools[0].name
        if tool:
            result = await connection.call(tool, arguments, timeout=20)
            log.info("%s -> %s", tool, result)
    finally:
        await connection.stop()
    return 0


def main() -> None:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    sys.exit(asyncio.run(run(url, scenario)))


if __name__ == "__main__":
    main()
