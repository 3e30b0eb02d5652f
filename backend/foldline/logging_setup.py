"""Logging to `<data-dir>/logs/foldline.log`, rotated, with secrets scrubbed.

Both the desktop window and `foldline serve` call `setup_logging(data_dir)` once at
start. Every record that reaches the file goes through `RedactingFilter`, which removes
the per-launch access token, API keys that were registered with `register_secret`, and
anything that merely looks like a key or a bearer token: a log file is the first thing a
user attaches to a bug report, so it must be safe to share.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from logging.handlers import RotatingFileHandler
from pathlib import Path

from foldline.paths import PRIVATE_DIR, DataDirUnusable

LOG_FILE_NAME = "foldline.log"
# Five files of 2 MB keep about a week of heavy use while staying small enough to attach.
MAX_LOG_BYTES = 2 * 1024 * 1024
LOG_BACKUP_COUNT = 4
REDACTED = "[redacted]"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"

# Shapes of secrets that must never reach a log even if nobody registered them: provider
# keys (Anthropic "sk-ant-…", OpenAI "sk-…"/"sk-proj-…"), bearer headers, `token=`
# query or fragment parameters, and `api_key=`/`"apiKey": "…"` assignments.
_SECRET_SHAPES: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"(?i)((?:[?#&]|\b)token=)[^&\s\"']+"),
    re.compile(r"(?i)((?:api[_-]?key|x-api-key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"),
)

_registered_secrets: set[str] = set()
_secrets_lock = threading.Lock()
# Shorter values could collide with ordinary words and blank out innocent log text.
_MIN_SECRET_LENGTH = 8


def register_secret(value: str | None) -> None:
    """Make `value` (a token or an API key) disappear from every later log line."""
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _secrets_lock:
            _registered_secrets.add(value)


def redact(text: str) -> str:
    """`text` with registered secrets and secret-shaped substrings replaced by `[redacted]`."""
    with _secrets_lock:
        # Longest first, so a secret that contains another is removed whole.
        secrets = sorted(_registered_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for shape in _SECRET_SHAPES:
        if shape.groups:
            text = shape.sub(lambda match: match.group(1) + REDACTED, text)
        else:
            text = shape.sub(REDACTED, text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites each record's final message (and traceback text) with `redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg = cleaned
            record.args = None
        if record.exc_info and not record.exc_text:
            # Format the traceback now so that the secret-free text is what gets written.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def log_file_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / "logs" / LOG_FILE_NAME


def setup_logging(data_dir: str | os.PathLike[str], level: int = logging.INFO) -> Path:
    """Send the root logger to the rotating log file in `data_dir`; returns the file's path.

    Idempotent: calling it again for the same file does not add a second handler, so the
    desktop shell and the server launcher can both call it.
    """
    path = log_file_path(data_dir)
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler, RotatingFileHandler) and Path(handler.baseFilename) == path:
            return path
    try:
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        handler = RotatingFileHandler(
            path, maxBytes=MAX_LOG_BYTES, backupCount=LOG_BACKUP_COUNT, encoding="utf-8"
        )
    except OSError as error:
        # Said in one sentence by the launchers, not as a traceback from deep in logging.
        raise DataDirUnusable(
            f"cannot write the log file {path}: {error.strerror}. Make the data directory "
            "writable, or choose another with --data-dir or FOLDLINE_DATA_DIR."
        ) from None
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
    if root.level > level or root.level == logging.NOTSET:
        root.setLevel(level)
    # uvicorn's default configuration stops its loggers from propagating; make sure its
    # errors and access lines reach the file too (they carry no token: the token travels
    # in a header or a URL fragment, never in a logged path).
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).propagate = True
    return path
