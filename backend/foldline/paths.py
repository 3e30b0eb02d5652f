"""Where Foldline keeps its data: `--data-dir`, else `FOLDLINE_DATA_DIR`, else the OS default."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def resolve_data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory, created if missing."""
    if explicit:
        path = Path(explicit)
    elif os.environ.get("FOLDLINE_DATA_DIR"):
        path = Path(os.environ["FOLDLINE_DATA_DIR"])
    else:
        path = Path(platformdirs.user_data_dir("foldline", appauthor=False))
    path = path.expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path
