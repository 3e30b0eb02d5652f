"""kill -9 of a real `foldline serve` in the middle of an import, then a restart.

An import writes in many short transactions, so a crash can land between two of them.
The half import must stay hidden, be deleted when the server starts again, leave the
other conversations and projects as they were, and not stand in the way of the same
import done again; `foldline doctor` then finds nothing to report.

The kill waits on a condition, not on time: the test reads the database (a read-only
connection of its own, as SQLite's WAL mode allows beside a writer) until the import
has committed part of its work, then sends SIGKILL.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.store.export import export_json
from foldline.store.project_export import write_project_export

# An import counts its pins against the default model's window; nothing calls a model (no
# server listens on the discard port of the shared config).
from .conftest import CONFIG_TOML

LINE = re.compile(r"^Foldline is running at (http://127\.0\.0\.1:\d+)/#token=([A-Za-z0-9_\-]+)$")
START_SECONDS = 60.0
TOKEN = "kill-during-import-token-0123456789"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLDLINE_")}
    env["FOLDLINE_TOKEN"] = TOKEN
    return env


@dataclass
class Serve:
    """One `foldline serve` process and the base URL it printed."""

    process: subprocess.Popen[str]
    url: str

    @classmethod
    def start(cls, data_dir: Path) -> Serve:
        process = subprocess.Popen(
            [sys.executable, "-m", "foldline.cli", "serve", "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        # A reader thread, so a server that never prints fails the test instead of hanging.
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(START_SECONDS)
        match = LINE.match(lines[0].rstrip("\n")) if lines else None
        if match is None:
            process.kill()
            _, err = process.communicate()
            raise AssertionError(f"foldline serve did not start: {lines} {err}")
        return cls(process, match.group(1))

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            data=body,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=120) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.communicate()
        assert self.process.returncode == -signal.SIGKILL

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=30)


@pytest.fixture
def servers() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for serve in started:
        if serve.process.poll() is None:
            serve.process.kill()
            serve.process.communicate()


def _history(store: Store, title: str, pairs: int, project_id: str | None = None) -> str:
    conversation = store.create_conversation(title=title, project_id=project_id)
    store.append_messages(
        conversation.id,
        [
            message
            for n in range(pairs)
            for message in (user(f"{title} question {n} " * 8), assistant(f"answer {n} " * 16))
        ],
    )
    return conversation.id


def _documents(tmp_path: Path) -> dict[str, bytes]:
    """The exports the test imports: a small conversation (other data), and a large
    project and a large conversation (imports long enough to be cut in the middle)."""
    store = Store(tmp_path / "source.db")
    try:
        small = export_json(store, _history(store, "Kept", pairs=3))
        large = export_json(store, _history(store, "Long", pairs=LONG_PAIRS))
        project = store.create_project(name="Big project")
        _history(store, "Member", pairs=MEMBER_PAIRS, project_id=project.id)
        out = io.BytesIO()
        write_project_export(store, project.id, out)
    finally:
        store.close()
    document = json.loads(out.getvalue())
    member = document["conversations"][0]
    document["conversations"] = [
        {**member, "conversation": {**member["conversation"], "id": f"member{n:02d}"}}
        for n in range(MEMBERS)
    ]
    return {
        "small": json.dumps(small).encode(),
        "conversation": json.dumps(large).encode(),
        "project": json.dumps(document).encode(),
    }


LONG_PAIRS = 700
"""The long conversation's question-answer pairs: its import commits in three batches."""
MEMBERS = 12
MEMBER_PAIRS = 40
"""A project of 12 conversations of 80 messages, each conversation its own commits."""

IMPORT_PATHS = {"project": "/api/projects/import", "conversation": "/api/conversations/import"}

IN_PROGRESS = {
    # The project's first conversations are committed, the rest still to come.
    "project": "SELECT count(*) FROM conversations AS c JOIN projects AS p "
    "ON c.project_id = p.id WHERE p.importing = 1",
    # Some of the conversation's batches of messages are committed.
    "conversation": "SELECT count(*) FROM messages AS m JOIN conversations AS c "
    "ON m.conversation_id = c.id WHERE c.importing = 1",
}


