"""The product explains itself: no reference to an outside design brief in what ships
or what a user reads, and the test tools are pinned below versions that would break."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from foldline.config import DEFAULT_CONFIG_TEXT, AppConfig
from foldline.config_toml import dumps_config

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("README.md", "docs", "backend", "desktop", "frontend/js", "frontend/css", "benchmarks")
FORBIDDEN = re.compile(r"DESIGN §|DESIGN\.md|\.\./shared/|design brief")


def _shipped_files() -> list[Path]:
    files: list[Path] = []
    for entry in SHIPPED:
        path = REPO / entry
        if path.is_file():
            files.append(path)
            continue
        files += [
            f
            for f in path.rglob("*")
            if f.is_file() and f.suffix in {".py", ".md", ".js", ".css", ".sh", ".html", ".toml"}
        ]
    return files


def test_no_shipped_file_cites_an_outside_design_brief() -> None:
    files = _shipped_files()
    assert len(files) > 50
    offenders = [
        f"{file.relative_to(REPO)}:{number}"
        for file in files
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert offenders == []


def test_the_generated_config_cites_only_the_product_docs() -> None:
    for text in (DEFAULT_CONFIG_TEXT, dumps_config(AppConfig())):
        assert not FORBIDDEN.search(text)
        assert "docs/configuration.md" in text


def test_pytest_has_an_upper_bound() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    pins = [
        p for p in project["project"]["optional-dependencies"]["test"] if p.startswith("pytest")
    ]
    pytest_pin = next(p for p in pins if re.match(r"pytest[<>=!~ ]", p))
    assert re.search(r"<\s*10\b", pytest_pin), pytest_pin
