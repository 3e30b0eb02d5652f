"""`foldline` start-up faults and paper cuts, as real processes: where the data dir is,
the log `serve` writes, a read-only or damaged data dir, and `foldline doctor`."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from foldline.core.messages import assistant, user
from foldline.store import Store, doctor

NOBODY = 65534
START_SECONDS = 30


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FOLDLINE_")}


def _foldline(*args: str, user_id: int | None = None) -> list[str]:
    command = [sys.executable, "-m", "foldline.cli", *args]
    if user_id is None:
        return command
    setpriv = shutil.which("setpriv")
    assert setpriv is not None
    ids = [f"--reuid={user_id}", f"--regid={user_id}", "--clear-groups"]
    return [setpriv, *ids, *command]


def _serve_once(args: list[str]) -> tuple[int, str, str]:
    """Start `foldline ARGS`, wait for its line, stop it with SIGINT."""
    process = subprocess.Popen(
        _foldline(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=START_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, line + out, err


def test_a_data_dir_given_before_serve_is_the_one_used_and_serve_writes_its_log(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "before"
    code, out, _ = _serve_once(["--data-dir", str(data_dir), "serve"])
    assert code == 0
    assert out.startswith("Foldline is running at http://127.0.0.1:")
    assert (data_dir / "foldline.db").exists()
    log = (data_dir / "logs" / "foldline.log").read_text()
    assert "foldline serve starting" in log and "listening on 127.0.0.1" in log
    assert "stopping (signal)" in log
    # The token is in the printed URL and never in the log.
    assert out.split("#token=")[1].strip() not in log


def test_a_data_dir_after_serve_still_works(tmp_path: Path) -> None:
    data_dir = tmp_path / "after"
    code, _, _ = _serve_once(["serve", "--data-dir", str(data_dir)])
    assert code == 0
    assert (data_dir / "foldline.db").exists()


def _run(*args: str, user_id: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _foldline(*args, user_id=user_id),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=START_SECONDS,
    )


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_a_read_only_data_dir_is_one_sentence_and_exit_code_3() -> None:
    # Root may write anywhere: the server runs as `nobody` on a directory it owns but
    # may not write (under /tmp, as pytest's own temporary root is closed to others).
    parent = Path(tempfile.mkdtemp(prefix="foldline-readonly-"))
    try:
        parent.chmod(0o755)
        data_dir = parent / "readonly"
        data_dir.mkdir()
        os.chown(data_dir, NOBODY, NOBODY)
        data_dir.chmod(0o500)
        result = _run("serve", "--data-dir", str(data_dir), user_id=NOBODY)
    finally:
        shutil.rmtree(parent)
    assert result.returncode == 3
    assert "is not writable" in result.stderr and str(data_dir) in result.stderr
    assert "Traceback" not in result.stderr


def test_a_log_that_cannot_be_written_is_one_sentence_not_a_traceback(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "logs").write_text("a file where the log directory should be")
    result = _run("serve", "--data-dir", str(data_dir))
    assert result.returncode == 3
    assert "cannot write the log file" in result.stderr
    assert "Traceback" not in result.stderr


def _history(path: Path, conversations: int = 30) -> None:
    with Store(path) as store:
        for n in range(conversations):
            conversation = store.create_conversation(title=f"conversation {n}")
            store.append_messages(
                conversation.id, [user(f"question {n} " * 40), assistant(f"answer {n} " * 40)]
            )
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _damaged_copy(path: Path, table: str, pages: int, fill: bytes) -> bytes:
    """The file's bytes with `pages` of `table`'s leaf pages scribbled over.

    Leaf pages hold the table's rows, so the schema (which can spill onto any page as
    it grows) stays readable: the damage a salvage should get around, wherever the
    table happens to lie in the file.
    """
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [
        row[0]
        for row in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
            (table,),
        )
    ]
    conn.close()
    assert len(leaves) > pages, f"{table} has only {len(leaves)} leaf pages"
    damaged = bytearray(path.read_bytes())
    for pageno in leaves[len(leaves) // 2 : len(leaves) // 2 + pages]:
        offset = (pageno - 1) * page_size
        damaged[offset : offset + page_size] = fill * (page_size // len(fill))
    return bytes(damaged)


def test_a_damaged_database_stops_start_up_naming_it_and_doctor_salvages_it(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    database = data_dir / "foldline.db"
    _history(database)
    damaged = _damaged_copy(database, "messages", 2, b"\xde\xad")
    database.write_bytes(damaged)

    started = _run("serve", "--data-dir", str(data_dir))
    assert started.returncode != 0
    assert str(database) in started.stderr and "foldline doctor" in started.stderr
    assert database.read_bytes() == damaged  # start-up changed nothing

    doctor = _run("doctor", "--data-dir", str(data_dir))
    assert doctor.returncode == 0, doctor.stderr
    assert "damaged" in doctor.stdout and "Salvaged" in doctor.stdout
    backups = list(data_dir.glob("foldline.db.damaged-*Z"))
    assert len(backups) == 1 and backups[0].read_bytes() == damaged
    with Store(database) as store:
        salvaged = store.list_conversations()
    assert 0 < len(salvaged) <= 30
    assert _run("doctor", "--data-dir", str(data_dir)).stdout.endswith("nothing to do.\n")


def test_doctor_on_a_sound_database_changes_nothing(tmp_path: Path) -> None:
    database = tmp_path / "foldline.db"
    _history(database, conversations=2)
    before = database.read_bytes()
    result = _run("doctor", "--data-dir", str(tmp_path))
    assert result.returncode == 0
    assert "integrity check passed" in result.stdout
    assert database.read_bytes() == before
    assert not list(tmp_path.glob("foldline.db.*-*"))


def test_without_the_sqlite3_tool_doctor_copies_the_readable_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = tmp_path / "foldline.db"
    _history(database)
    database.write_bytes(_damaged_copy(database, "messages", 1, b"\x00\xff"))
    monkeypatch.setattr(doctor, "_recover_with_cli", lambda damaged, recovered: False)
    report = doctor.repair(database)
    assert report.problems and report.method == "row-by-row copy"
    assert 0 < report.salvaged_rows["conversations"] <= 30
    assert doctor.integrity_problems(database) == []
    with Store(database) as store:
        assert len(store.list_conversations()) == report.salvaged_rows["conversations"]