def _wait_for_import_in_progress(database: Path, kind: str, importing: threading.Thread) -> None:
    """Return once the import has committed part of its work (read from the file)."""
    reader = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)
    try:
        while reader.execute(IN_PROGRESS[kind]).fetchone()[0] == 0:
            # The import answering first would mean the document is too small to be cut.
            assert importing.is_alive(), f"the {kind} import ended before it could be cut"
            time.sleep(0.002)  # a poll interval, not a wait for time to pass
    finally:
        reader.close()


def _other_data(serve: Serve) -> dict[str, Any]:
    """What the person had before the import: every listing and message, as served."""
    status, conversations = serve.call("GET", "/api/conversations")
    assert status == 200
    status, projects = serve.call("GET", "/api/projects")
    assert status == 200
    messages = {}
    for item in conversations["items"]:
        status, page = serve.call("GET", f"/api/conversations/{item['id']}/messages")
        assert status == 200
        messages[item["id"]] = page
    return {"conversations": conversations, "projects": projects, "messages": messages}


def _kill_during_import(serve: Serve, kind: str, document: bytes, database: Path) -> None:
    """Start the import over HTTP and SIGKILL the server once part of it is committed."""
    answers: list[tuple[int, Any]] = []

    def import_it() -> None:
        # The server dies under the request, as intended: the connection breaks.
        with contextlib.suppress(OSError):
            answers.append(serve.call("POST", IMPORT_PATHS[kind], document))

    importing = threading.Thread(target=import_it)
    importing.start()
    _wait_for_import_in_progress(database, kind, importing)
    serve.kill()
    importing.join()
    assert answers == []
    # The kill left the half import in the file: the restart has something to remove.
    raw = sqlite3.connect(database)
    left = raw.execute(IN_PROGRESS[kind]).fetchone()[0]
    raw.close()
    assert left > 0


def _assert_nothing_half_and_the_rest_intact(
    serve: Serve, database: Path, before: dict[str, Any]
) -> None:
    raw = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        for table in ("projects", "conversations"):
            half = raw.execute(f"SELECT count(*) FROM {table} WHERE importing = 1").fetchone()[0]
            assert half == 0, table
        stored = raw.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        raw.close()
    assert stored == sum(len(page["items"]) for page in before["messages"].values())
    assert _other_data(serve) == before


def test_kill_9_during_imports_leaves_nothing_half_and_the_imports_then_work(
    tmp_path: Path, servers: list[Serve]
) -> None:
    documents = _documents(tmp_path)
    data_dir = tmp_path / "data"
    database = data_dir / "foldline.db"
    data_dir.mkdir()
    (data_dir / "config.toml").write_text(CONFIG_TOML, encoding="utf-8")
    servers.append(Serve.start(data_dir))
    status, answer = servers[-1].call("POST", "/api/conversations/import", documents["small"])
    assert status == 201, answer
    other = json.dumps({"name": "Other"}).encode()
    status, answer = servers[-1].call("POST", "/api/projects", other)
    assert status == 201, answer
    before = _other_data(servers[-1])

    # Cut a project import, start again: its half is gone at start, the rest as it was.
    _kill_during_import(servers[-1], "project", documents["project"], database)
    servers.append(Serve.start(data_dir))
    _assert_nothing_half_and_the_rest_intact(servers[-1], database, before)

    # The same with a conversation import (its messages written in batches).
    _kill_during_import(servers[-1], "conversation", documents["conversation"], database)
    servers.append(Serve.start(data_dir))
    _assert_nothing_half_and_the_rest_intact(servers[-1], database, before)

    # The same imports now go through whole.
    status, project = servers[-1].call("POST", IMPORT_PATHS["project"], documents["project"])
    assert status == 201, project
    assert (project["name"], project["conversationCount"]) == ("Big project", MEMBERS)
    status, imported = servers[-1].call(
        "POST", IMPORT_PATHS["conversation"], documents["conversation"]
    )
    assert status == 201, imported
    assert imported["messageCount"] == 2 * LONG_PAIRS
    servers[-1].stop()

    doctor = subprocess.run(
        [sys.executable, "-m", "foldline.cli", "doctor", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert doctor.returncode == 0, doctor.stderr
    assert "integrity check passed; nothing to do." in doctor.stdout, doctor.stdout
