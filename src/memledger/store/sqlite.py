"""The embedded canonical store: one SQLite file in WAL mode.

Writes run in ``BEGIN IMMEDIATE`` transactions, so writers (threads or
processes) are serialised by SQLite's write lock and a unit of work commits
only when its block returns; any exception rolls it back. Reads run in a
deferred transaction and see one snapshot. ``sqlite3`` errors are translated
to :class:`~memledger.errors.StoreError` here (:func:`memledger._sqlite.translated`)
and never escape.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from memledger._files import open_private, private_file, sqlite_files, warn_loose
from memledger._sqlite import translated
from memledger.errors import (
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from memledger.store import Failpoint
from memledger.store import _migrations as migrations
from memledger.store._migrations import Migration
from memledger.store._sql_unit import SqlUnit

BUSY_TIMEOUT_MS = 30_000


class SQLiteUnit(SqlUnit):
    """One transaction on one SQLite connection (:class:`~memledger.store._sql_unit.SqlUnit`)."""

    _integrity_errors = (sqlite3.IntegrityError,)


def load_migrations() -> list[Migration]:
    """``(version, name, sql)`` for every packaged SQLite migration, in order."""
    return migrations.load("memledger.store.migrations")


class SQLiteStore:
    """A canonical store in one SQLite file. Safe to share between threads;
    each thread (and each process) gets its own connection."""

    def __init__(
        self, path: Path | str, *, failpoint: Failpoint | None = None, create: bool = True
    ) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._failpoint = failpoint
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._closed = False
        # an in-memory store is this process's alone: no lock file (one named
        # ":memory:.lock" would make every in-memory store of the folder wait on the others)
        self._gate = _WriteGate(None if str(self.path) == ":memory:" else Path(f"{self.path}.lock"))
        if not self.path.parent.exists():
            raise StoreError(f"cannot open {str(self.path)!r}: folder does not exist")
        if not create and not self.path.exists():
            raise StoreNotFoundError(f"no memledger store at {str(self.path)!r}")
        try:
            private_file(self.path)  # SQLite's -wal, -shm and -journal files take its mode
        except OSError as exc:
            raise StoreError(f"cannot create {str(self.path)!r}: {exc}") from exc
        # Opening takes the write gate: processes creating the same file at once would
        # otherwise race on switching it to WAL, which SQLite refuses without waiting.
        with translated(f"open {str(self.path)!r}"), self._gate.held(BUSY_TIMEOUT_MS / 1000):
            self._migrate(self._connection())
        if self._gate.path is not None:
            warn_loose([*sqlite_files(self.path), self._gate.path], what=f"store {self.url!r}")

    # -- connections ----------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"store {self.url!r} is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        pid: int | None = getattr(self._local, "pid", None)
        if conn is not None and pid == os.getpid():
            return conn
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA cache_size = -65536")  # 64 MiB of pages, not the 2 MiB default
        conn.execute("PRAGMA secure_delete = ON")  # a deleted row's bytes are overwritten
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._guard:
            self._all.append(conn)
        return conn

    def scrub(self) -> None:
        """Copy the write-ahead log into the file and truncate it: the log held pages
        from before an erasure (freed pages are zeroed as rows go: ``secure_delete``)."""
        conn = self._connection()
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise StoreLockedError(
                f"store {self.url!r}: a reader held the write-ahead log; scrub again later"
            )

    def close(self) -> None:
        with self._guard:
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._gate.close()
            self._closed = True

    # -- migrations -----------------------------------------------------------------

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            migrations.apply(conn.execute, load_migrations(), where=repr(str(self.path)))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def schema_version(self) -> int:
        with self.read() as unit:
            row = unit.conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    # -- transactions ---------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[SQLiteUnit]:
        with translated("write"), self._gate.held(BUSY_TIMEOUT_MS / 1000):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield SQLiteUnit(conn, self._failpoint)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[SQLiteUnit]:
        with translated("read"):
            conn = self._connection()
            conn.execute("BEGIN")
            try:
                yield SQLiteUnit(conn, None)
            finally:
                conn.execute("ROLLBACK")


class _WriteGate:
    """Hands the write lock from writer to writer without SQLite's sleeps.

    SQLite's busy handler polls with sleeps that grow to 100 ms, so writers in
    several processes waste most of their time waiting. Writers of this store
    first take a thread lock and an exclusive ``flock`` on a sidecar file,
    polled every fraction of a millisecond; SQLite's own lock then is free at
    once (its busy timeout still guards against writers that bypass the gate).
    A crashed process's ``flock`` is released by the kernel. Where ``fcntl``
    is missing (Windows) only the thread lock applies.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        """The lock file (``None``: an in-memory store, this process's alone)."""
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._pid: int | None = None

    def _file(self) -> int | None:
        if fcntl is None or self.path is None:
            return None
        if self._fd is None or self._pid != os.getpid():
            self._fd = open_private(self.path, os.O_RDWR)
            self._pid = os.getpid()
        return self._fd

    @contextmanager
    def held(self, timeout: float) -> Iterator[None]:
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=timeout):
            raise StoreLockedError(f"gave up waiting {timeout:g} s for the write lock")
        try:
            fd = self._file()
            if fd is not None:
                self._lock_file(fd, deadline, timeout)
            try:
                yield
            finally:
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    @staticmethod
    def _lock_file(fd: int, deadline: float, timeout: float) -> None:
        delay = 0.0001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLockedError(
                        f"gave up waiting {timeout:g} s for the write lock"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.002)

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None
