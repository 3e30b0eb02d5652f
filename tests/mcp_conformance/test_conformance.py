"""The official MCP conformance suite's client scenarios against Foldline's MCP client.

`@modelcontextprotocol/conformance` (installed in tests/node by `desktop/install.sh
--test`) starts each scenario's server on localhost and runs `driver.py` against it; the
suite itself judges the traffic. Two scenarios are expected to fail, each for a reason
written below; `strict` makes either one passing a failure too, so the list cannot go
stale.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NODE_BIN = HERE.parent / "node" / "node_modules" / ".bin"
DRIVER = HERE / "driver.py"
BACKEND = HERE.parents[1] / "backend"


def _environment() -> dict[str, str]:
    """Node 22 of tests/node first; this checkout's `foldline` for the driver, whatever
    the working directory (a relative PYTHONPATH would find another copy)."""
    python_path = os.pathsep.join(
        [
            str(BACKEND),
            *(
                str(Path(p).resolve())
                for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                if p
            ),
        ]
    )
    return {
        **os.environ,
        "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": python_path,
    }


SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]

EXPECTED_FAILURES = {
    "auth/2025-03-26-oauth-metadata-backcompat": (
        "the scenario's authorization server metadata names the issuer "
        "http://HOST/oauth while it is served for the origin; the SDK refuses metadata "
        "whose issuer differs from the URL it was discovered from (RFC 8414 section 3.3, "
        "the guard against mix-up attacks), and Foldline keeps that guard"
    ),
    "auth/cross-app-access-complete-flow": (
        "enterprise-managed authorization (an identity provider's ID token exchanged for "
        "an ID-JAG) needs a sign-in to the company's identity provider, which Foldline "
        "does not have"
    ),
}


# The suite times the reconnection after an SSE stream closes (500 ms asked; up to 700 ms
# is a success, later a warning, past 1 s a failure). On a loaded two-core machine the
# driver's process can be late by a few hundred milliseconds through no fault of the
# client, so a "slightly late" warning there is tolerated; "too early" and "very late"
# still fail.
TOLERATED_WARNINGS = {"client-sse-retry-timing"}


def _conformance() -> Path:
    program = NODE_BIN / "conformance"
    if not program.exists():
        pytest.fail(
            "the MCP conformance suite is not installed: run `bash desktop/install.sh --test` "
            f"(it runs `npm ci` in {NODE_BIN.parents[1]})"
        )
    return program


def test_the_list_is_the_suites_own() -> None:
    listed = subprocess.run(
        [str(_conformance()), "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_environment(),
        check=True,
    ).stdout
    client_part = listed.split("Client scenarios", 1)[1]
    names = [line.split()[1] for line in client_part.splitlines() if line.startswith("  - ")]
    assert names == SCENARIOS


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(
            name,
            marks=pytest.mark.xfail(reason=EXPECTED_FAILURES[name], strict=True)
            if name in EXPECTED_FAILURES
            else (),
        )
        for name in SCENARIOS
    ],
)
def test_client_scenario(scenario: str, tmp_path: Path) -> None:
    program = _conformance()
    command = f"{sys.executable} {DRIVER}"
    result = subprocess.run(
        [
            str(program),
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            "--timeout",
            "60000",
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=_environment(),
    )
    checks_files = list(tmp_path.rglob("checks.json"))
    assert checks_files, result.stdout[-3000:] + result.stderr[-3000:]
    checks = json.loads(checks_files[0].read_text(encoding="utf-8"))
    problems = [
        f"{check['id']}: {check['status']} {check.get('errorMessage') or ''}"
        for check in checks
        if check["status"] == "FAILURE"
        or (check["status"] == "WARNING" and check["id"] not in TOLERATED_WARNINGS)
    ]
    passed = [check for check in checks if check["status"] == "SUCCESS"]
    assert passed and not problems, "\n".join(problems) or result.stdout[-3000:]
