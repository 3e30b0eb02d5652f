"""The package is layered: no import cycles, and a lower layer never imports a higher one.

Every import counts, wherever it is written: at the top of a module, inside a function
(a lazy import only delays a cycle, it does not remove it) or under `TYPE_CHECKING` (a
type-only import still means the lower module knows the higher one). A module-level
`__getattr__` is refused too: it is how a re-export hides a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import foldline
import foldline_desktop

PACKAGE_DIRS = (Path(foldline.__file__).parent, Path(foldline_desktop.__file__).parent)

# Lowest first. A module may import its own group and any group of a lower layer; groups
# in the same layer are independent of each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("foldline.core",),
    # A PDF read in a child process, bounded (below the uploads that check files).
    ("foldline.pdf_reading",),
    # `foldline.config_mcp` is the `[mcp_servers]` tables the configuration holds.
    (
        "foldline",
        "foldline.paths",
        "foldline.secrets",
        "foldline.tokenizers",
        "foldline.config_mcp",
        "foldline.uploads",
    ),
    # The API's public shapes: pydantic models over core types, used by chat and server alike.
    ("foldline.api",),
    ("foldline.logging_setup",),
    ("foldline.config",),
    # `foldline.mcp` here is its Settings helpers, naming, approvals and connections; the
    # parts that run tools in a turn build on the chat layer below the server.
    (
        "foldline.config_toml",
        "foldline.config_settings",
        "foldline.providers",
        "foldline.store",
        "foldline.mcp",
    ),
    ("foldline.chat", "foldline.testing", "foldline.token_cli", "foldline.doctor_cli"),
    ("foldline.mcp.results", "foldline.mcp.interaction"),
    ("foldline.mcp.manager",),
    ("foldline.server",),
    ("foldline_desktop",),
    ("foldline.cli",),
)
LAYER_OF = {group: rank for rank, groups in enumerate(LAYERS) for group in groups}


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package_dir in PACKAGE_DIRS:
        for path in package_dir.rglob("*.py"):
            parts = path.relative_to(package_dir.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


MODULES = _module_files()


def _owning_module(name: str) -> str | None:
    """The package module `name` lives in (`foldline.config.AppConfig` → `foldline.config`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(module: str, tree: ast.Module) -> Iterator[str]:
    is_package = MODULES[module].name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield f"{base}.{alias.name}"


def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets = {_owning_module(name) for name in _imported_names(module, tree)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


IMPORTS = _imports()


def _group(module: str) -> str:
    """The layer group a module belongs to: the longest group name that is its prefix."""
    candidates = [g for g in LAYER_OF if module == g or module.startswith(f"{g}.")]
    # The bare package `foldline` is a group of its own module only, not of everything.
    candidates = [g for g in candidates if g != "foldline" or module == "foldline"]
    assert candidates, f"{module} belongs to no layer: add it to LAYERS"
    return max(candidates, key=len)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_is_read() -> None:
    # Guards the two tests below against passing on an empty or misread graph.
    assert "foldline.core.view" in IMPORTS["foldline.chat.context"]
    assert "foldline.config" in IMPORTS["foldline.providers.registry"]
    assert "foldline.testing.fake_app" in IMPORTS["foldline.testing.server"]


def test_no_import_cycles() -> None:
    assert _cycles(IMPORTS) == []


def test_cycle_finder_finds_a_lazy_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_a_higher_or_sibling_layer() -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in IMPORTS.items()
        for target in targets
        if _group(target) != _group(module) and LAYER_OF[_group(target)] >= LAYER_OF[_group(module)]
    )
    assert wrong == []


def test_no_lazy_module_attributes() -> None:
    lazy = sorted(
        module
        for module, path in MODULES.items()
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
    )
    assert lazy == []
