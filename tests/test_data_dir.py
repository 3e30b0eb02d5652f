"""The data dir is private to its user whatever the umask; an old install is tightened."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldline.config import load_config
from foldline.config_toml import ensure_config, save_config
from foldline.core.messages import assistant, user
from foldline.logging_setup import setup_logging
from foldline.paths import DataDirUnusable, make_private, prepare_data_dir
from foldline.store import Store


@pytest.fixture(autouse=True)
def loose_umask() -> Iterator[None]:
    """Every test starts with the common 022 and gets the process' umask back after."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _modes(root: Path) -> dict[str, int]:
    modes = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        modes[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return modes


def test_a_fresh_data_dir_and_everything_written_in_it_are_private(tmp_path: Path) -> None:
    data_dir = prepare_data_dir(tmp_path / "data")
    ensure_config(data_dir)
    save_config(data_dir, load_config(data_dir))
    setup_logging(data_dir)
    logging.getLogger("foldline.test").warning("written to the log")
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(title="t")
        store.append_messages(conversation.id, [user("hi"), assistant("hello")])
        modes = _modes(data_dir)
    assert {"foldline.db", "foldline.db-wal", "config.toml", "logs/foldline.log"} <= set(modes)
    for name, mode in modes.items():
        is_dir = (data_dir / name).is_dir()
        assert mode == (0o700 if is_dir else 0o600), (name, oct(mode))


def test_an_existing_install_is_tightened_on_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "old"
    (data_dir / "logs").mkdir(parents=True)
    (data_dir / "webview" / "Local Storage").mkdir(parents=True)
    for name in (
        "foldline.db",
        "foldline.db-wal",
        "foldline.db-shm",
        "config.toml",
        "window.json",
        "logs/foldline.log",
        "webview/Local Storage/leveldb",
    ):
        (data_dir / name).write_text("x")
        (data_dir / name).chmod(0o644)
    for directory in (data_dir, data_dir / "logs", data_dir / "webview"):
        directory.chmod(0o755)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not ours")
    elsewhere.chmod(0o644)
    (data_dir / "link").symlink_to(elsewhere)

    prepare_data_dir(data_dir)

    for name, mode in _modes(data_dir).items():
        if name == "link":
            continue
        is_dir = (data_dir / name).is_dir()
        assert mode == (0o700 if is_dir else 0o600), (name, oct(mode))
    # A symbolic link's target is not the data dir's to change.
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644


def test_tightening_never_adds_a_permission(tmp_path: Path) -> None:
    (tmp_path / "ro.txt").write_text("x")
    (tmp_path / "ro.txt").chmod(0o444)
    make_private(tmp_path)
    assert stat.S_IMODE((tmp_path / "ro.txt").stat().st_mode) == 0o400


def test_a_store_opened_directly_keeps_its_files_private(tmp_path: Path) -> None:
    with Store(tmp_path / "foldline.db") as store:
        store.create_conversation(title="t")
        for name in ("foldline.db", "foldline.db-wal", "foldline.db-shm"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name


def test_a_data_dir_that_cannot_be_created_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    with pytest.raises(DataDirUnusable, match="cannot create the data directory"):
        prepare_data_dir(tmp_path / "file" / "data")
