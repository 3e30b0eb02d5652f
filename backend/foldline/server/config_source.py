"""The app's configuration as the running server sees it: re-read when the file changes.

The Settings page writes `config.toml` through the API, and people edit it by hand; the
chat service asks for the configuration at the start of every turn, so both kinds of
change apply to the next turn without a restart. Reading is skipped while the file's
modification time and size are unchanged.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from foldline.config import AppConfig, load_config
from foldline.config_toml import save_config

log = logging.getLogger("foldline.server")


class ConfigSource:
    """`source()` is the current `AppConfig`; `source.save(config)` writes and adopts one."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._lock = threading.Lock()
        self._config: AppConfig | None = None
        self._stamp: tuple[int, int] | None = None

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            stat = (self.data_dir / "config.toml").stat()
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def __call__(self) -> AppConfig:
        with self._lock:
            stamp = self._file_stamp()
            if self._config is None or stamp != self._stamp:
                try:
                    self._config = load_config(self.data_dir)
                except Exception:
                    # A half-edited file must not take the running app down: keep the
                    # last good configuration and say why in the log.
                    if self._config is None:
                        raise
                    log.warning("config.toml could not be read; keeping the previous settings")
                self._stamp = stamp
            return self._config

    def save(self, config: AppConfig) -> None:
        with self._lock:
            save_config(self.data_dir, config)
            self._config = config
            self._stamp = self._file_stamp()
