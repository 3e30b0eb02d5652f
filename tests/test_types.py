"""The type annotations are checked: pyright runs on backend/ and desktop/ (its settings
are `[tool.pyright]` in pyproject.toml) and must find no error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pyright() -> str:
    """The pyright of the test environment (from PyPI, in the test extras)."""
    found = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("pyright is not installed: install the test extras (`.[test]`)")
    return found


def test_pyright_finds_no_error() -> None:
    result = subprocess.run(
        [_pyright(), "--outputjson", "--pythonpath", sys.executable],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"pyright did not run:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    shown = "\n".join(
        f"{Path(d['file']).relative_to(ROOT)}:{d['range']['start']['line'] + 1}: {d['message']}"
        for d in errors[:50]
    )
    assert report["summary"]["filesAnalyzed"] > 100  # the whole app, not a stray folder
    assert errors == [], f"pyright found {len(errors)} errors:\n{shown}"
