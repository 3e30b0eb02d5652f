"""The code is ruff-clean, and its complexity rule holds everywhere: ruff's McCabe check
(max 15 branches a function, `[tool.ruff.lint.mccabe]` in pyproject.toml) decides where
a function is too big, with no file or line excused from it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("backend", "desktop", "tests", "benchmarks")


def _ruff() -> str:
    """The ruff of the test environment (from PyPI, in the test extras)."""
    found = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("ruff is not installed: install the test extras (`.[test]`)")
    return found


def _run(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_ruff(), *arguments, *CHECKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_ruff_finds_nothing() -> None:
    result = _run("check", "--no-cache", "--output-format", "concise")
    assert result.returncode == 0, f"ruff check:\n{result.stdout[-4000:]}{result.stderr[-2000:]}"


def test_the_code_is_formatted() -> None:
    result = _run("format", "--check", "--no-cache")
    assert result.returncode == 0, f"ruff format:\n{result.stdout[-4000:]}{result.stderr[-2000:]}"


def test_the_complexity_rule_has_no_exceptions() -> None:
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "C90" in lint["select"] and lint["mccabe"]["max-complexity"] == 15
    ignored = [*lint.get("ignore", []), *lint.get("extend-ignore", [])]
    for rules in lint.get("per-file-ignores", {}).values():
        ignored.extend(rules)
    assert not [rule for rule in ignored if rule.startswith("C9")]
    # A noqa comment naming no rule silences every rule on its line, complexity included.
    excused = re.compile(r"#\s*noqa(?!:\s*[A-Z]+[0-9])|#\s*noqa:.*\bC9")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in CHECKED
        for path in (ROOT / folder).rglob("*.py")
        if "node_modules" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if excused.search(line)
    ]
    assert found == []
