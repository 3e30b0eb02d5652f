"""desktop/install.sh against stand-ins for dpkg, apt-get, id and the venv's Python.

The script is copied into a scratch "repository" whose `.venv/bin/python` is a stub that
records pip calls, and `PATH` starts with stubs for the system tools, so every branch
(nothing missing, root, not root, repeat run, changed pyproject) runs in milliseconds
without touching this machine's packages or venv.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FAKE_PYTHON = """#!/usr/bin/env bash
if [[ "${1:-}" == "-m" && "${2:-}" == "pip" ]]; then
  echo "pip $*" >> "$LOG"
fi
exit 0
"""

FAKE_DPKG_QUERY = """#!/usr/bin/env bash
# Reports every package installed except those listed in $MISSING.
package="${@: -1}"
for missing in $MISSING; do
  [[ "$missing" == "$package" ]] && exit 1
done
printf 'install ok installed'
"""

FAKE_APT_GET = """#!/usr/bin/env bash
echo "apt-get $*" >> "$LOG"
if [[ -n "${APT_FAILS:-}" && " $* " == *" install "* ]]; then
  echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2
  exit 100
fi
"""

FAKE_ID = """#!/usr/bin/env bash
echo "$FAKE_UID"
"""


def _write_executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "desktop").mkdir(parents=True)
    (repo / "desktop" / "install.sh").write_text(
        (REPO / "desktop" / "install.sh").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (repo / "pyproject.toml").write_text('[project]\nname = "foldline"\n', encoding="utf-8")
    _write_executable(repo / ".venv" / "bin" / "python", FAKE_PYTHON)
    tools = tmp_path / "bin"
    _write_executable(tools / "dpkg-query", FAKE_DPKG_QUERY)
    _write_executable(tools / "apt-get", FAKE_APT_GET)
    _write_executable(tools / "id", FAKE_ID)
    # Passwordless sudo is absent: `sudo -n true` fails, as for most desktop users.
    _write_executable(tools / "sudo", "#!/usr/bin/env bash\nexit 1\n")
    return repo


def _run(
    repo: Path, *args: str, missing: str = "", uid: str = "0", apt_fails: bool = False
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = repo.parent / "calls.log"
    log.unlink(missing_ok=True)
    environ = {
        "PATH": f"{repo.parent / 'bin'}:/usr/bin:/bin",
        "HOME": str(repo.parent),
        "LOG": str(log),
        "MISSING": missing,
        "FAKE_UID": uid,
        "APT_FAILS": "1" if apt_fails else "",
    }
    result = subprocess.run(
        ["bash", str(repo / "desktop" / "install.sh"), *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return result, calls


def test_app_install_then_repeat_run_does_nothing(scratch: Path) -> None:
    result, calls = _run(scratch)
    assert result.returncode == 0, result.stderr
    assert calls == ["pip -m pip install --quiet --disable-pip-version-check -e ."]
    assert "ready: start Foldline" in result.stdout

    again, calls = _run(scratch)
    assert again.returncode == 0
    assert calls == []


def test_test_install_adds_the_extra_and_covers_a_later_app_install(scratch: Path) -> None:
    result, calls = _run(scratch, "--test")
    assert result.returncode == 0, result.stderr
    assert calls == ["pip -m pip install --quiet --disable-pip-version-check -e .[test]"]
    # The test install includes the app's dependencies: nothing more to do.
    _, calls = _run(scratch)
    assert calls == []


def test_a_changed_pyproject_reinstalls(scratch: Path) -> None:
    _run(scratch)
    with (scratch / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write('dependencies = ["new-thing"]\n')
    _, calls = _run(scratch)
    assert len(calls) == 1 and calls[0].startswith("pip ")


def test_as_root_missing_packages_are_installed_with_one_update(scratch: Path) -> None:
    result, calls = _run(scratch, "--test", missing="libxcb-cursor0 xvfb")
    assert result.returncode == 0, result.stderr
    apt_calls = [call for call in calls if call.startswith("apt-get")]
    # apt-get waits for a dpkg lock another apt holds (apt's own timeout), and says so.
    assert apt_calls == [
        "apt-get -o DPkg::Lock::Timeout=600 update -qq",
        "apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "
        "libxcb-cursor0 xvfb -qq",
    ]
    assert "waiting up to 600 s" in result.stdout


def test_a_failed_system_install_stops_the_test_install_loudly(scratch: Path) -> None:
    result, calls = _run(scratch, "--test", missing="xvfb", apt_fails=True)
    assert result.returncode == 1
    assert "Could not get lock" in result.stderr
    assert "the test suite cannot run" in result.stderr
    # Nothing after it ran: no pip install on top of a broken system install.
    assert not [call for call in calls if call.startswith("pip ")]


def test_a_failed_system_install_lets_the_app_install_go_on(scratch: Path) -> None:
    result, calls = _run(scratch, missing="libegl1", apt_fails=True)
    assert result.returncode == 0, result.stderr
    assert "apt-get failed" in result.stdout
    assert [call for call in calls if call.startswith("pip ")]


def test_nothing_missing_means_no_apt_at_all(scratch: Path) -> None:
    _, calls = _run(scratch, "--test")
    assert not [call for call in calls if call.startswith("apt-get")]


def test_test_packages_are_only_wanted_with_test(scratch: Path) -> None:
    _, calls = _run(scratch, missing="chromium xvfb")
    assert not [call for call in calls if call.startswith("apt-get")]


def test_without_root_the_exact_apt_line_is_printed_and_install_goes_on(scratch: Path) -> None:
    result, calls = _run(scratch, missing="libegl1 libnss3", uid="1000")
    assert result.returncode == 0, result.stderr
    assert "sudo apt-get install -y --no-install-recommends libegl1 libnss3" in result.stdout
    assert not [call for call in calls if call.startswith("apt-get")]
    assert [call for call in calls if call.startswith("pip ")]


def test_unknown_option_is_a_usage_error(scratch: Path) -> None:
    result, calls = _run(scratch, "--tests")
    assert result.returncode == 2
    assert "usage: bash desktop/install.sh [--test]" in result.stderr
    assert calls == []


def test_an_unusable_venv_is_reported_not_silently_replaced(scratch: Path) -> None:
    _write_executable(scratch / ".venv" / "bin" / "python", "#!/usr/bin/env bash\nexit 1\n")
    result, _ = _run(scratch)
    assert result.returncode == 1
    assert "remove .venv and rerun" in result.stderr
    assert (scratch / ".venv" / "bin" / "python").exists()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash desktop/install.sh --test && .venv/bin/python -m pytest" in script
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "bash desktop/install.sh --test && .venv/bin/python -m pytest" in readme
    assert "bash desktop/install.sh && .venv/bin/foldline" in readme
    assert os.access(REPO / ".ci" / "run", os.X_OK)


FAKE_NPM = """#!/usr/bin/env bash
echo "npm $* in $(basename "$PWD")" >> "$LOG"
mkdir -p node_modules
"""


def test_test_install_runs_npm_ci_for_the_mcp_test_programs_once(scratch: Path) -> None:
    node = scratch / "tests" / "node"
    node.mkdir(parents=True)
    (node / "package-lock.json").write_text('{"lockfileVersion": 3}\n', encoding="utf-8")
    _write_executable(scratch.parent / "bin" / "npm", FAKE_NPM)
    result, calls = _run(scratch, "--test")
    assert result.returncode == 0, result.stderr
    assert "npm ci --include=dev --no-audit --no-fund in node" in calls
    # A repeat run with the same lock file does nothing; a changed one runs again.
    _, calls = _run(scratch, "--test")
    assert [c for c in calls if c.startswith("npm")] == []
    (node / "package-lock.json").write_text('{"lockfileVersion": 3, "x": 1}\n', encoding="utf-8")
    _, calls = _run(scratch, "--test")
    assert [c for c in calls if c.startswith("npm")] == [
        "npm ci --include=dev --no-audit --no-fund in node"
    ]
    # The app install never needs them.
    (node / "package-lock.json").write_text('{"lockfileVersion": 3, "x": 2}\n', encoding="utf-8")
    _, calls = _run(scratch)
    assert [c for c in calls if c.startswith("npm")] == []
