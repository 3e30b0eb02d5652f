"""Mutation testing of the engine: how many small bugs in a `core/` module would the tests
in `tests/core` notice?

    .venv/bin/python tests/mutation.py planning policy view pruning

Each module runs on its own with mutmut (in the test extras), Hypothesis on its
derandomized `mutation` profile (so a mutant's verdict does not depend on luck), in a
staging directory under `.mutation/`: mutmut finds a package only at the top of its
project or under `src/`, and Foldline's lives under `backend/`, so the package and the
engine tests are copied to where it looks. Not run in CI: it takes minutes per module.
`--children N` sets mutmut's parallel workers.

The summary prints, per module, the mutants killed among the non-cosmetic ones and the
survivors (`mutmut show NAME` in the staging directory shows a diff). A mutant is
cosmetic when it changes only the wording of a sentence (a string literal holding a
space: a `reason` shown in the UI, a prompt's prose); a mutated identifier-like string
(`"user"`, `"fold"`) is not cosmetic.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGING = ROOT / ".mutation"

STAGED_PYPROJECT = """\
[tool.mutmut]
source_paths = ["src/foldline"]
only_mutate = ["src/foldline/core/{module}.py"]
pytest_add_cli_args_test_selection = ["{tests}"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]

[tool.pytest.ini_options]
testpaths = ["tests"]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""


def stage(module: str, own_tests: bool) -> Path:
    """A fresh project directory holding the package under src/ and the engine tests."""
    directory = STAGING / module
    shutil.rmtree(directory, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / "backend" / "foldline", directory / "src" / "foldline", ignore=ignore)
    for tests in ("core", "data"):
        shutil.copytree(ROOT / "tests" / tests, directory / "tests" / tests, ignore=ignore)
    tests = f"tests/core/test_{module}.py" if own_tests else "tests/core"
    (directory / "pyproject.toml").write_text(STAGED_PYPROJECT.format(module=module, tests=tests))
    return directory


_STRING = re.compile(r"""[rbfRBF]*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")


def is_cosmetic(diff: str) -> bool:
    """True when every changed line differs from its original only inside prose strings."""
    removed = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    added = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    if not removed or len(removed) != len(added):
        return False
    for old, new in zip(removed, added, strict=True):
        if _STRING.sub('""', old) != _STRING.sub('""', new):
            return False
        old_strings = _STRING.findall(old)
        new_strings = _STRING.findall(new)
        changed = [a for a, b in zip(old_strings, new_strings, strict=True) if a != b]
        if not changed or any(" " not in literal for literal in changed):
            return False
    return True


def run(module: str, children: int, own_tests: bool) -> tuple[int, int, list[str], int]:
    """(killed, total, survivors, cosmetic) of one module's mutants; the cosmetic
    survivors are left out of `total` and `survivors`."""
    directory = stage(module, own_tests)
    mutmut = Path(sys.executable).with_name("mutmut")
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation"}
    finished = subprocess.run(
        [str(mutmut), "run", "--max-children", str(children)],
        cwd=directory,
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    if finished.returncode != 0:
        sys.exit(f"mutmut failed on {module}:\n{finished.stdout[-3000:]}{finished.stderr[-3000:]}")
    listing = subprocess.run(
        [str(mutmut), "results", "--all", "true"],
        cwd=directory,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    verdicts = re.findall(r"^\s*(\S+__mutmut_\d+): (.+)$", listing, flags=re.MULTILINE)
    survivors = []
    cosmetic = 0
    for name, verdict in verdicts:
        if verdict.strip() == "killed":
            continue
        diff = subprocess.run(
            [str(mutmut), "show", name], cwd=directory, env=env, capture_output=True, text=True
        ).stdout
        if is_cosmetic(diff):
            cosmetic += 1
        else:
            survivors.append(f"{name} ({verdict.strip()})")
    total = len(verdicts) - cosmetic
    return total - len(survivors), total, survivors, cosmetic


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="+", help="modules of foldline.core, e.g. planning")
    parser.add_argument("--children", type=int, default=2, help="parallel mutmut workers")
    parser.add_argument(
        "--own-tests",
        action="store_true",
        help="run only tests/core/test_MODULE.py against each mutant (much faster; a lower "
        "bound of what all of tests/core kills)",
    )
    args = parser.parse_args()
    for module in args.modules:
        killed, total, survivors, cosmetic = run(module, args.children, args.own_tests)
        share = killed / total if total else 0.0
        print(
            f"{module}: {killed} of {total} non-cosmetic mutants killed ({share:.1%}); "
            f"{cosmetic} cosmetic survivors left out"
        )
        for name in survivors:
            print(f"  survived: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
