"""Real threads against one Store: racing folds, appends during a fold, many writers."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from store_helpers import exchange, fold_state

from foldline.core.messages import user
from foldline.store import ConcurrentFold, Store


def test_two_folds_racing_one_commits_the_other_is_told_to_recompute(store: Store) -> None:
    conversation = store.create_conversation()
    for n in range(10):
        store.append_messages(conversation.id, exchange(n))
    planned_together = threading.Barrier(2)
    outcomes: dict[str, str] = {}

    def fold(name: str, start: int) -> None:
        state, _ = store.load_window(conversation.id)
        expected = state.version if state else 0
        planned = fold_state(expected + 1, start)
        planned_together.wait()  # both planned on version 0; now both try to commit
        try:
            store.commit_fold(conversation.id, planned, expected_version=expected)
            outcomes[name] = "committed"
        except ConcurrentFold:
            outcomes[name] = "conflict"

    threads = [
        threading.Thread(target=fold, args=("a", 12)),
        threading.Thread(target=fold, args=("b", 20)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes.values()) == ["committed", "conflict"]
    winner_start = 12 if outcomes["a"] == "committed" else 20
    [record] = store.list_compactions(conversation.id)
    assert (record.state.version, record.state.api_start_index) == (1, winner_start)


def test_many_folders_with_retries_never_interleave(store: Store) -> None:
    """Each committed fold builds on the one committed just before it."""
    conversation = store.create_conversation()
    for n in range(30):
        store.append_messages(conversation.id, exchange(n))
    conflicts = []

    def fold_until_committed(worker: int) -> None:
        for _ in range(3):  # three folds per worker
            while True:
                state, window = store.load_window(conversation.id)
                expected = state.version if state else 0
                start = window[0].seq + 1  # every fold moves the boundary forward
                try:
                    store.commit_fold(
                        conversation.id,
                        fold_state(expected + 1, start, previous_start=window[0].seq),
                        expected_version=expected,
                    )
                    break
                except ConcurrentFold:
                    conflicts.append(worker)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(fold_until_committed, range(4)))

    records = store.list_compactions(conversation.id)
    assert [r.state.version for r in records] == list(range(1, 13))
    assert [r.parent_version for r in records] == list(range(12))
    starts = [r.state.api_start_index for r in records]
    assert starts == list(range(1, 13))  # each fold planned on its predecessor's window
    assert records[-1].is_current


def test_a_message_appended_while_a_fold_is_summarized_does_not_block_it(store: Store) -> None:
    conversation = store.create_conversation()
    for n in range(5):
        store.append_messages(conversation.id, exchange(n))
    window_loaded = threading.Event()
    appended = threading.Event()
    result: dict[str, object] = {}

    def folder() -> None:
        state, window = store.load_window(conversation.id)
        expected = state.version if state else 0
        planned = fold_state(expected + 1, window[12].seq)
        window_loaded.set()
        appended.wait()  # "summarizing" while the chat writes a new message
        result["stored"] = store.commit_fold(conversation.id, planned, expected_version=expected)

    def chatter() -> None:
        window_loaded.wait()
        result["new"] = store.append_message(conversation.id, user("one more thing"))
        appended.set()

    threads = [threading.Thread(target=folder), threading.Thread(target=chatter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert result["stored"] == fold_state(1, 12)
    state, window = store.load_window(conversation.id)
    assert state == fold_state(1, 12)
    assert [r.seq for r in window] == list(range(12, 21))
    assert window[-1] == result["new"]


def test_concurrent_appends_keep_seq_dense_and_unique(store: Store) -> None:
    conversation = store.create_conversation()

    def write(worker: int) -> list[int]:
        return [
            store.append_message(conversation.id, user(f"w{worker} m{i}")).seq for i in range(40)
        ]

    with ThreadPoolExecutor(6) as pool:
        seqs = [seq for batch in pool.map(write, range(6)) for seq in batch]
    assert sorted(seqs) == list(range(240))
    stored = store.list_messages(conversation.id, limit=1000)
    assert [r.seq for r in stored] == list(range(240))
    for worker in range(6):  # each writer's messages are in its own order
        mine = [r.message.text for r in stored if r.message.text.startswith(f"w{worker} ")]
        assert mine == [f"w{worker} m{i}" for i in range(40)]


def test_each_thread_gets_its_own_connection_and_setup_teardown_may_differ(
    store: Store,
) -> None:
    """FastAPI may run a dependency's setup and teardown on different threads."""
    conversation = store.create_conversation()
    connections: list[object] = []

    def on_a_thread(action) -> object:
        box: list[object] = []
        thread = threading.Thread(target=lambda: box.append(action()))
        thread.start()
        thread.join()
        return box[0]

    record = on_a_thread(lambda: store.append_message(conversation.id, user("set up")))
    connections.append(on_a_thread(lambda: store._pool.get()))
    fetched = on_a_thread(lambda: store.get_message(record.id))
    connections.append(on_a_thread(lambda: store._pool.get()))
    assert fetched == record
    assert connections[0] is not connections[1]
    assert store._pool.get() not in connections


CLOSE_WHILE_QUERYING = """
import sys, threading, time
from pathlib import Path
from foldline.store import Store

for attempt in range(6):
    store = Store(Path(sys.argv[1]) / f"close-{attempt}.db")
    started = threading.Event()

    def query() -> None:
        conn = store._pool.get().conn
        started.set()
        try:
            conn.execute(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 1000000) SELECT count(*) FROM c"
            ).fetchall()
        except Exception:
            pass  # refused is fine; crashing is not

    worker = threading.Thread(target=query)
    worker.start()
    started.wait()
    time.sleep(0.05)
    store.close()
    worker.join()
"""


def test_closing_the_store_while_another_thread_queries_does_not_crash(tmp_path) -> None:
    """A worker thread may still be reading when the app (or a test) closes the store:
    a thread whose caller was cancelled goes on with its query. Closing its connection
    under it used to kill the interpreter with a segmentation fault."""
    finished = subprocess.run(
        [sys.executable, "-c", CLOSE_WHILE_QUERYING, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
