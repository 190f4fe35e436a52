"""The derived index: lexical (SQLite FTS5, BM25) and vectors, in one file of its own.

Derived state, never the truth. It is fed from the canonical store's outbox
(tailed by sequence, the cursor kept in the index file), may lag
(:meth:`DerivedIndex.lag`), and can be dropped and rebuilt at any time
(:meth:`DerivedIndex.rebuild`, ``memledger reindex``). Every entry carries
tenant, subject, family, kind, memory id, revision and generation, so the read
path can recheck each hit against the canonical store, and for episodes the
speaker, the thread and the time, so recall can match people and read a hit's
neighbouring turns. A thread is a session within one subject: two subjects
never share one, so no window or neighbour crosses subjects.

Feeding is per tenant when asked (a recall syncs a bounded part of its own
tenant's rows only, :mod:`memledger.index.catchup`, moving that tenant's cursor
ahead of the global one; a sync of every tenant skips the rows a tenant's sync
applied, checked inside its write transaction, and :meth:`DerivedIndex.lag` of
every tenant counts them as applied).

Lexical: each tenant has its own FTS5 tables (BM25 weighs terms by corpus
statistics; a shared table would let one tenant's documents change another's
scores): one of each entry's words, with a token of its subject so that a
subject filter is part of the match, and one of windows, a turn with the
:data:`WINDOW_BEFORE` turns before and :data:`WINDOW_AFTER` after it in its
thread, rewritten whenever a turn comes or goes (a separate table because
FTS5's BM25 normalises by the length of all columns; a neighbour lends only
its first :data:`WINDOW_NEIGHBOUR_WORDS` words). Queries drop stop words
and match any remaining term. A subject-scoped search scores with the subject's
own BM25 statistics (:mod:`memledger.index._fts`), so one subject's words never
move another's scores.

Vectors: one float32 row per entry, stored next to the entry and searched
exactly over the subject's (or the tenant's) rows. Each tenant's rows are held
in memory, with what a hit reports of each entry (so a vector search reads no
table), and brought up to date from what changed since they were read
(entries carry the stamp of their last change, removals are recorded in
``removed``, a rebuild starts a new epoch). Once ``prune_after`` removals have
piled up, a sync deletes the records of them and notes the stamp it pruned at;
rows held in memory from before that stamp are read again whole, since the
removals they would have needed are gone. Exact search keeps tenants apart by
construction and costs about 9 ms per 100k x 384 rows on two cores
(``../shared/FINDINGS.md``); ``memledger bench recall`` measures it.

A tenant-wide search (no ``subjects``) of a tenant with at least
``ann_threshold`` live rows (:data:`~memledger.index._ann.ANN_THRESHOLD`,
20,000, by default) goes through an approximate index instead
(:mod:`memledger.index._ann`: usearch HNSW, the ``ann`` extra), one per tenant
in ``<index>.ann/``: loaded or built on the first such search (a build takes
seconds to minutes) or by :meth:`DerivedIndex.rebuild`, kept up to date with the rows on each
:meth:`DerivedIndex.sync` and search, saved by ``sync`` (and ``close``) once
enough changed, deleted whenever the index is reset. Its candidates are ranked
with their exact cosines and only live rows are returned. Subject-scoped
searches are always exact. Without usearch, or when the graph fails, searches
stay exact; :attr:`DerivedIndex.vector_searches` counts which path served. When
the embedder fails while feeding, entries are stored without vectors (lexical
only, :attr:`IndexStatus.degraded`) and filled in by a later sync once the
embedder works again.

A file written by another schema or another embedder is reset and refilled on
open: it is derived, so nothing is lost.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from sys import intern
from typing import TypeVar

import numpy as np

from memledger._files import private_file, private_folder, sqlite_files, tree, warn_loose
from memledger.domain.records import MemoryRecord, format_time
from memledger.errors import (
    EmbedderError,
    InvalidInputError,
    StoreError,
    StoreLockedError,
)
from memledger.index import _ann
from memledger.index import _subject_bm25 as bm25
from memledger.index._ann import ANN_THRESHOLD, AnnStatus, Graphs, TenantAnn
from memledger.index._base import Embedder, Hit
from memledger.index._common import (
    WINDOW_AFTER,
    WINDOW_BEFORE,
    Glance,
    IndexStatus,
    Progress,
    VectorPath,
)
from memledger.index._common import check_k as _check_k
from memledger.index._common import lead as _lead
from memledger.index._common import speaker as _speaker
from memledger.index._common import standing as _standing
from memledger.index._common import thread as _thread
from memledger.index._fts import scope_token, search_subjects, search_tenant, table_name
from memledger.index._names import KnownNames, NameCache
from memledger.index._vectors import Matrix
from memledger.index.catchup import pending
from memledger.index.lexical import indexed, query_terms
from memledger.index.passages import Document, documents
from memledger.ports import Store

__all__ = [
    "ANN_THRESHOLD",
    "WINDOW_AFTER",
    "WINDOW_BEFORE",
    "AnnStatus",
    "DerivedIndex",
    "Hit",
    "IndexStatus",
    "Progress",
    "VectorPath",
    "default_index_path",
]

_MOVED = {"open_index": "memledger.index.backends", "Index": "memledger.index.backends"}


def __getattr__(name: str) -> object:
    """Names that moved to :mod:`memledger.index.backends`, still found here for one
    release with a ``DeprecationWarning``. Looked up by name at run time only: this
    module builds on nothing that picks between the backends."""
    if name in _MOVED:
        warnings.warn(
            f"memledger.index.derived.{name} moved to {_MOVED[name]}.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SCHEMA = "13"
"""The layout's version: an index file of another is emptied on open and refilled from
the outbox."""
_K = TypeVar("_K", str, tuple[str, str])


def default_index_path(store: Store) -> Path:
    """``<store file>.index`` beside a SQLite store. For a server store (PostgreSQL) a
    file of this machine's: ``$MEMLEDGER_INDEX_DIR/<digest of the store URL>.index``,
    the folder defaulting to ``$XDG_CACHE_HOME/memledger`` (``~/.cache/memledger``).
    Derived state: each machine feeds its own from the shared outbox, and a lost one
    is rebuilt. An in-memory store (``:memory:``) gets an in-memory index."""
    prefix = "sqlite:///"
    if store.url == f"{prefix}:memory:":  # an in-memory store: an in-memory index
        return Path(":memory:")
    if store.url.startswith(prefix):
        return Path(store.url.removeprefix(prefix) + ".index")
    folder = os.environ.get("MEMLEDGER_INDEX_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "memledger"
    )
    try:
        private_folder(Path(folder))
    except OSError as exc:
        raise InvalidInputError(
            f"cannot create the index folder {folder!r} for store {store.url!r}: {exc}; "
            "set MEMLEDGER_INDEX_DIR or pass DerivedIndex(path) yourself"
        ) from exc
    digest = hashlib.sha256(store.url.encode()).hexdigest()[:16]
    return Path(folder) / f"{digest}.index"


class DerivedIndex:
    """Lexical and vector search over the records of one canonical store.

    ``embedder=None`` keeps the index lexical only. ``ann_threshold``: the live rows
    from which a tenant's tenant-wide vector searches use the approximate index
    (``None``: never; see the module's docstring).
    """

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
        if ann_threshold is not None and (
            isinstance(ann_threshold, bool)
            or not isinstance(ann_threshold, int)
            or ann_threshold < 1
        ):
            raise InvalidInputError(
                f"ann_threshold must be an integer >= 1 or None, got {ann_threshold!r}"
            )
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
        stamp = self._stamp + 1  # keeps rising, so other handles see the change
        self._conn.execute("DELETE FROM meta")
        self._set("stamp", str(stamp))
        self._set("epoch", str(stamp))  # vectors held in memory before this are void
        self._matrices.clear()
        self._names.clear()
        self._graphs.drop()

    @property
    def ann_threshold(self) -> int | None:
        """Live rows from which tenant-wide searches use the approximate index."""
        return self._graphs.threshold

    def close(self) -> None:
        with self._lock:
            if self._graphs.held():  # (closing twice reads no stamp)
                self._graphs.close(stamp=self._stamp)
            self._conn.close()

    def __enter__(self) -> DerivedIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- state ----------------------------------------------------------------------------

    def _get(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

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
        row = self._conn.execute("SELECT seq FROM cursors WHERE tenant = ?", (tenant,)).fetchone()
        return max(int(self._get("cursor") or 0), 0 if row is None else int(row[0]))

    @property
    def _stamp(self) -> int:
        return int(self._get("stamp") or 0)

    def lag(self, store: Store, *, tenant: str | None = None) -> int:
        """Outbox rows the index has not applied yet (0: caught up): of every tenant, or
        of ``tenant`` only (what its reads are behind by)."""
        if tenant is not None:
            with store.read() as unit:
                return unit.outbox_pending(tenant, after=self.cursor_of(tenant))
        with self._lock:
            cursor = int(self._get("cursor") or 0)
            ahead = dict(self._conn.execute("SELECT tenant, seq FROM cursors").fetchall())
        with store.read() as unit:
            return pending(unit, cursor=cursor, ahead=ahead)

    @property
    def degraded(self) -> str | None:
        """Why some entries were stored without a vector (the embedder's last error), or
        ``None`` when every entry has one."""
        with self._lock:
            return self._get("degraded")

    def status(self) -> IndexStatus:
        with self._lock:
            entries, vectors = self._conn.execute(
                "SELECT count(*), count(vector) FROM entries"
            ).fetchone()
            return IndexStatus(
                cursor=int(self._get("cursor") or 0),
                entries=entries,
                vectors=vectors,
                embedder=None if self.embedder is None else self.embedder.name,
                degraded=self._get("degraded"),
            )

    # -- feeding --------------------------------------------------------------------------

    def sync(
        self,
        store: Store,
        *,
        tenant: str | None = None,
        batch: int = 500,
        limit: int | None = None,
        deadline: float | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Apply outbox rows after the cursor (all, or ``limit``, in batches of ``batch``,
        none after the first begun once :func:`time.monotonic` reaches ``deadline``);
        returns how many.

        With ``tenant`` only that tenant's rows are applied (what a recall needs: its
        work never grows with another tenant's writes) and the tenant's own cursor
        moves; a later sync of every tenant skips the rows a tenant's sync applied.
        Rows another handle applied meanwhile are skipped (checked inside the write
        transaction), so an older row is never applied after a newer one.
        """
        applied = 0
        total = 0 if progress is None else self.lag(store, tenant=tenant)  # (for the bar)
        if limit is not None:
            total = min(total, limit)
        while (limit is None or applied < limit) and (
            deadline is None or applied == 0 or time.monotonic() < deadline
        ):
            size = batch if limit is None else min(batch, limit - applied)
            start = self.cursor if tenant is None else self.cursor_of(tenant)
            with store.read() as unit:
                rows = unit.outbox_after(start, limit=size, tenant=tenant)
                by_tenant: dict[str, list[str]] = {}
                for row in rows:
                    if row.op == "upsert":
                        by_tenant.setdefault(row.tenant, []).append(row.memory_id)
                records = {
                    (tenant, memory_id): record
                    for tenant, ids in by_tenant.items()
                    for memory_id, record in unit.get_records(tenant, ids).items()
                    if indexed(record)
                }
            if not rows:
                break
            by_key = self._embed_documents(records)
            with self._lock, self._transaction():
                stamp = self._stamp + 1
                removed = 0
                done = int(self._get("cursor") or 0)
                ahead = dict(self._conn.execute("SELECT tenant, seq FROM cursors").fetchall())
                for row in rows:
                    if row.seq <= max(done, ahead.get(row.tenant, 0)):
                        continue  # applied already, by a tenant's sync or another handle
                    record = records.get((row.tenant, row.memory_id))
                    if row.op == "upsert" and record is not None:
                        self._upsert(
                            record,
                            revision=row.revision,
                            generation=row.generation,
                            docs=by_key[(row.tenant, row.memory_id)],
                            stamp=stamp,
                        )
                    elif row.op == "delete":
                        removed += self._delete(
                            row.tenant, row.memory_id, revision=row.revision, stamp=stamp
                        )
                last = rows[-1].seq
                if tenant is None:
                    self._set("cursor", str(max(done, last)))
                    self._conn.execute("DELETE FROM cursors WHERE seq <= ?", (max(done, last),))
                elif last > max(done, ahead.get(tenant, 0)):
                    self._conn.execute(
                        "INSERT INTO cursors VALUES (?, ?) ON CONFLICT (tenant)"
                        " DO UPDATE SET seq = excluded.seq",
                        (tenant, last),
                    )
                self._set("stamp", str(stamp))
                if removed:
                    self._set("removed", str(int(self._get("removed") or 0) + removed))
            applied += len(rows)
            if progress is not None:
                progress(min(applied, max(total, applied)), max(total, applied))
        self._backfill(batch)
        self._prune()
        self._follow_anns(tenant)
        return applied

    def _follow_anns(self, tenant: str | None) -> None:
        """Bring the approximate indexes this handle holds (``tenant``'s, or all) up to
        date with what the sync changed, and save those that changed enough."""
        with self._lock:
            for name in self._graphs.held():
                if tenant is None or name == tenant:
                    ann = self._ann(name, self._matrix(name))
                    if ann is not None:
                        self._graphs.save(ann, stamp=self._stamp)

    def _prune(self) -> None:
        """Forget the removals recorded so far once there are ``prune_after`` of them."""
        with self._lock:
            if int(self._get("removed") or 0) < self.prune_after:
                return  # read outside a transaction: most syncs stop here
            with self._transaction():
                if int(self._get("removed") or 0) < self.prune_after:
                    return  # another handle pruned first
                stamp = self._stamp
                self._conn.execute("DELETE FROM removed WHERE changed <= ?", (stamp,))
                self._set("removed", "0")
                self._set("pruned", str(stamp))

    def rebuild(self, store: Store, *, progress: Progress | None = None) -> int:
        """Drop everything and replay the whole outbox."""
        with self._lock, self._transaction():
            self._drop_all()
            self._prepare()
        applied = self.sync(store, progress=progress)
        self._build_anns()
        return applied

    def rebuild_tenant(
        self, store: Store, tenant: str, *, batch: int = 500, progress: Progress | None = None
    ) -> int:
        """Drop ``tenant``'s entries and rebuild them from its outbox rows; every other
        tenant's stay as they are. Returns the rows applied. The epoch moves, as in
        :meth:`rebuild`, so no handle keeps vectors or graphs from before."""
        with self._lock, self._transaction():
            for kind in ("fts", "win"):
                self._conn.execute(f"DROP TABLE IF EXISTS {table_name(tenant, kind)}")
            self._conn.execute("DELETE FROM entries WHERE tenant = ?", (tenant,))
            self._conn.execute("DELETE FROM removed WHERE tenant = ?", (tenant,))
            reached = self._cursor_of(tenant)  # what syncs had applied for it
            stamp = self._stamp + 1
            self._set("stamp", str(stamp))
            self._set("epoch", str(stamp))
            self._matrices.clear()
            self._names.clear()
        total = self.lag(store, tenant=tenant) + reached  # an upper bound, for the bar
        applied, after = 0, 0
        while True:
            with store.read() as unit:
                rows = [
                    r
                    for r in unit.outbox_after(after, limit=batch, tenant=tenant)
                    if r.seq <= reached
                ]
                ids = [r.memory_id for r in rows if r.op == "upsert"]
                found = unit.get_records(tenant, ids) if ids else {}
                records = {m: r for m, r in found.items() if indexed(r)}
            if not rows:
                break
            vectors = self._embed_documents(records)
            with self._lock, self._transaction():
                stamp = self._stamp + 1
                for row in rows:  # in outbox order, as the syncs applied them
                    record = records.get(row.memory_id)
                    if row.op == "upsert" and record is not None:
                        self._upsert(
                            record,
                            revision=row.revision,
                            generation=row.generation,
                            docs=vectors[row.memory_id],
                            stamp=stamp,
                        )
                    elif row.op == "delete":
                        self._delete(tenant, row.memory_id, revision=row.revision, stamp=stamp)
                self._set("stamp", str(stamp))
            applied += len(rows)
            after = rows[-1].seq
            if progress is not None:
                progress(applied, max(total, applied))
        return applied + self.sync(store, tenant=tenant, progress=None)

    def _build_anns(self) -> None:
        """Build and save the approximate index of every tenant past the threshold."""
        if self.embedder is None or self.ann_threshold is None or not _ann.available():
            return
        with self._lock:
            tenants = self._conn.execute(
                "SELECT tenant FROM entries WHERE vector IS NOT NULL GROUP BY tenant"
                " HAVING count(*) >= ?",
                (self.ann_threshold,),
            ).fetchall()
            for (tenant,) in tenants:
                ann = self._ann(tenant, self._matrix(tenant))
                if ann is not None:
                    self._graphs.save(ann, stamp=self._stamp)

    def _embed_documents(
        self, records: dict[_K, MemoryRecord]
    ) -> dict[_K, list[tuple[Document, bytes | None]]]:
        """Each record's documents (:func:`~memledger.index.passages.documents`) with
        their vectors, embedded in one call."""
        docs = {key: documents(record) for key, record in records.items()}
        vectors = iter(self._embed([d.text for mine in docs.values() for d in mine]))
        return {key: [(d, next(vectors)) for d in mine] for key, mine in docs.items()}

    def _embed(self, texts: Sequence[str]) -> list[bytes | None]:
        if self.embedder is None or not texts:
            return [None] * len(texts)
        try:
            matrix = self.embedder.embed(list(texts))
        except EmbedderError as exc:
            with self._lock:
                self._set("degraded", f"{exc.reason}: {exc}")
            return [None] * len(texts)
        return [row.astype(np.float32).tobytes() for row in matrix]

    def _backfill(self, batch: int) -> None:
        """Give vectors to entries stored without one while the embedder was failing."""
        if self.embedder is None:
            return
        with self._lock:
            if self._get("degraded") is None:
                return
        while True:
            with self._lock:
                missing = self._conn.execute(
                    "SELECT id, text FROM entries WHERE vector IS NULL LIMIT ?", (batch,)
                ).fetchall()
            if not missing:
                with self._lock, self._transaction():
                    self._conn.execute("DELETE FROM meta WHERE key = 'degraded'")
                return
            vectors = self._embed([text for _, text in missing])
            if vectors[0] is None:
                return  # still failing; recorded as degraded
            with self._lock, self._transaction():
                stamp = self._stamp + 1
                self._conn.executemany(
                    "UPDATE entries SET vector = ?, changed = ? WHERE id = ?",
                    [
                        (v, stamp, entry_id)
                        for (entry_id, _), v in zip(missing, vectors, strict=True)
                    ],
                )
                self._set("stamp", str(stamp))

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)

    def _ensure(self, tenant: str, kind: str = "fts") -> str:
        table = table_name(tenant, kind)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
            "text, scope, tokenize = 'porter unicode61')"
        )
        return table

    def _around(self, tenant: str, entry_id: int, *, before: int, after: int) -> list[int]:
        """Entry ids of the ``before`` turns before and ``after`` turns after an entry in
        its thread (none when it has no thread)."""
        anchor = self._conn.execute(
            "SELECT thread, at FROM entries WHERE id = ? AND thread IS NOT NULL", (entry_id,)
        ).fetchone()
        if anchor is None:
            return []
        thread, at = anchor
        earlier = self._conn.execute(
            "SELECT id FROM entries WHERE tenant = ? AND thread = ? AND (at, id) < (?, ?)"
            " ORDER BY at DESC, id DESC LIMIT ?",
            (tenant, thread, at, entry_id, before),
        ).fetchall()
        later = self._conn.execute(
            "SELECT id FROM entries WHERE tenant = ? AND thread = ? AND (at, id) > (?, ?)"
            " ORDER BY at, id LIMIT ?",
            (tenant, thread, at, entry_id, after),
        ).fetchall()
        return [i for (i,) in reversed(earlier)] + [i for (i,) in later]

    def _rewindow(self, tenant: str, entry_ids: Iterable[int]) -> None:
        """Rewrite the window documents of these entries from the turns now around them."""
        table = self._ensure(tenant, "win")
        for entry_id in entry_ids:
            self._conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (entry_id,))
            row = self._conn.execute(
                "SELECT subject, text FROM entries WHERE id = ? AND thread IS NOT NULL",
                (entry_id,),
            ).fetchone()
            if row is None:
                continue
            around = self._around(tenant, entry_id, before=WINDOW_BEFORE, after=WINDOW_AFTER)
            texts = dict(
                self._conn.execute(
                    f"SELECT id, text FROM entries WHERE id IN ({', '.join('?' * len(around))})",
                    around,
                ).fetchall()
            )
            words = " ".join([row[1], *(_lead(texts[i]) for i in around if i in texts)])
            self._conn.execute(
                f"INSERT INTO {table} (rowid, text, scope) VALUES (?, ?, ?)",
                (entry_id, words, scope_token(row[0])),
            )
            self._conn.execute(
                "UPDATE entries SET win_length = ? WHERE id = ?", (bm25.length(words), entry_id)
            )

    def _affected(self, tenant: str, entry_id: int) -> list[int]:
        """The entries whose windows hold this one: the turns after it that look back to
        it, and the turns before it that look ahead to it."""
        return self._around(tenant, entry_id, before=WINDOW_AFTER, after=WINDOW_BEFORE)

    def _upsert(
        self,
        record: MemoryRecord,
        *,
        revision: int,
        generation: int,
        docs: Sequence[tuple[Document, bytes | None]],
        stamp: int,
    ) -> None:
        """Index ``record`` as its documents (one, or a long turn's passages), each with
        its vector, unless the index holds a later revision."""
        rows = self._conn.execute(
            "SELECT part, id, revision FROM entries WHERE tenant = ? AND memory_id = ?",
            (record.tenant, record.memory_id),
        ).fetchall()
        if any(held > revision for _, _, held in rows):
            return  # a newer revision is already indexed
        table = self._ensure(record.tenant)
        held = {part: entry_id for part, entry_id, _ in rows}
        thread = _thread(record)
        head: int | None = None
        for doc, vector in docs:
            text = doc.text
            start, end = doc.span or (None, None)
            entry_id = held.pop(doc.part, None)
            if entry_id is not None:
                self._conn.execute(
                    "UPDATE entries SET revision = ?, generation = ?, text = ?, vector = ?,"
                    " changed = ?, length = ?, span_start = ?, span_end = ? WHERE id = ?",
                    (revision, generation, text, vector, stamp, bm25.length(text), start, end,
                     entry_id),
                )  # fmt: skip
                self._conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (entry_id,))
            else:
                entry_id = self._conn.execute(
                    "INSERT INTO entries (tenant, memory_id, subject, family, kind, revision,"
                    " generation, text, speaker, thread, at, vector, changed, length, standing,"
                    " part, span_start, span_end)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.tenant,
                        record.memory_id,
                        record.subject,
                        record.family,
                        record.kind,
                        revision,
                        generation,
                        text,
                        _speaker(record),
                        thread if doc.part == 0 else None,  # a turn holds one place
                        format_time(record.valid_from),
                        vector,
                        stamp,
                        bm25.length(text),
                        _standing(record),
                        doc.part,
                        start,
                        end,
                    ),
                ).lastrowid
            self._conn.execute(
                f"INSERT INTO {table} (rowid, text, scope) VALUES (?, ?, ?)",
                (entry_id, text, scope_token(record.subject)),
            )
            if doc.part == 0:
                head = entry_id
        if held:  # passages the record no longer has
            self._drop_entries(record.tenant, list(held.values()))
            self._conn.execute(
                "INSERT INTO removed VALUES (?, ?, ?)", (record.tenant, record.memory_id, stamp)
            )
        if thread is not None and head is not None:
            self._rewindow(record.tenant, [head, *self._affected(record.tenant, head)])

    def _drop_entries(self, tenant: str, entry_ids: Sequence[int]) -> None:
        """Delete these entries with their lexical rows and windows."""
        table, windows = self._ensure(tenant), self._ensure(tenant, "win")
        for entry_id in entry_ids:
            self._conn.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
            self._conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (entry_id,))
            self._conn.execute(f"DELETE FROM {windows} WHERE rowid = ?", (entry_id,))

    def _delete(self, tenant: str, memory_id: str, *, revision: int, stamp: int) -> bool:
        """Remove ``memory_id``'s entries (every passage of a long turn) unless the index
        holds a later revision; whether it did."""
        rows = self._conn.execute(
            "SELECT id, revision FROM entries WHERE tenant = ? AND memory_id = ? ORDER BY part",
            (tenant, memory_id),
        ).fetchall()
        if not rows or any(held > revision for _, held in rows):
            return False
        head = rows[0][0]
        affected = self._affected(tenant, head)
        self._drop_entries(tenant, [entry_id for entry_id, _ in rows])
        # the windows around it lose its words (a revoked turn leaves no trace)
        self._rewindow(tenant, [head, *affected])
        self._conn.execute("INSERT INTO removed VALUES (?, ?, ?)", (tenant, memory_id, stamp))
        return True

    # -- searching ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        tenant: str,
        k: int,
        subjects: Sequence[str] | None = None,
        windows: bool = False,
    ) -> list[Hit]:
        """The ``k`` best lexical entries of ``tenant`` (only its own tables are read), of
        ``subjects`` only when given, scored with their own BM25 statistics
        (:mod:`memledger.index._fts`).

        With ``windows=True`` conversation turns are matched together with the turns
        around them (:data:`WINDOW_BEFORE` before, :data:`WINDOW_AFTER` after), and
        only turns are found.
        """
        _check_k(k)
        terms = query_terms(query)
        if not terms:
            return []
        table = table_name(tenant, "win" if windows else "fts")
        with self._lock:
            try:
                if subjects is None:
                    return search_tenant(self._conn, terms, tenant=tenant, k=k, table=table)
                return search_subjects(
                    self._conn, terms, tenant=tenant, k=k, subjects=subjects, table=table
                )
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []  # nothing of this tenant's has been indexed yet
                raise StoreError(f"index search failed: {exc}") from exc

    def search_vectors(
        self, query: str, *, tenant: str, k: int, subjects: Sequence[str] | None = None
    ) -> list[Hit]:
        """The ``k`` entries of ``tenant`` nearest to ``query`` by cosine, of ``subjects``
        only when given: an exact scan, or for a tenant-wide search of a tenant past
        ``ann_threshold`` the approximate index's candidates ranked exactly.

        Scores are the cosine above the median cosine of the rows searched; on the
        approximate path that median is estimated from a fixed sample of the
        tenant's live rows (:meth:`TenantAnn.typical`), which moves every score of
        a query alike and keeps the exact ranking.

        Raises :class:`~memledger.errors.EmbedderError` when there is no embedder
        or it fails; the caller decides whether to go on lexical only.
        """
        _check_k(k)
        if self.embedder is None:
            raise EmbedderError("this index has no embedder", reason="unavailable")
        vector = self.embedder.embed([query])[0]
        with self._lock:
            matrix = self._matrix(tenant)
            ann = None if subjects is not None else self._ann(tenant, matrix)
            if ann is None:
                self.vector_searches["exact"] += 1
                return matrix.nearest(vector, tenant=tenant, k=k, subjects=subjects)
            self.vector_searches["ann"] += 1
            positions = ann.candidates(vector, k=k + min(matrix.extra, 3 * k))
            return matrix.rank(vector, positions, typical=ann.typical(vector), tenant=tenant, k=k)

    def warm(self, tenant: str) -> AnnStatus | None:
        """Do now what ``tenant``'s first tenant-wide vector search would: read its
        vectors and, past ``ann_threshold``, load or build its approximate index;
        that index's status (``None``: searches stay exact)."""
        if self.embedder is None:
            return None
        with self._lock:
            ann = self._ann(tenant, self._matrix(tenant))
            return None if ann is None else ann.status()

    def ann_status(self, tenant: str) -> AnnStatus | None:
        """The approximate index this handle holds for ``tenant``, or ``None``."""
        with self._lock:
            return self._graphs.status(tenant)

    def _ann(self, tenant: str, matrix: Matrix) -> TenantAnn | None:
        """``tenant``'s approximate index, up to date, if its tenant-wide searches use
        one (call with the lock held)."""
        assert self.embedder is not None
        return self._graphs.get(
            tenant, matrix, embedder=self.embedder.name, dimensions=self.embedder.dimensions
        )

    def _matrix(self, tenant: str) -> Matrix:
        """``tenant``'s vectors, brought up to date (call with the lock held)."""
        assert self.embedder is not None
        stamp, epoch = self._stamp, int(self._get("epoch") or 0)
        pruned = int(self._get("pruned") or -1)
        matrix = self._matrices.get(tenant)
        # a matrix older than the last prune may have missed removals: read it again
        if matrix is None or matrix.epoch != epoch or matrix.stamp < pruned:
            matrix = Matrix(epoch=epoch, dimensions=self.embedder.dimensions)
            self._matrices[tenant] = matrix
        if matrix.stamp == stamp:
            return matrix
        for (memory_id,) in self._conn.execute(
            "SELECT memory_id FROM removed WHERE tenant = ? AND changed > ? ORDER BY changed",
            (tenant, matrix.stamp),
        ):
            matrix.remove(memory_id)
        for (
            memory_id,
            subject,
            family,
            kind,
            revision,
            generation,
            text,
            vector,
            part,
            start,
            end,
        ) in self._conn.execute(
            "SELECT memory_id, subject, family, kind, revision, generation, text, vector,"
            " part, span_start, span_end FROM entries WHERE tenant = ? AND changed > ?"
            " ORDER BY id",
            (tenant, matrix.stamp),
        ):
            # interned: a tenant's many rows share a few subjects, families and kinds
            span = None if start is None else (start, end)
            row = (intern(subject), intern(family), intern(kind), revision, generation, text, span)
            matrix.put(memory_id, row, vector, part=part)
        matrix.stamp = stamp
        return matrix

    def standing(
        self, tenant: str, *, subjects: Sequence[str] | None = None, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """``(memory_id, text, when)`` of the turns of ``tenant`` (of ``subjects`` only,
        when given) that state a standing instruction or preference, newest first;
        ``when`` is the scope it applies in ("" for always), read once when indexed."""
        sql = (
            "SELECT memory_id, text, standing FROM entries"
            " WHERE tenant = ? AND standing IS NOT NULL"
        )
        params: list[object] = [tenant]
        if subjects is not None:
            wanted = list(dict.fromkeys(subjects))
            sql += f" AND subject IN ({', '.join('?' * len(wanted))})"
            params += wanted
        sql += " ORDER BY at DESC, id DESC LIMIT ?"
        with self._lock:
            return [(m, t, w) for m, t, w in self._conn.execute(sql, (*params, limit))]

    def names(
        self,
        tenant: str,
        *,
        subject: str | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> frozenset[str]:
        """The speakers and subjects of ``tenant``'s entries (of ``subject``'s only, when
        given): who a query can name; of the private namespaces only those ``visible``
        passes (:meth:`~memledger.index._names.KnownNames.visible_to`).

        Kept up to date from the entries changed since the last call (a name whose
        entries are all gone stays known until the index is rebuilt).
        """
        return self._known(tenant, subject).visible_to(visible)

    def _known(self, tenant: str, subject: str | None) -> KnownNames:
        sql = "SELECT DISTINCT speaker, subject FROM entries WHERE tenant = ? AND changed > ?"
        if subject is not None:
            sql += " AND subject = ?"

        def changed(since: int) -> Iterable[tuple[str | None, str]]:
            extra = () if subject is None else (subject,)
            return self._conn.execute(sql, (tenant, since, *extra))

        with self._lock:
            stamp, epoch = self._stamp, int(self._get("epoch") or 0)
            return self._names.get(tenant, subject, epoch=epoch, stamp=stamp, changed=changed)

    def purge(self, tenant: str) -> None:
        """After an erasure (synced first): leave nothing of ``tenant``'s deleted entries
        in the file. Their rows' bytes are overwritten as they go (``secure_delete``);
        this merges the tenant's full-text segments, which keep a deleted document's
        tokens until merged, rebuilds the tenant's approximate index if it has one (a
        graph keeps a removed key's vector until rebuilt), and checkpoints and
        truncates the write-ahead log."""
        with self._lock:
            self._rebuild_graph(tenant)
            try:
                for kind in ("fts", "win"):
                    table = table_name(tenant, kind)
                    if self._conn.execute(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
                    ).fetchone():
                        self._conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                (busy, _, _) = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"index {str(self.path)!r}: purge failed: {exc}") from exc
            if busy:
                raise StoreLockedError(
                    f"index {str(self.path)!r}: a reader held the write-ahead log; purge again"
                )

    def _rebuild_graph(self, tenant: str) -> None:
        """``tenant``'s graph, if it has one, built again from its live rows and saved
        over the old file (call with the lock held)."""
        if not self._graphs.forget(tenant) or self.embedder is None:
            return
        ann = self._ann(tenant, self._matrix(tenant))
        if ann is not None:
            self._graphs.save(ann, stamp=self._stamp)

    def glance(self, tenant: str, *, subject: str | None = None) -> Glance:
        """:meth:`names`, :meth:`cursor_of` and :attr:`degraded` together, as a read
        starts."""
        with self._lock:
            return Glance(
                known=self._known(tenant, subject),
                cursor=self._cursor_of(tenant),
                degraded=self._get("degraded"),
            )

    def speakers(self, tenant: str, memory_ids: Iterable[str]) -> dict[str, str]:
        """The speaker of each episode among ``memory_ids``."""
        ids = list(memory_ids)
        if not ids:
            return {}
        with self._lock:
            return {
                m: s
                for m, s in self._conn.execute(
                    "SELECT memory_id, speaker FROM entries WHERE tenant = ?"
                    # "+": look rows up by memory id, never scan the speaker index
                    f" AND +speaker IS NOT NULL AND memory_id IN ({', '.join('?' * len(ids))})",
                    (tenant, *ids),
                )
            }

    def neighbours(
        self, tenant: str, memory_ids: Iterable[str], *, window: int
    ) -> dict[str, list[tuple[str, int]]]:
        """For each episode among ``memory_ids``: the entries of its thread within
        ``window`` places before or after it, as ``(memory_id, offset)``: -1 the turn
        just before, 1 the turn just after."""
        ids = list(memory_ids)
        found: dict[str, list[tuple[str, int]]] = {}
        if not ids or window < 1:
            return found
        with self._lock:
            anchors = self._conn.execute(
                "SELECT memory_id, thread, at, id FROM entries WHERE tenant = ?"
                # "+": look rows up by memory id, never scan the thread index
                f" AND +thread IS NOT NULL AND memory_id IN ({', '.join('?' * len(ids))})",
                (tenant, *ids),
            ).fetchall()
            if not anchors:
                return found
            # per anchor one cached statement: the turns before it, then those after it
            sql = (
                "SELECT * FROM (SELECT -1, memory_id, at, id FROM entries"
                " WHERE tenant = ?1 AND thread = ?2 AND (at, id) < (?3, ?4)"
                " ORDER BY at DESC, id DESC LIMIT ?5) UNION ALL"
                " SELECT * FROM (SELECT 1, memory_id, at, id FROM entries"
                " WHERE tenant = ?1 AND thread = ?2 AND (at, id) > (?3, ?4)"
                " ORDER BY at, id LIMIT ?5)"
            )
            for memory_id, thread, at, entry_id in anchors:
                rows = self._conn.execute(sql, (tenant, thread, at, entry_id, window)).fetchall()
                # nearest first on each side (SQL does not promise a UNION ALL's order)
                before = sorted((r for r in rows if r[0] < 0), key=lambda r: (r[2], r[3]))
                after = sorted((r for r in rows if r[0] > 0), key=lambda r: (r[2], r[3]))
                found[memory_id] = [(r[1], -d) for d, r in enumerate(reversed(before), 1)] + [
                    (r[1], d) for d, r in enumerate(after, 1)
                ]
        return found


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
