"""The web UI's plain modules are type-checked: `tsc --checkJs` (TypeScript from npm in
tests/node, installed by `desktop/install.sh --test`) reads frontend/js against its JSDoc
types, among them the API's shapes generated into frontend/js/types.js, and must find no
error. The settings are frontend/jsconfig.json; nothing is built or emitted."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE_BIN = ROOT / "tests" / "node" / "node_modules" / ".bin"
CONFIG = ROOT / "frontend" / "jsconfig.json"
ERROR = re.compile(r"^(?P<file>[^\s(]+)\((?P<line>\d+),\d+\): error (?P<code>TS\d+): ", re.M)


def _tsc(*arguments: str) -> subprocess.CompletedProcess[str]:
    tsc = NODE_BIN / "tsc"
    if not tsc.exists():
        pytest.fail("TypeScript is not installed: run `bash desktop/install.sh --test`")
    return subprocess.run(
        [str(tsc), *arguments],
        cwd=ROOT,
        # tests/node's own Node first, as for the other Node programs of the suite.
        env={**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_tsc_finds_no_error_in_the_ui() -> None:
    listed = _tsc("--project", str(CONFIG), "--listFilesOnly")
    checked = [line for line in listed.stdout.splitlines() if "/frontend/js/" in line]
    # The whole UI, not a stray folder: every module under frontend/js.
    assert len(checked) == len(list((ROOT / "frontend" / "js").glob("*.js"))), listed.stdout
    result = _tsc("--project", str(CONFIG), "--pretty", "false")
    errors = ERROR.findall(result.stdout)
    assert result.returncode == 0 and not errors, (
        f"tsc found {len(errors)} errors:\n{result.stdout[-6000:]}{result.stderr[-2000:]}"
    )


def test_tsc_reports_a_wrong_field_and_a_direct_write_to_the_state(tmp_path: Path) -> None:
    """The check can fail: a module reading a field its API type lacks is refused, and so
    is one writing the state without `update` (which announces every change)."""
    module = tmp_path / "wrong.js"
    module.write_text(
        f'import {{ state }} from "{(ROOT / "frontend" / "js" / "state.js").as_posix()}";\n'
        "/** @param {MessageOut} message */\n"
        "export function shown(message) {\n"
        "  state.busy = null;\n"
        "  return message.indx;\n"
        "}\n",
        encoding="utf-8",
    )
    config = tmp_path / "jsconfig.json"
    types = ROOT / "frontend" / "js" / "types.js"
    config.write_text(
        json.dumps({"extends": str(CONFIG), "include": [str(types), str(module)]}),
        encoding="utf-8",
    )
    result = _tsc("--project", str(config), "--pretty", "false")
    codes = [code for file, _, code in ERROR.findall(result.stdout) if file.endswith("wrong.js")]
    # TS2540: a read-only property written; TS2551: no such property (did you mean...).
    assert codes == ["TS2540", "TS2551"], result.stdout
