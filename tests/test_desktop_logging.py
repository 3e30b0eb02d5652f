"""The log file: where it goes, that it rotates, and that secrets never reach it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from logging.handlers import RotatingFileHandler
from pathlib import Path

import pytest

from foldline import logging_setup
from foldline.logging_setup import (
    REDACTED,
    log_file_path,
    redact,
    register_secret,
    setup_logging,
)


@pytest.fixture
def clean_root_logger() -> Iterator[logging.Logger]:
    """Remove whatever handlers a test adds to the root logger, and forget its secrets."""
    root = logging.getLogger()
    handlers_before = list(root.handlers)
    level_before = root.level
    secrets_before = set(logging_setup._registered_secrets)
    yield root
    for handler in root.handlers:
        if handler not in handlers_before:
            handler.close()
    root.handlers = handlers_before
    root.setLevel(level_before)
    logging_setup._registered_secrets.clear()
    logging_setup._registered_secrets.update(secrets_before)


def _file_handlers(root: logging.Logger, path: Path) -> list[RotatingFileHandler]:
    return [
        handler
        for handler in root.handlers
        if isinstance(handler, RotatingFileHandler) and Path(handler.baseFilename) == path
    ]


def test_setup_creates_the_log_file_under_logs_and_writes_records(
    tmp_path: Path, clean_root_logger: logging.Logger
) -> None:
    path = setup_logging(tmp_path)
    assert path == tmp_path / "logs" / "foldline.log" == log_file_path(tmp_path)
    logging.getLogger("foldline.test").info("first run of %s", "Foldline")
    for handler in _file_handlers(clean_root_logger, path):
        handler.flush()
    assert "first run of Foldline" in path.read_text(encoding="utf-8")


def test_setup_twice_adds_one_handler(tmp_path: Path, clean_root_logger: logging.Logger) -> None:
    first = setup_logging(tmp_path)
    second = setup_logging(tmp_path)
    assert first == second
    assert len(_file_handlers(clean_root_logger, first)) == 1


def test_the_log_rotates_instead_of_growing(
    tmp_path: Path, clean_root_logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging_setup, "MAX_LOG_BYTES", 2_000)
    monkeypatch.setattr(logging_setup, "LOG_BACKUP_COUNT", 2)
    path = setup_logging(tmp_path)
    logger = logging.getLogger("foldline.rotation")
    for line in range(200):
        logger.info("line %d %s", line, "x" * 60)
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == ["foldline.log", "foldline.log.1", "foldline.log.2"]
    assert all(p.stat().st_size <= 2_200 for p in path.parent.iterdir())


def test_registered_token_is_redacted_from_messages_arguments_and_tracebacks(
    tmp_path: Path, clean_root_logger: logging.Logger
) -> None:
    token = "Zq8-per-launch-token-2f9c1e"
    register_secret(token)
    path = setup_logging(tmp_path)
    logger = logging.getLogger("foldline.secrets")
    logger.info("opening http://127.0.0.1:5000/#token=%s", token)
    logger.warning("header was %s", {"authorization": f"Bearer {token}"})
    try:
        raise ValueError(f"bad token {token}")
    except ValueError:
        logger.exception("request failed")
    for handler in _file_handlers(clean_root_logger, path):
        handler.flush()
    text = path.read_text(encoding="utf-8")
    assert token not in text
    assert text.count(REDACTED) >= 3
    assert "ValueError: bad token [redacted]" in text


@pytest.mark.parametrize(
    ("raw", "secret"),
    [
        ("key sk-ant-api03-AbCdEf0123456789xyz was rejected", "sk-ant-api03-AbCdEf0123456789xyz"),
        ("OPENAI key sk-proj-1234567890abcdefGHIJ", "sk-proj-1234567890abcdefGHIJ"),
        ("Authorization: Bearer abc.def-ghi_jkl0123", "abc.def-ghi_jkl0123"),
        ("GET /#token=QWERTYUIOP12345&conversation=7", "QWERTYUIOP12345"),
        ('{"apiKey": "local-secret-value-9"}', "local-secret-value-9"),
        ("x-api-key: 0123456789abcdef", "0123456789abcdef"),
    ],
)
def test_secret_shaped_text_is_redacted_even_when_not_registered(raw: str, secret: str) -> None:
    cleaned = redact(raw)
    assert secret not in cleaned
    assert REDACTED in cleaned


def test_ordinary_text_is_left_alone() -> None:
    text = "folded 42 messages: tokens 91000 -> 12000 (trigger auto, version 3)"
    assert redact(text) == text


def test_short_values_are_not_registered_as_secrets(clean_root_logger: logging.Logger) -> None:
    # A two-letter "secret" would blank out every word containing it.
    register_secret("ab")
    assert redact("about abstract tabs") == "about abstract tabs"
