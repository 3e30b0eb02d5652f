"""One SQLite connection per thread, configured the same way every time.

A sqlite3 connection must not be used by two threads: FastAPI runs a sync dependency's
setup and teardown on different worker threads, and a shared connection then fails (or,
with `check_same_thread=False`, silently interleaves transactions). Each thread therefore
gets its own connection, opened on first use and kept in a `threading.local`. The pool
remembers every connection only so that `close()` can close them all; connections of
threads that have ended are closed when the next connection is opened.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlite_utils import Database

BUSY_TIMEOUT_MS = 5_000
"""How long a writer waits for another connection's write lock before failing."""


MINIMUM_SQLITE = (3, 35, 0)
"""`UPDATE ... RETURNING` (3.35) and the JSON functions the search triggers use."""


def open_database(path: Path) -> Database:
    """A connection with the store's settings, wrapped in a sqlite-utils Database.

    `isolation_level=None` turns off the sqlite3 module's implicit transactions: every
    transaction here is explicit (`BEGIN IMMEDIATE` for writes), so what commits when is
    visible in the code. `check_same_thread=False` is only so that `close()` may close a
    connection from another thread at shutdown; the pool never shares one otherwise.
    """
    if sqlite3.sqlite_version_info < MINIMUM_SQLITE:
        raise RuntimeError(
            f"Foldline needs SQLite {'.'.join(map(str, MINIMUM_SQLITE))} or newer; "
            f"this Python has {sqlite3.sqlite_version}"
        )
    conn = sqlite3.connect(
        path,
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # WAL: readers never block the writer and a crash mid-write leaves the last committed
    # state. synchronous=NORMAL in WAL mode loses no committed transaction when the
    # process dies (only on power loss can the last few be lost), at a fraction of FULL's
    # fsync cost per streamed flush.
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return Database(conn, execute_plugins=False)


class FairLock:
    """A lock granted in the order it was asked for (a ticket lock), re-entrant per thread.

    SQLite's own busy handler polls: a writer waiting for the lock sleeps up to 100 ms
    between tries, so a long series of short transactions (an import's batches) can keep
    it out for seconds. The store's writers of one process take this lock first, so each
    waits at most for the transactions asked for before its own."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._next = 0
        self._serving = 0
        self._owner: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._condition:
            if self._owner == me:
                self._depth += 1
                return
            ticket = self._next
            self._next += 1
            while self._serving != ticket:
                self._condition.wait()
            self._owner, self._depth = me, 1

    def release(self) -> None:
        with self._condition:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._serving += 1
                self._condition.notify_all()


class ConnectionPool:
    """Hands each thread its own `Database` on one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writers = FairLock()
        """Taken by every write transaction of this pool, first asked first served."""
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: dict[int, tuple[weakref.ref[threading.Thread], Database]] = {}
        self._closed = False

    def get(self) -> Database:
        db: Database | None = getattr(self._local, "db", None)
        if db is not None:
            return db
        with self._lock:
            if self._closed:
                raise RuntimeError("the store is closed")
            self._close_connections_of_ended_threads()
            db = open_database(self.path)
            thread = threading.current_thread()
            self._open[id(db)] = (weakref.ref(thread), db)
        self._local.db = db
        return db

    def _close_connections_of_ended_threads(self) -> None:
        for key, (thread_ref, db) in list(self._open.items()):
            thread = thread_ref()
            if thread is None or not thread.is_alive():
                db.close()
                del self._open[key]

    def close(self) -> None:
        """Close this thread's connection and those of ended threads; let go of the rest.

        Another live thread may be in the middle of a query (a worker still reading after
        its caller was cancelled), and closing a connection under a running query crashes
        the interpreter: the sqlite3 module does not guard against it. Once the pool lets
        go of such a connection, it closes when that thread lets go of it too (at once,
        for a thread that is not using it).
        """
        current = threading.current_thread()
        with self._lock:
            self._closed = True
            for thread_ref, db in self._open.values():
                thread = thread_ref()
                if thread is None or thread is current or not thread.is_alive():
                    db.close()
            self._open.clear()
        self._local = threading.local()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, taken with `BEGIN IMMEDIATE`.

        IMMEDIATE takes the write lock up front, waiting up to the busy timeout. A deferred
        transaction that reads first and writes later fails at once with SQLITE_BUSY when
        another connection committed in between (the busy handler cannot help there), so
        every read-then-write here starts immediate.
        """
        conn = self.get().conn
        self.writers.acquire()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            self.writers.release()

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several SELECTs that see the same committed state."""
        conn = self.get().conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
