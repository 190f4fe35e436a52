"""The SQLite index file that :class:`~memledger.index.derived.DerivedIndex` is built on:
opening it, its layout and the version of that layout (:data:`SCHEMA`), its state
(``meta``: the global cursor, the change stamp and the epoch, why vectors are
missing; ``cursors``: each tenant's own), and its transactions.

:class:`SqliteIndexBase` holds the connection and what every part of the index
reads: the lexical part (:mod:`memledger.index._sqlite_lexical`), the vector part
(:mod:`memledger.index._sqlite_vectors`) and the feed
(:mod:`memledger.index._sqlite_maintenance`) build on it.

Tables: ``entries`` (one row per entry: what a hit reports, the episode's speaker,
thread and time, the vector, the stamp of its last change, its length and its
window's for BM25, a standing instruction's scope, the passage's part and span),
``removed`` (the removals since the last prune, for vectors held in memory),
``cursors``, ``meta``, ``unmerged`` (the tenants whose full-text tables were written
since their segments were last merged, :mod:`memledger.index._sqlite_merge`), and per
tenant two FTS5 tables (``fts_...``, ``win_...``).
A file of another layout or embedder is emptied on open and refilled from the outbox.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Self

from memledger._files import private_file, sqlite_files, tree, warn_loose
from memledger._sqlite import translated
from memledger._sqlite_meta import SqliteMeta
from memledger.errors import InvalidInputError, StoreError
from memledger.index._ann import ANN_THRESHOLD, Graphs
from memledger.index._base import Embedder
from memledger.index._common import VectorPath, check_ann_threshold
from memledger.index._names import NameCache
from memledger.index._vectors import Matrix

__all__ = ["SCHEMA", "SqliteIndexBase"]

SCHEMA = "13"
"""The layout's version: an index file of another is emptied on open and refilled from
the outbox."""


class SqliteIndexBase(SqliteMeta):
    """An open index file: its connection (autocommit, write-ahead log), the lock every
    use of it takes, and the state held in memory beside it (each tenant's vectors,
    its approximate index, the names of its entries)."""

    def __init__(
        self,
        path: Path | str,
        *,
        embedder: Embedder | None = None,
        prune_after: int = 10_000,
        ann_threshold: int | None = ANN_THRESHOLD,
    ) -> None:
        if isinstance(prune_after, bool) or not isinstance(prune_after, int) or prune_after < 1:
            raise InvalidInputError(f"prune_after must be an integer >= 1, got {prune_after!r}")
        check_ann_threshold(ann_threshold)
        self.path = Path(path)
        if str(self.path) == ":memory:":  # nothing to persist an approximate index beside
            ann_threshold = None
        self.embedder = embedder
        self.prune_after = prune_after
        self.vector_searches: dict[VectorPath, int] = {"exact": 0, "ann": 0}
        """How many vector searches each path served since this handle was opened."""
        self._lock = threading.RLock()
        self._matrices: dict[str, Matrix] = {}
        self._graphs = Graphs(self.path, threshold=ann_threshold)
        self._names = NameCache()
        try:
            private_file(self.path)  # owner-only, and so its -wal and -shm files
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA busy_timeout = 5000")
            self._conn.execute("PRAGMA secure_delete = ON")  # see purge()
            with self._transaction():
                self._prepare()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the index {str(self.path)!r}: {exc}") from exc
        if str(self.path) != ":memory:":
            files = [*sqlite_files(self.path), *tree(self._graphs.folder)]
            warn_loose(files, what=f"index {str(self.path)!r}")

    def _prepare(self) -> None:
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        embedder = "" if self.embedder is None else self.embedder.name
        wanted = {"schema": SCHEMA, "embedder": embedder}
        found = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        if any(found.get(key) != value for key, value in wanted.items()):
            self._drop_all()
            for key, value in wanted.items():
                self._set(key, value)
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,"
            " memory_id TEXT NOT NULL, subject TEXT NOT NULL, family TEXT NOT NULL,"
            " kind TEXT NOT NULL, revision INTEGER NOT NULL, generation INTEGER NOT NULL,"
            " text TEXT NOT NULL, speaker TEXT, thread TEXT, at TEXT NOT NULL, vector BLOB,"
            " changed INTEGER NOT NULL, length INTEGER NOT NULL, win_length INTEGER,"
            " standing TEXT, part INTEGER NOT NULL, span_start INTEGER, span_end INTEGER,"
            " UNIQUE (tenant, memory_id, part))"
        )
        self._conn.execute(
            "CREATE INDEX IF NOT EXISTS entries_changed ON entries (tenant, changed)"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS cursors (tenant TEXT PRIMARY KEY, seq INTEGER NOT NULL)"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS removed (tenant TEXT NOT NULL, memory_id TEXT NOT NULL,"
            " changed INTEGER NOT NULL)"
        )
        self._conn.execute(
            "CREATE INDEX IF NOT EXISTS removed_changed ON removed (tenant, changed)"
        )
        if not self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'unmerged'"
        ).fetchone():  # a file from before it: every tenant's tables may want merging
            self._conn.execute("CREATE TABLE unmerged (tenant TEXT PRIMARY KEY)")
            self._conn.execute("INSERT INTO unmerged SELECT DISTINCT tenant FROM entries")
        self._conn.execute(
            "CREATE INDEX IF NOT EXISTS entries_thread ON entries (tenant, thread, at, id)"
        )
        self._conn.execute(
            "CREATE INDEX IF NOT EXISTS entries_speaker ON entries (tenant, speaker)"
        )
        self._conn.execute(
            "CREATE INDEX IF NOT EXISTS entries_subject ON entries (tenant, subject, changed)"
        )
        self._conn.execute(
            "CREATE INDEX IF NOT EXISTS entries_standing ON entries (tenant, subject)"
            " WHERE standing IS NOT NULL"
        )

    def _drop_all(self) -> None:
        for (table,) in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%VIRTUAL TABLE%'"
            " AND (name LIKE 'fts\\_%' ESCAPE '\\' OR name LIKE 'win\\_%' ESCAPE '\\')"
        ).fetchall():
            self._conn.execute(f"DROP TABLE {table}")
        self._conn.execute("DROP TABLE IF EXISTS entries")
        self._conn.execute("DROP TABLE IF EXISTS removed")
        self._conn.execute("DROP TABLE IF EXISTS cursors")
        self._conn.execute("DROP TABLE IF EXISTS unmerged")
        stamp = self._stamp + 1  # keeps rising, so other handles see the change
        self._conn.execute("DELETE FROM meta")
        self._set("stamp", str(stamp))
        self._set("epoch", str(stamp))  # vectors held in memory before this are void
        self._matrices.clear()
        self._names.clear()
        self._graphs.drop()

    def _reset(self) -> None:
        """Drop every table and lay them out again (a rebuild's start)."""
        with self._lock, self._transaction():
            self._drop_all()
            self._prepare()

    @property
    def ann_threshold(self) -> int | None:
        """Live rows from which tenant-wide searches use the approximate index."""
        return self._graphs.threshold

    def close(self) -> None:
        with self._lock:
            if self._graphs.held():  # (closing twice reads no stamp)
                self._graphs.close(stamp=self._stamp)
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)

    # -- state ----------------------------------------------------------------------------

    @property
    def cursor(self) -> int:
        """The outbox sequence up to which every tenant's rows are applied."""
        with self._lock:
            return int(self._get("cursor") or 0)

    def cursor_of(self, tenant: str) -> int:
        """The outbox sequence up to which ``tenant``'s rows are applied (a sync for one
        tenant moves it ahead of :attr:`cursor`)."""
        with self._lock:
            return self._cursor_of(tenant)

    def _cursor_of(self, tenant: str) -> int:
        meta, own = self._state_of(tenant, "cursor")
        return max(int(meta.get("cursor") or 0), own)

    def _state_of(self, tenant: str, *keys: str) -> tuple[dict[str, str], int]:
        """The values of those of ``keys`` that are set (as :meth:`_get_many`) and
        ``tenant``'s own cursor (0 when it has none), in one read."""
        meta: dict[str, str] = {}
        own = 0
        for key, value in self._conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(keys))})"
            " UNION ALL SELECT NULL, seq FROM cursors WHERE tenant = ?",
            (*keys, tenant),
        ):
            if key is None:
                own = int(value)
            else:
                meta[str(key)] = str(value)
        return meta, own

    def _cursors(self) -> tuple[int, dict[str, int]]:
        """The global cursor and each tenant's own."""
        with self._lock:
            cursor = int(self._get("cursor") or 0)
            return cursor, dict(self._conn.execute("SELECT tenant, seq FROM cursors").fetchall())

    @property
    def degraded(self) -> str | None:
        """Why some entries were stored without a vector (the embedder's last error), or
        ``None`` when every entry has one."""
        with self._lock:
            return self._get("degraded")


class _Transaction:
    """One write transaction on the index file. SQLite's own errors leave it as store
    errors (:func:`memledger._sqlite.translated`: :class:`StoreLockedError` when the file
    stayed locked past the busy timeout), which the worker and the read path expect of a
    busy or broken index; nothing of the transaction is kept."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        with translated(_WRITE):
            self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        with translated(_WRITE):
            if exc_type is None:
                try:
                    self._conn.execute("COMMIT")
                    return
                except sqlite3.Error:
                    self._rollback()
                    raise
            self._rollback()
            if isinstance(exc, sqlite3.Error):
                raise exc

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")


_WRITE = "write to the index file"
