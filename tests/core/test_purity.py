"""The engine stays pure: no module under foldline/core imports I/O, SDKs, web or a clock."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import foldline.core

CORE_DIR = Path(foldline.core.__file__).parent

BANNED_MODULES = frozenset(
    {
        # web and servers
        "fastapi",
        "starlette",
        "uvicorn",
        "webview",
        # provider SDKs and HTTP clients
        "anthropic",
        "openai",
        "httpx",
        "httpx2",
        "requests",
        "urllib",
        "http",
        "socket",
        # storage, files, processes
        "sqlite3",
        "sqlite_utils",
        "os",
        "pathlib",
        "shutil",
        "tempfile",
        "subprocess",
        # dynamic imports would get around every rule above
        "importlib",
        # the clock
        "time",
        "datetime",
        # the tokenizer is injected, never loaded by the engine
        "tiktoken",
        "tiktoken_ext",
    }
)
BANNED_FOLDLINE_PACKAGES = frozenset(
    {
        "foldline.providers",
        "foldline.store",
        "foldline.server",
        "foldline.chat",
        "foldline.testing",
        "foldline.tokenizers",
        "foldline.token_cli",
        "foldline.config",
        "foldline.paths",
        "foldline.cli",
    }
)


def imported_modules(source: str, module_name: str) -> set[str]:
    """Absolute names of every module imported by `source` (relative imports resolved)."""
    package_parts = module_name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            found.add(prefix)
            # `from foldline import providers` imports a banned package too.
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
    return found


def violations(imports: set[str]) -> set[str]:
    bad: set[str] = set()
    for name in imports:
        if name.split(".")[0] in BANNED_MODULES:
            bad.add(name)
        if any(name == p or name.startswith(p + ".") for p in BANNED_FOLDLINE_PACKAGES):
            bad.add(name)
    return bad


def core_modules() -> list[Path]:
    return sorted(CORE_DIR.rglob("*.py"))


def module_name_of(path: Path) -> str:
    relative = path.relative_to(CORE_DIR.parent.parent).with_suffix("")
    return ".".join(relative.parts)


def test_core_has_modules_to_check() -> None:
    names = {p.relative_to(CORE_DIR).as_posix() for p in core_modules()}
    assert {
        "tokens/counter.py",
        "wire/anthropic_messages.py",
        "budget.py",
        "calibration.py",
        "messages.py",
    } <= names


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: p.name)
def test_core_module_is_pure(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    bad = violations(imported_modules(source, module_name_of(path)))
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize(
    "source",
    [
        "import os",
        "import os.path as p",
        "from time import monotonic",
        "from datetime import datetime",
        "import tiktoken",
        "from httpx2 import Client",
        "from foldline.store import db",
        "from foldline import providers",
        "from ..providers.base import Usage",
        "from .. import tokenizers",
        "def f():\n    import sqlite3",
        "import importlib\nimportlib.import_module('os')",
    ],
)
def test_scanner_catches_impure_imports(source: str) -> None:
    assert violations(imported_modules(source, "foldline.core.example"))


@pytest.mark.parametrize(
    "source",
    [
        "import asyncio",
        "import json, math, re",
        "from collections.abc import Sequence",
        "from foldline.core.messages import Message",
        "from .wire import to_openai_messages",
        "from . import messages",
    ],
)
def test_scanner_allows_pure_imports(source: str) -> None:
    assert not violations(imported_modules(source, "foldline.core.example"))
