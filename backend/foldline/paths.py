"""Where Foldline keeps its data: `--data-dir`, else `FOLDLINE_DATA_DIR`, else the OS default.

The data dir holds every conversation, the settings and the logs: it is private to its
user whatever the umask. The directory is 0700 and every file in it 0600; new files are
created that way (the process umask is 077 once `prepare_data_dir` ran) and an existing
install is tightened on start.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


class DataDirUnusable(Exception):
    """The data dir cannot be created or written; the message says which and why."""


def resolve_data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory, created (private) if missing."""
    if explicit:
        path = Path(explicit)
    elif os.environ.get("FOLDLINE_DATA_DIR"):
        path = Path(os.environ["FOLDLINE_DATA_DIR"])
    else:
        path = Path(platformdirs.user_data_dir("foldline", appauthor=False))
    path = path.expanduser().resolve()
    try:
        path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    except OSError as error:
        raise DataDirUnusable(
            f"cannot create the data directory {path}: {error.strerror}. "
            "Choose another with --data-dir or FOLDLINE_DATA_DIR."
        ) from None
    return path


def make_private(data_dir: Path) -> None:
    """Take every group and other permission off the data dir and everything under it
    (a usual install ends up with directories 0700 and files 0600).

    Only ever removes permissions: a directory the person made read-only stays
    read-only (and is then reported as such). Symbolic links are left alone."""
    _tighten(data_dir, PRIVATE_DIR)
    for root, directories, files in os.walk(data_dir):
        for name in directories:
            _tighten(Path(root) / name, PRIVATE_DIR)
        for name in files:
            _tighten(Path(root) / name, PRIVATE_FILE)


def make_private_files(database: Path) -> None:
    """A database file and its WAL and shared-memory companions: 0600 at most."""
    for suffix in ("", "-wal", "-shm"):
        _tighten(database.with_name(database.name + suffix), PRIVATE_FILE)


def _tighten(path: Path, allowed: int) -> None:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return
        mode = stat.S_IMODE(info.st_mode)
        if mode & ~allowed:
            path.chmod(mode & allowed)
    except FileNotFoundError:
        pass  # removed meanwhile (a rotated log, a WAL checkpointed away)


def prepare_data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data dir, ready for this process: created, private, and writable.

    Sets the process umask to 077 first, so that everything created later (the
    database and its WAL, logs, config.toml, the window's state and web storage) is
    private without each writer having to remember it. Raises `DataDirUnusable` with a
    sentence for the person when the directory cannot be written (read-only, full, not
    ours).
    """
    os.umask(0o077)
    path = resolve_data_dir(explicit)
    try:
        make_private(path)
    except OSError as error:
        raise DataDirUnusable(
            f"cannot make the data directory {path} private: {error.strerror} "
            f"({error.filename}). It must belong to you and be writable."
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise DataDirUnusable(
            f"the data directory {path} is not writable. Make it writable, or choose "
            "another with --data-dir or FOLDLINE_DATA_DIR."
        )
    return path
