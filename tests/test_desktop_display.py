"""Deciding between the window and the browser, and naming the fix when Qt cannot load."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from foldline_desktop.display import (
    INSTALL_HINT,
    QT_APT_PACKAGES,
    has_display,
    probe_qt,
    x_display_problem,
)
from foldline_desktop.window import (
    has_gpu_device,
    page_url,
    prepare_qt_environment,
    restore_user_environment,
)

REPO = Path(__file__).resolve().parents[1]


def _reachable(display: str) -> None:
    return None


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"DISPLAY": ""}, False),
        ({"DISPLAY": ":0"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0"}, True),
        ({"DISPLAY": "", "WAYLAND_DISPLAY": ""}, False),
    ],
)
def test_display_detection_on_linux(environ: dict[str, str], expected: bool) -> None:
    assert has_display(environ, platform="linux") is expected


def test_macos_and_windows_always_have_a_display() -> None:
    assert has_display({}, platform="darwin")
    assert has_display({}, platform="win32")


def test_missing_shared_library_names_the_apt_fix() -> None:
    def importer(name: str) -> object:
        if name == "PyQt6.QtWebEngineWidgets":
            raise ImportError(
                "libnss3.so: cannot open shared object file: No such file or directory"
            )
        return object()

    problem = probe_qt({"DISPLAY": ":0"}, import_module=importer, display_problem=_reachable)
    assert problem is not None
    assert problem.detail.startswith("libnss3.so")
    assert problem.fix == INSTALL_HINT
    assert "libnss3" in problem.one_line() and "apt-get install" in problem.one_line()


def test_missing_xcb_plugin_dependency_is_caught_before_qt_would_abort() -> None:
    def loader(path: str) -> object:
        assert path.endswith("libqxcb.so")
        raise OSError("libxcb-cursor.so.0: cannot open shared object file: No such file")

    problem = probe_qt(
        {"DISPLAY": ":0"},
        import_module=lambda name: object(),
        load_library=loader,
        display_problem=_reachable,
    )
    assert problem is not None
    assert "libxcb-cursor.so.0" in problem.detail
    assert "libxcb-cursor0" in problem.fix


def test_missing_python_package_suggests_reinstalling() -> None:
    def importer(name: str) -> object:
        raise ImportError("No module named 'webview'")

    problem = probe_qt({"DISPLAY": ":0"}, import_module=importer, display_problem=_reachable)
    assert problem is not None
    assert "pip install" in problem.fix


def test_this_machine_can_load_qt() -> None:
    # install.sh installs the libraries; if this fails, the desktop e2e test would too.
    assert probe_qt({"DISPLAY": ":0"}, display_problem=_reachable) is None


def test_an_unreachable_x_display_is_reported_before_qt_would_abort() -> None:
    # Nothing listens on display 4242: libxcb says so as a value, Qt would abort.
    assert x_display_problem(":4242") == "cannot connect to the X display :4242"
    problem = probe_qt({"DISPLAY": ":4242"})
    assert problem is not None
    assert "DISPLAY" in problem.fix


def test_on_wayland_the_x_display_is_not_required() -> None:
    def unreachable(display: str) -> str:
        return "cannot connect"

    problem = probe_qt(
        {"DISPLAY": ":4242", "WAYLAND_DISPLAY": "wayland-0"},
        import_module=lambda name: object(),
        load_library=lambda path: object(),
        display_problem=unreachable,
    )
    assert problem is None


def test_install_script_and_app_agree_on_the_qt_packages() -> None:
    script = (REPO / "desktop" / "install.sh").read_text(encoding="utf-8")
    block = re.search(r"QT_APT_PACKAGES=\(\n(.*?)\n\)", script, re.DOTALL)
    assert block is not None
    assert tuple(block.group(1).split()) == QT_APT_PACKAGES


def test_token_and_conversation_travel_in_the_fragment_only() -> None:
    url = page_url("http://127.0.0.1:5123/", "t0k/en+=", "conv 7")
    before_fragment, _, fragment = url.partition("#")
    assert before_fragment == "http://127.0.0.1:5123/"
    assert fragment == "token=t0k%2Fen%2B%3D&c=conv%207"
    assert page_url("http://127.0.0.1:5123", "abc", None) == "http://127.0.0.1:5123/#token=abc"


def test_no_sandbox_is_added_as_root_without_dropping_user_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("foldline_desktop.window.has_gpu_device", lambda: True)
    environ = {"QTWEBENGINE_CHROMIUM_FLAGS": "--force-dark-mode"}
    prepare_qt_environment(environ)
    prepare_qt_environment(environ)
    # Without the sandbox, Chromium also runs in the app's own process.
    flags = environ["QTWEBENGINE_CHROMIUM_FLAGS"]
    assert flags == "--force-dark-mode --no-sandbox --single-process"
    assert environ["PYWEBVIEW_GUI"] == "qt"


def test_no_sandbox_is_not_forced_on_a_normal_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("foldline_desktop.window.has_gpu_device", lambda: True)
    environ: dict[str, str] = {}
    prepare_qt_environment(environ)
    assert "QTWEBENGINE_CHROMIUM_FLAGS" not in environ


def test_qt_storage_goes_under_the_data_dir_and_the_person_s_own_comes_back(
    tmp_path: Path,
) -> None:
    environ = {"XDG_CACHE_HOME": "/home/me/.cache"}
    prepare_qt_environment(environ, tmp_path)
    assert environ["XDG_DATA_HOME"] == str(tmp_path / "webview" / "qt-data")
    assert environ["XDG_CACHE_HOME"] == str(tmp_path / "webview" / "qt-cache")
    restore_user_environment(environ)
    assert environ["XDG_CACHE_HOME"] == "/home/me/.cache"
    assert "XDG_DATA_HOME" not in environ
    assert not any(key.startswith("FOLDLINE_ORIGINAL_") for key in environ)


def test_without_a_gpu_qt_and_chromium_draw_in_software(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setattr("foldline_desktop.window.has_gpu_device", lambda: False)
    environ = {"QTWEBENGINE_CHROMIUM_FLAGS": "--force-dark-mode", "QT_QUICK_BACKEND": "rhi"}
    prepare_qt_environment(environ)
    prepare_qt_environment(environ)
    assert environ["QT_XCB_GL_INTEGRATION"] == "none"
    # The person's own choice is kept.
    assert environ["QT_QUICK_BACKEND"] == "rhi"
    assert environ["QTWEBENGINE_CHROMIUM_FLAGS"] == "--force-dark-mode --disable-gpu"


def test_with_a_gpu_the_drawing_is_left_to_qt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setattr("foldline_desktop.window.has_gpu_device", lambda: True)
    environ: dict[str, str] = {}
    prepare_qt_environment(environ)
    assert "QT_XCB_GL_INTEGRATION" not in environ
    assert "QT_QUICK_BACKEND" not in environ
    assert "QTWEBENGINE_CHROMIUM_FLAGS" not in environ


def test_a_gpu_is_a_render_node_or_nvidia_s_driver(tmp_path: Path) -> None:
    assert not has_gpu_device(tmp_path / "missing")
    (tmp_path / "dri").mkdir()
    (tmp_path / "dri" / "card0").touch()
    assert not has_gpu_device(tmp_path)
    (tmp_path / "dri" / "renderD128").touch()
    assert has_gpu_device(tmp_path)
    nvidia = tmp_path / "nvidia"
    nvidia.mkdir()
    assert not has_gpu_device(nvidia)
    (nvidia / "nvidiactl").touch()
    assert has_gpu_device(nvidia)


def test_a_sandbox_turned_off_by_the_person_also_runs_chromium_in_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("foldline_desktop.window.has_gpu_device", lambda: True)
    environ = {"QTWEBENGINE_DISABLE_SANDBOX": "1"}
    prepare_qt_environment(environ)
    assert environ["QTWEBENGINE_CHROMIUM_FLAGS"] == "--single-process"
