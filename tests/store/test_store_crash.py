"""Crash safety: SIGKILL a writing process at arbitrary moments, then reopen.

The worker (crash_worker.py) prints a line only after each write has committed. After the
kill, the reopened database must pass `PRAGMA integrity_check`, hold every printed message
exactly once, have no message left `streaming` (startup recovery made it `interrupted`,
keeping its partial text), and show each fold fully applied or not at all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_helpers import assert_index_matches_a_fresh_rebuild

from foldline.store import Store

WORKER = Path(__file__).with_name("crash_worker.py")


def run_and_kill(mode: str, db_path: Path, lines_before_kill: int, delay: float) -> list[str]:
    """Start the worker, SIGKILL it `delay` seconds after reading that many lines; return
    every complete line it printed.

    Without a delay the kill lands just after the line was printed: on a `begin` line
    that is inside the write. The delays move the kill to other phases of the loop; the
    invariants must hold wherever it lands (no assertion depends on the timing).
    """
    process = subprocess.Popen(
        [sys.executable, str(WORKER), mode, str(db_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        while len(lines) < lines_before_kill:
            line = process.stdout.readline()
            if not line:
                pytest.fail(f"the worker stopped by itself: {process.stderr.read()}")
            lines.append(line)
        if delay:
            time.sleep(delay)
        os.kill(process.pid, signal.SIGKILL)
        lines += process.stdout.read().splitlines(keepends=True)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    # A line cut short by the kill has no newline; what it reported may or may not have
    # committed, so it proves nothing either way.
    return [line.rstrip("\n") for line in lines if line.endswith("\n")]


def integrity(store: Store) -> str:
    return store._pool.get().conn.execute("PRAGMA integrity_check").fetchone()[0]


# (lines read before the kill, delay). The worker's lines alternate `begin`/report after
# its first line, so an even count ends on a `begin` line and the kill lands inside a
# write; the odd counts and the delays land it elsewhere in the loop.
KILL_POINTS = [(4, 0.0), (10, 0.0), (64, 0.0), (134, 0.0), (211, 0.0005), (301, 0.002)]


@pytest.mark.parametrize(("lines_before_kill", "delay"), KILL_POINTS)
def test_killed_while_streaming_an_answer(
    db_path: Path, lines_before_kill: int, delay: float
) -> None:
    lines = run_and_kill("stream", db_path, lines_before_kill, delay)
    conversation_id = lines[0].split()[1]
    printed_ids = [line.split()[1] for line in lines if line.startswith("message ")]
    flushed: dict[str, int] = {}
    for line in lines:
        if line.startswith("flushed "):
            _, message_id, length = line.split()
            flushed[message_id] = int(length)
    completed = {line.split()[1] for line in lines if line.startswith("complete ")}

    with Store(db_path) as store:
        assert integrity(store) == "ok"
        messages = store.list_messages(conversation_id, limit=100_000)
        ids = [m.id for m in messages]
        assert len(ids) == len(set(ids))
        assert [m.seq for m in messages] == list(range(len(messages)))
        assert set(printed_ids) <= set(ids)
        # At most the one message that was being written when the process died can show
        # up unreported, and only at the very end.
        assert ids[: len(printed_ids)] == printed_ids
        assert len(ids) - len(printed_ids) <= 1
        assert not [m for m in messages if m.status == "streaming"]

        answers = [m for m in messages if m.message.role == "assistant"]
        for turn, answer in enumerate(answers):
            text = answer.message.text
            tokens = text.split()
            assert tokens == [f"t{turn}.{k}" for k in range(len(tokens))]  # a clean prefix
            assert len(text) >= flushed.get(answer.id, 0)  # nothing reported is lost
            if answer.id in completed:
                assert answer.status == "complete"
        interrupted = [m.id for m in messages if m.status == "interrupted"]
        assert interrupted == list(store.recovered_message_ids)
        assert len(interrupted) <= 1
        if interrupted:
            assert interrupted[0] == answers[-1].id
        assert_index_matches_a_fresh_rebuild(store)


@pytest.mark.parametrize(("lines_before_kill", "delay"), KILL_POINTS)
def test_killed_while_committing_folds(db_path: Path, lines_before_kill: int, delay: float) -> None:
    lines = run_and_kill("fold", db_path, lines_before_kill, delay)
    conversation_id = lines[0].split()[1]
    reported = max((int(line.split()[1]) for line in lines if line.startswith("fold ")), default=0)

    with Store(db_path) as store:
        assert integrity(store) == "ok"
        records = store.list_compactions(conversation_id)
        current = store.current_compaction(conversation_id)
        version = current.version if current else 0
        assert reported <= version <= reported + 1
        assert [r.state.version for r in records] == list(range(1, version + 1))
        assert [r.parent_version for r in records] == list(range(version))
        # Every pruning mark written with a fold is that fold's: all or nothing.
        tool_messages = [
            m for m in store.list_messages(conversation_id, limit=1000) if m.message.role == "tool"
        ]
        marks = {m.message.tool_results[0].compacted_at for m in tool_messages}
        assert marks == ({f"fold-{version}"} if version else {None})
        if current:
            assert current.compacted_at == f"fold-{version}"
        assert_index_matches_a_fresh_rebuild(store)
