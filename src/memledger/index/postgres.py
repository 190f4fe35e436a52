"""The derived index in PostgreSQL: BM25 over a postings table, vectors in pgvector.

What :class:`~memledger.index.derived.DerivedIndex` is for a SQLite store, in the
canonical store's own database (schema ``memledger_index``), so every service
process and worker shares one index instead of feeding one file per machine
(``memledger[postgres]``; vectors need the ``vector`` extension). The same
contract: fed from the outbox by sequence (the cursor and the rows move in one
transaction, feeders take turns on an advisory lock, a tenant's sync moves that
tenant's cursor ahead of the global one), derived (a schema, tokenizer or embedder
change drops and refills it; :meth:`PostgresIndex.rebuild`), every entry carrying
tenant, subject, family, kind, memory id, revision and generation for the read
path's canonical recheck, episodes their speaker, thread and time.

Lexical: SQLite's FTS5 ``porter unicode61`` tokens, computed in Python
(:mod:`memledger.index._tokens`), stored one row per (document, distinct token)
in ``postings`` (an entry's own words) and ``win_postings`` (a turn with the turns
around it, rewritten as they come and go), keyed ``(tenant, lexeme, subject,
doc)``. A search reads the query's lexemes of one tenant, and of the subjects
asked for, from that key, index only: tenant and subject filter inside the query,
never after ranking. BM25 has FTS5's formula and constants, with the statistics
of the tenant (tenant-wide, as FTS5's per-tenant tables) or of the subjects
(subject-scoped, as :mod:`memledger.index._fts`), so both backends rank alike.
Why not ``tsvector`` with GIN: a tenant-wide query whose words are common reads and
unnests half a tenant's vectors: 878 ms p50 at 60k documents against 48 ms here
(``docs/design/postgres-index.md``).

Vectors: a ``vector(d)`` column. A search scores by inner product (rows are unit
length: the cosine) minus the median cosine of the rows searched, as the SQLite
index does. Subject-scoped searches, and tenant-wide ones of tenants below
``ann_threshold`` live vectors, are exact scans of just those rows. A tenant at or
past it gets a partial HNSW index of its own rows (``WHERE tenant = '...'``),
built on its first tenant-wide search, by :meth:`PostgresIndex.warm` or by
:meth:`PostgresIndex.rebuild`; its candidates are ranked by their exact
cosines and the median is estimated from a fixed sample of the tenant's rows. One
HNSW index over every tenant would filter after the graph search (pgvector before
0.8) and lose small tenants' neighbours: recall 0.17 for a tenant of 0.5% of the
rows, measured.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memledger.domain.records import MemoryRecord, format_time
from memledger.errors import EmbedderError, InvalidInputError, StoreError
from memledger.index import _subject_bm25 as bm25
from memledger.index._ann import ANN_THRESHOLD, AnnStatus
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
from memledger.index._fts import _hit
from memledger.index._names import NameCache
from memledger.index._tokens import STEMMER_VERSION, stem, tokens
from memledger.index.catchup import pending
from memledger.index.lexical import indexed, query_terms
from memledger.index.passages import Document, best_per_memory, documents
from memledger.ports import OutboxEntry, Store

try:
    import psycopg
    import psycopg_pool
    from pgvector.psycopg import register_vector
    from psycopg import sql
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise ImportError(
        "the PostgreSQL index needs the postgres extra: pip install 'memledger[postgres]'"
    ) from exc

__all__ = ["PostgresIndex"]

_Embedded = dict[tuple[str, str], list[tuple[Document, "np.ndarray | None"]]]
"""Each record's documents with their vectors, by ``(tenant, memory id)``."""

SCHEMA = "3"
"""The layout's version: a namespace of another is emptied on open and refilled from
the outbox."""
NAMESPACE = "memledger_index"
SAMPLE = 2048
"""Rows whose median cosine stands for a large tenant's (:data:`memledger.index._ann.SAMPLE`)."""
EF_SEARCH = 400
"""HNSW search depth (``hnsw.ef_search``): 0.92 of the exact top 20 for a tenant's own
partial index at 60k rows in the spike, a few milliseconds."""
OVERFETCH = 32
"""Candidates asked of HNSW beyond ``k``."""
_FEED_LOCK = 0x6D6C_6978  # "mlix": one feeder at a time per database
_PREPARE_LOCK = 0x6D6C_6970  # "mlip": one handle creates or resets the tables


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _int4(text: str) -> int:
    """A fixed pseudo-random PostgreSQL ``integer`` for ``text``: the second half of the
    index's advisory lock ids (one pair per namespace), an entry's rank in the median's
    sample."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") - 2**31


def _name(prefix: str, tenant: str) -> str:
    return f"{prefix}_" + hashlib.sha256(tenant.encode()).hexdigest()[:20]


class PostgresIndex:
    """Lexical and vector search over the records of a PostgreSQL store, kept in that
    store's database. Safe to share between threads (a pool of connections).

    ``embedder=None`` keeps the index lexical only. ``ann_threshold``: the live vectors
    from which a tenant's tenant-wide vector searches use its HNSW index (``None``:
    never).
    """

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        ann_threshold: int | None = ANN_THRESHOLD,
        namespace: str = NAMESPACE,
        pool_size: int = 4,
    ) -> None:
        if not isinstance(namespace, str) or not _IDENTIFIER.fullmatch(namespace):
            raise InvalidInputError(
                "namespace must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most"
                f" 63 characters), got {namespace!r}"
            )
        if ann_threshold is not None and (
            isinstance(ann_threshold, bool)
            or not isinstance(ann_threshold, int)
            or ann_threshold < 1
        ):
            raise InvalidInputError(
                f"ann_threshold must be an integer >= 1 or None, got {ann_threshold!r}"
            )
        dsn = getattr(store, "dsn", None)
        if not isinstance(dsn, str):
            raise InvalidInputError(
                f"a PostgresIndex needs a PostgreSQL store, got {type(store).__name__}"
            )
        self.url = store.url
        self.ns = namespace
        """The schema the index's tables live in."""
        self._lock_key = _int4(namespace)
        self.embedder = embedder
        self.ann_threshold = ann_threshold
        self.vector_searches: dict[VectorPath, int] = {"exact": 0, "ann": 0}
        """How many vector searches each path served since this handle was opened."""
        self._anns: dict[str, AnnStatus] = {}
        self._names = NameCache()
        self._pool = psycopg_pool.ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            # a statement prepared after 5 runs may get a generic plan for "tenant = $1"
            # (measured 40x slower on a small tenant): plan each query for its values
            kwargs={"autocommit": True, "prepare_threshold": None},
            configure=self._configure if embedder is not None else None,
            open=False,
            name="memledger-index",
        )
        try:
            if embedder is not None:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    _create_extension(conn)
            self._pool.open(wait=True, timeout=30)
            with self._transaction() as conn:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, %s)", (_PREPARE_LOCK, self._lock_key)
                )
                self._prepare(conn)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(f"cannot open the index in {self.url!r}: {exc}") from exc

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)

    # -- tables ---------------------------------------------------------------------------

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        ns = self.ns
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {ns}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {ns}.meta (key text PRIMARY KEY, value text NOT NULL)"
        )
        wanted = {"schema": SCHEMA, "embedder": self._embedder_name, "tokens": STEMMER_VERSION}
        found = dict(conn.execute(f"SELECT key, value FROM {ns}.meta").fetchall())
        if any(found.get(key) != value for key, value in wanted.items()):
            self._drop_all(conn)
            for key, value in wanted.items():
                _set(conn, ns, key, value)
        elif found.get("ready") == SCHEMA:
            return  # every table and index is there: no DDL, no locks on busy tables
        vector = "bytea" if self.embedder is None else f"vector({self.embedder.dimensions})"
        text = 'text COLLATE "C"'
        for statement in (
            f"CREATE TABLE IF NOT EXISTS {ns}.entries (tenant {text} NOT NULL,"
            " id bigint GENERATED ALWAYS AS IDENTITY, memory_id text NOT NULL,"
            f" subject {text} NOT NULL, family text NOT NULL, kind text NOT NULL,"
            " revision bigint NOT NULL, generation bigint NOT NULL, text text NOT NULL,"
            f" speaker text, thread {text}, at {text} NOT NULL, vector {vector},"
            " sample integer NOT NULL, changed bigint NOT NULL, length integer NOT NULL,"
            " win_length integer, standing text, part integer NOT NULL,"
            " span_start integer, span_end integer,"
            " PRIMARY KEY (tenant, id), UNIQUE (tenant, memory_id, part))",
            f"CREATE INDEX IF NOT EXISTS entries_changed ON {ns}.entries (tenant, changed)",
            f"CREATE INDEX IF NOT EXISTS entries_thread ON {ns}.entries"
            " (tenant, thread, at, id) WHERE thread IS NOT NULL",
            f"CREATE INDEX IF NOT EXISTS entries_subject ON {ns}.entries"
            " (tenant, subject) INCLUDE (length, win_length)",
            f"CREATE INDEX IF NOT EXISTS entries_standing ON {ns}.entries"
            " (tenant, subject) WHERE standing IS NOT NULL",
            f"CREATE INDEX IF NOT EXISTS entries_sample ON {ns}.entries"
            " (tenant, sample) WHERE vector IS NOT NULL",
            f"CREATE INDEX IF NOT EXISTS entries_unvectored ON {ns}.entries"
            " (tenant, id) WHERE vector IS NULL",
            *(
                f"CREATE TABLE IF NOT EXISTS {ns}.{table} (tenant {text} NOT NULL,"
                f" lexeme {text} NOT NULL, subject {text} NOT NULL, doc bigint NOT NULL,"
                " tf integer NOT NULL, length integer NOT NULL,"
                " PRIMARY KEY (tenant, lexeme, subject, doc) INCLUDE (tf, length))"
                for table in ("postings", "win_postings")
            ),
            *(
                f"CREATE INDEX IF NOT EXISTS {table}_doc ON {ns}.{table} (tenant, doc)"
                for table in ("postings", "win_postings")
            ),
            # per tenant: documents and tokens of each kind ("entries", "windows"), and
            # how many entries have a vector ("vectors")
            f"CREATE TABLE IF NOT EXISTS {ns}.stats (tenant {text} NOT NULL,"
            " kind text NOT NULL, docs bigint NOT NULL, tokens bigint NOT NULL,"
            " PRIMARY KEY (tenant, kind))",
            f"CREATE TABLE IF NOT EXISTS {ns}.cursors"
            f" (tenant {text} PRIMARY KEY, seq bigint NOT NULL)",
        ):
            conn.execute(statement)
        _set(conn, ns, "ready", SCHEMA)

    def _drop_all(self, conn: psycopg.Connection[Any]) -> None:
        ns = self.ns
        stamp = int(_get(conn, ns, "stamp") or 0) + 1  # keeps rising, so other handles see it
        for table in ("entries", "postings", "win_postings", "stats", "cursors"):
            conn.execute(f"DROP TABLE IF EXISTS {ns}.{table}")
        conn.execute(f"DELETE FROM {ns}.meta")
        _set(conn, ns, "stamp", str(stamp))
        _set(conn, ns, "epoch", str(stamp))
        self._anns.clear()
        self._names.clear()

    @property
    def _embedder_name(self) -> str:
        return "" if self.embedder is None else self.embedder.name

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"index in {self.url!r} failed: {exc}") from exc
        except psycopg_pool.PoolTimeout as exc:
            raise StoreError(f"index in {self.url!r}: no connection in time: {exc}") from exc

    @contextmanager
    def _feeding(self) -> Iterator[tuple[psycopg.Connection[Any], int]]:
        """A transaction that changes entries: the feed lock (one feeder at a time) and
        the next stamp, recorded at commit (other handles see what changed)."""
        with self._transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_FEED_LOCK, self._lock_key))
            stamp = int(_get(conn, self.ns, "stamp") or 0) + 1
            yield conn, stamp
            _set(conn, self.ns, "stamp", str(stamp))

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self._connection() as conn, conn.transaction():
            yield conn

    # -- state ----------------------------------------------------------------------------

    @property
    def cursor(self) -> int:
        """The outbox sequence up to which every tenant's rows are applied."""
        ns = self.ns
        with self._connection() as conn:
            return int(_get(conn, ns, "cursor") or 0)

    def cursor_of(self, tenant: str) -> int:
        """The outbox sequence up to which ``tenant``'s rows are applied."""
        ns = self.ns
        with self._connection() as conn:
            return _cursor_of(conn, ns, tenant)

    def lag(self, store: Store, *, tenant: str | None = None) -> int:
        """Outbox rows the index has not applied yet: of every tenant, or of ``tenant``."""
        if tenant is not None:
            with store.read() as unit:
                return unit.outbox_pending(tenant, after=self.cursor_of(tenant))
        ns = self.ns
        with self._connection() as conn:
            cursor = int(_get(conn, ns, "cursor") or 0)
            ahead = dict(conn.execute(f"SELECT tenant, seq FROM {ns}.cursors").fetchall())
        with store.read() as unit:
            return pending(unit, cursor=cursor, ahead=ahead)

    @property
    def degraded(self) -> str | None:
        """Why some entries were stored without a vector, or ``None``."""
        ns = self.ns
        with self._connection() as conn:
            return _get(conn, ns, "degraded")

    def status(self) -> IndexStatus:
        ns = self.ns
        with self._connection() as conn:
            entries, vectors = _one(conn, f"SELECT count(*), count(vector) FROM {ns}.entries")
            return IndexStatus(
                cursor=int(_get(conn, ns, "cursor") or 0),
                entries=entries,
                vectors=vectors,
                embedder=None if self.embedder is None else self.embedder.name,
                degraded=_get(conn, ns, "degraded"),
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
        """Apply outbox rows after the cursor (all, or ``limit``, none after the first
        batch begun past ``deadline``); returns how many.
        As :meth:`DerivedIndex.sync <memledger.index.derived.DerivedIndex.sync>`."""
        ns = self.ns
        applied = 0
        total = 0
        if progress is not None:  # (a recall's sync asks for no progress: fewer round trips)
            total = self.lag(store, tenant=tenant)
            if limit is not None:
                total = min(total, limit)
        while (limit is None or applied < limit) and (
            deadline is None or applied == 0 or time.monotonic() < deadline
        ):
            size = batch if limit is None else min(batch, limit - applied)
            start = self.cursor if tenant is None else self.cursor_of(tenant)
            rows, records = _read_outbox(store, start, limit=size, tenant=tenant)
            if not rows:
                break
            vectors = self._embed_records(records)
            with self._feeding() as (conn, stamp):
                done = int(_get(conn, ns, "cursor") or 0)
                ahead = dict(conn.execute(f"SELECT tenant, seq FROM {ns}.cursors").fetchall())
                fresh = [  # skipping what a tenant's sync or another handle applied
                    row for row in rows if row.seq > max(done, ahead.get(row.tenant, 0))
                ]
                _Feed(conn, ns, stamp).apply(fresh, records, vectors)
                last = rows[-1].seq
                if tenant is None:
                    _set(conn, ns, "cursor", str(max(done, last)))
                    conn.execute(f"DELETE FROM {ns}.cursors WHERE seq <= %s", (max(done, last),))
                elif last > max(done, ahead.get(tenant, 0)):
                    conn.execute(
                        f"INSERT INTO {ns}.cursors VALUES (%s, %s) ON CONFLICT (tenant)"
                        " DO UPDATE SET seq = excluded.seq",
                        (tenant, last),
                    )
            applied += len(rows)
            if progress is not None:
                progress(min(applied, max(total, applied)), max(total, applied))
        self._backfill(batch)
        return applied

    def rebuild(self, store: Store, *, progress: Progress | None = None) -> int:
        """Drop everything and replay the whole outbox; then build the HNSW index of
        every tenant past the threshold."""
        with self._transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_PREPARE_LOCK, self._lock_key))
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_FEED_LOCK, self._lock_key))
            self._drop_all(conn)
            self._prepare(conn)
        applied = self.sync(store, progress=progress)
        self._build_anns()
        return applied

    def rebuild_tenant(
        self, store: Store, tenant: str, *, batch: int = 500, progress: Progress | None = None
    ) -> int:
        """Drop ``tenant``'s entries and rebuild them from its outbox rows; every other
        tenant's stay as they are. Returns the rows applied."""
        ns = self.ns
        with self._feeding() as (conn, stamp):
            for table in ("entries", "postings", "win_postings", "stats"):
                conn.execute(f"DELETE FROM {ns}.{table} WHERE tenant = %s", (tenant,))
            reached = _cursor_of(conn, ns, tenant)  # what syncs had applied for it
            _set(conn, ns, "epoch", str(stamp))
        total = self.lag(store, tenant=tenant) + reached  # an upper bound, for the bar
        applied, after = 0, 0
        while True:
            rows, records = _read_outbox(store, after, limit=batch, tenant=tenant)
            rows = [r for r in rows if r.seq <= reached]
            if not rows:
                break
            vectors = self._embed_records(records)
            with self._feeding() as (conn, stamp):
                _Feed(conn, ns, stamp).apply(rows, records, vectors)  # as the syncs did
            applied += len(rows)
            after = rows[-1].seq
            if progress is not None:
                progress(applied, max(total, applied))
        return applied + self.sync(store, tenant=tenant, progress=None)

    def _embed_records(self, records: dict[tuple[str, str], MemoryRecord]) -> _Embedded:
        """Each record's documents (one, or a long turn's passages) with their vectors."""
        docs = {key: documents(record) for key, record in records.items()}
        vectors = iter(self._embed([d.text for mine in docs.values() for d in mine]))
        return {key: [(d, next(vectors)) for d in mine] for key, mine in docs.items()}

    def _embed(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        ns = self.ns
        if self.embedder is None or not texts:
            return [None] * len(texts)
        try:
            matrix = self.embedder.embed(list(texts))
        except EmbedderError as exc:
            with self._connection() as conn:
                _set(conn, ns, "degraded", f"{exc.reason}: {exc}")
            return [None] * len(texts)
        return [row.astype(np.float32) for row in matrix]

    def _backfill(self, batch: int) -> None:
        """Give vectors to entries stored without one while the embedder was failing."""
        ns = self.ns
        if self.embedder is None or self.degraded is None:
            return
        while True:
            with self._connection() as conn:
                missing = conn.execute(
                    f"SELECT tenant, id, text FROM {ns}.entries WHERE vector IS NULL LIMIT %s",
                    (batch,),
                ).fetchall()
            if not missing:
                with self._connection() as conn:
                    conn.execute(f"DELETE FROM {ns}.meta WHERE key = 'degraded'")
                return
            vectors = self._embed([text for _, _, text in missing])
            if vectors[0] is None:
                return  # still failing; recorded as degraded
            with self._feeding() as (conn, stamp):
                cur = conn.cursor()
                cur.executemany(
                    f"UPDATE {ns}.entries SET vector = %s, changed = %s"
                    " WHERE tenant = %s AND id = %s AND vector IS NULL",
                    [(v, stamp, t, i) for (t, i, _), v in zip(missing, vectors, strict=True)],
                )
                for tenant, count in Counter(t for t, _, _ in missing).items():
                    _add_stats(conn, ns, tenant, "vectors", docs=count, tokens=0)

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
        """The ``k`` best lexical entries of ``tenant``, of ``subjects`` only when given,
        by BM25 with the statistics of the tenant (or of the subjects). With
        ``windows=True`` turns are matched together with the turns around them."""
        ns = self.ns
        _check_k(k)
        terms = query_terms(query)
        if not terms:
            return []
        lexemes = [stem(t) for t in terms]  # a term twice (by its stem) counts twice, as in FTS5
        table = "win_postings" if windows else "postings"
        column = "win_length" if windows else "length"
        params: dict[str, Any] = {"tenant": tenant, "lexemes": lexemes, "k": k}
        if subjects is None:
            stats = (
                f"SELECT docs::float8 AS docs, tokens::float8 / nullif(docs, 0) AS avgdl"
                f" FROM {ns}.stats WHERE tenant = %(tenant)s AND kind = %(kind)s"
            )
            scope = ""
            params["kind"] = "windows" if windows else "entries"
        else:
            wanted = list(dict.fromkeys(subjects))
            if not wanted:
                return []
            stats = (
                f"SELECT count({column})::float8 AS docs,"
                f" sum({column})::float8 / nullif(count({column}), 0) AS avgdl"
                f" FROM {ns}.entries WHERE tenant = %(tenant)s"
                " AND subject = ANY(%(subjects)s)"
            )
            scope = " AND subject = ANY(%(subjects)s)"
            params["subjects"] = wanted
        query_sql = (
            f"WITH stats AS MATERIALIZED ({stats}),"
            " q AS (SELECT lexeme, count(*) AS times FROM unnest(%(lexemes)s::text[])"
            " AS q(lexeme) GROUP BY lexeme),"
            f" p AS MATERIALIZED (SELECT lexeme, doc, tf, length FROM {ns}.{table}"
            f" WHERE tenant = %(tenant)s AND lexeme = ANY(%(lexemes)s::text[]){scope}),"
            " d AS (SELECT lexeme, count(*)::float8 AS hold FROM p GROUP BY lexeme),"
            " w AS (SELECT q.lexeme, q.times * CASE WHEN x > 0 THEN x ELSE 1e-6 END AS idf"
            " FROM q JOIN d USING (lexeme) CROSS JOIN stats,"
            " LATERAL ln((stats.docs - d.hold + 0.5) / (d.hold + 0.5)) AS x),"
            " best AS (SELECT p.doc, sum(w.idf * (p.tf * %(k1p1)s::float8) / (p.tf"
            " + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * p.length / stats.avgdl)))"
            " AS score FROM p JOIN w USING (lexeme) CROSS JOIN stats"
            " GROUP BY p.doc ORDER BY score DESC, p.doc LIMIT %(k)s)"
            " SELECT e.memory_id, e.subject, e.family, e.kind, e.revision, e.generation,"
            f" best.score, e.text, e.span_start, e.span_end FROM best JOIN {ns}.entries e"
            " ON e.tenant = %(tenant)s AND e.id = best.doc ORDER BY best.score DESC, best.doc"
        )
        params.update(k1=bm25.K1, k1p1=bm25.K1 + 1.0, b=bm25.B)
        with self._connection() as conn:
            while True:  # more rows when passages of one turn take several top places
                rows = conn.execute(query_sql, params).fetchall()
                hits = best_per_memory(
                    _hit(tenant, row[:6], float(row[6]), row[7], row[8:]) for row in rows
                )
                if len(hits) >= k or len(rows) < params["k"]:
                    return hits[:k]
                params["k"] *= 4

    def search_vectors(
        self, query: str, *, tenant: str, k: int, subjects: Sequence[str] | None = None
    ) -> list[Hit]:
        """The ``k`` entries of ``tenant`` nearest to ``query`` by cosine, of ``subjects``
        only when given: an exact scan of those rows, or for a tenant-wide search of a
        tenant past ``ann_threshold`` its HNSW index's candidates ranked exactly.
        Scores are the cosine above the median cosine of the rows searched (on the
        HNSW path, of a fixed sample of them).

        Raises :class:`~memledger.errors.EmbedderError` when there is no embedder or it
        fails."""
        ns = self.ns
        _check_k(k)
        if self.embedder is None:
            raise EmbedderError("this index has no embedder", reason="unavailable")
        vector = self.embedder.embed([query])[0].astype(np.float32)
        if subjects is None and self._ann(tenant) is not None:
            self.vector_searches["ann"] += 1
            return self._search_ann(vector, tenant=tenant, k=k)
        self.vector_searches["exact"] += 1
        params: dict[str, Any] = {"tenant": tenant, "q": vector, "k": k}
        scope = ""
        if subjects is not None:
            params["subjects"] = list(dict.fromkeys(subjects))
            scope = " AND subject = ANY(%(subjects)s)"
        with self._connection() as conn:
            query = (
                "WITH s AS MATERIALIZED (SELECT id, -(vector <#> %(q)s)::float4 AS cosine"
                f" FROM {ns}.entries WHERE tenant = %(tenant)s AND vector IS NOT NULL"
                f"{scope}),"
                " m AS (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cosine) AS typical"
                " FROM s),"
                " top AS (SELECT id, cosine FROM s ORDER BY cosine DESC, id LIMIT %(k)s)"
                " SELECT e.memory_id, e.subject, e.family, e.kind, e.revision, e.generation,"
                f" top.cosine::float8, e.text, e.span_start, e.span_end, m.typical"
                f" FROM top JOIN {ns}.entries e"
                " ON e.tenant = %(tenant)s AND e.id = top.id CROSS JOIN m"
                " ORDER BY top.cosine DESC, top.id"
            )
            while True:  # more rows when passages of one turn take several top places
                rows = conn.execute(query, params).fetchall()
                hits = best_per_memory(_vector_hit(tenant, r, typical=float(r[10])) for r in rows)
                if len(hits) >= k or len(rows) < params["k"]:
                    return hits[:k]
                params["k"] *= 4

    def _ann_query(self, tenant: str) -> sql.Composed:
        """The HNSW candidates of ``tenant``: its own partial index, which the planner
        matches only against a literal tenant (never a parameter)."""
        return sql.SQL(
            "SELECT id, (-(vector <#> %(q)s)::float4)::float8 AS cosine FROM {t}.entries"
            " WHERE tenant = {tenant} ORDER BY vector <#> %(q)s LIMIT %(n)s"
        ).format(t=sql.Identifier(self.ns), tenant=sql.Literal(tenant))

    def _search_ann(self, vector: np.ndarray, *, tenant: str, k: int) -> list[Hit]:
        ns = self.ns
        with self._transaction() as conn:
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(EF_SEARCH))
            candidates = conn.execute(
                self._ann_query(tenant), {"q": vector, "n": 4 * k + OVERFETCH}
            ).fetchall()  # (4 k: room for a long turn's passages, one hit per memory id)
            best = sorted(candidates, key=lambda row: (-row[1], row[0]))
            if not best:
                return []
            (typical,) = _one(
                conn,
                "SELECT coalesce(percentile_cont(0.5) WITHIN GROUP"
                " (ORDER BY -(vector <#> %(q)s)::float4), 0) FROM (SELECT vector"
                f" FROM {ns}.entries WHERE tenant = %(tenant)s AND vector IS NOT NULL"
                " ORDER BY sample LIMIT %(sample)s) s",
                {"q": vector, "tenant": tenant, "sample": SAMPLE},
            )
            found = {
                row[0]: row[1:]
                for row in conn.execute(
                    "SELECT id, memory_id, subject, family, kind, revision, generation, text,"
                    f" span_start, span_end FROM {ns}.entries WHERE tenant = %s AND id = ANY(%s)",
                    (tenant, [row[0] for row in best]),
                )
            }
        status = self._anns.get(tenant)
        if status is not None:
            self._anns[tenant] = replace(status, searches=status.searches + 1)
        hits = best_per_memory(
            _vector_hit(tenant, (*found[i][:6], cosine, *found[i][6:]), typical=float(typical))
            for i, cosine in best
            if i in found
        )
        return hits[:k]

    def _live_vectors(self, conn: psycopg.Connection[Any], tenant: str) -> int:
        ns = self.ns
        row = conn.execute(
            f"SELECT docs FROM {ns}.stats WHERE tenant = %s AND kind = 'vectors'",
            (tenant,),
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _ann(self, tenant: str, *, build: bool = True) -> AnnStatus | None:
        """``tenant``'s HNSW index if its tenant-wide searches use one, built when missing
        (``build=False``: only if it exists already)."""
        if self.embedder is None or self.ann_threshold is None:
            return None
        with self._connection() as conn:
            live = self._live_vectors(conn, tenant)
            if live < self.ann_threshold:
                return None
            name = _name("hnsw", tenant)
            exists = conn.execute(
                "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
                (self.ns, name),
            ).fetchone()
        status = self._anns.get(tenant)
        if exists is not None:
            if status is None:
                status = AnnStatus(
                    vectors=live, searches=0, builds=0, loads=1, repaired=0, saves=0,
                    build_seconds=0.0,
                )  # fmt: skip
            else:
                status = replace(status, vectors=live)
            self._anns[tenant] = status
            return status
        if not build:
            return None
        started = time.perf_counter()
        with self._transaction() as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {name} ON {t}.entries"
                    " USING hnsw (vector vector_ip_ops) WITH (m = 16, ef_construction = 64)"
                    " WHERE tenant = {tenant}"
                ).format(
                    name=sql.Identifier(name),
                    t=sql.Identifier(self.ns),
                    tenant=sql.Literal(tenant),
                )
            )
        built = time.perf_counter() - started
        previous = self._anns.get(tenant)
        self._anns[tenant] = AnnStatus(
            vectors=live,
            searches=0 if previous is None else previous.searches,
            builds=1 if previous is None else previous.builds + 1,
            loads=0 if previous is None else previous.loads,
            repaired=0,
            saves=1 if previous is None else previous.saves + 1,
            build_seconds=built,
        )
        return self._anns[tenant]

    def _build_anns(self) -> None:
        ns = self.ns
        if self.embedder is None or self.ann_threshold is None:
            return
        with self._connection() as conn:
            tenants = [
                t
                for (t,) in conn.execute(
                    f"SELECT tenant FROM {ns}.stats WHERE kind = 'vectors' AND docs >= %s",
                    (self.ann_threshold,),
                )
            ]
        for tenant in tenants:
            self._ann(tenant)

    def warm(self, tenant: str) -> AnnStatus | None:
        """Build ``tenant``'s HNSW index now if its tenant-wide searches will use one (else
        the first such search builds it); its status (``None``: searches stay exact)."""
        return self._ann(tenant)

    def ann_status(self, tenant: str) -> AnnStatus | None:
        """``tenant``'s HNSW index as this handle knows it, or ``None``."""
        return self._ann(tenant, build=False)

    def standing(
        self, tenant: str, *, subjects: Sequence[str] | None = None, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """``(memory_id, text, when)`` of the entries of ``tenant`` (of ``subjects``) that
        state a standing instruction or preference, newest first."""
        ns = self.ns
        sql_text = (
            f"SELECT memory_id, text, standing FROM {ns}.entries"
            " WHERE tenant = %(tenant)s AND standing IS NOT NULL"
        )
        params: dict[str, Any] = {"tenant": tenant, "limit": limit}
        if subjects is not None:
            sql_text += " AND subject = ANY(%(subjects)s)"
            params["subjects"] = list(dict.fromkeys(subjects))
        sql_text += " ORDER BY at DESC, id DESC LIMIT %(limit)s"
        with self._connection() as conn:
            return [(m, t, w) for m, t, w in conn.execute(sql_text, params)]

    def names(
        self,
        tenant: str,
        *,
        subject: str | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> frozenset[str]:
        """The speakers and subjects of ``tenant``'s entries (of ``subject``'s only): who
        a query can name; of the private namespaces only those ``visible`` passes. Kept
        up to date from the entries changed since the last call (a name whose entries
        are all gone stays known until the index is rebuilt)."""
        return self.glance(tenant, subject=subject).known.visible_to(visible)

    def purge(self, tenant: str) -> None:
        """After an erasure (synced first): vacuum the index's tables, so the deleted
        entries' space is pruned and reused (PostgreSQL does not zero it; see
        :meth:`memledger.store.postgres.PostgresStore.scrub`). ``tenant`` is for the
        interface: a vacuum covers every tenant."""
        del tenant
        try:
            with self._pool.connection() as conn:
                for table in ("entries", "postings", "win_postings"):
                    conn.execute(
                        sql.SQL("VACUUM {}.{}").format(
                            sql.Identifier(self.ns), sql.Identifier(table)
                        )
                    )
        except psycopg.Error as exc:
            raise StoreError(
                f"index in {self.url!r}: vacuum after an erasure failed: {exc}"
            ) from exc

    def glance(self, tenant: str, *, subject: str | None = None) -> Glance:
        """:meth:`names`, :meth:`cursor_of` and :attr:`degraded` together, in one round
        trip (two when names changed since this handle last looked)."""
        ns = self.ns
        with self._connection() as conn:
            stamp, epoch, degraded, cursor = _one(
                conn,
                f"SELECT (SELECT value FROM {ns}.meta WHERE key = 'stamp'),"
                f" (SELECT value FROM {ns}.meta WHERE key = 'epoch'),"
                f" (SELECT value FROM {ns}.meta WHERE key = 'degraded'),"
                f" greatest((SELECT value::bigint FROM {ns}.meta WHERE key = 'cursor'),"
                f" (SELECT seq FROM {ns}.cursors WHERE tenant = %s), 0)",
                (tenant,),
            )
            query = (
                f"SELECT DISTINCT speaker, subject FROM {ns}.entries"
                " WHERE tenant = %s AND changed > %s"
            )
            if subject is not None:
                query += " AND subject = %s"

            def changed(since: int) -> Iterable[tuple[str | None, str]]:
                extra = () if subject is None else (subject,)
                return conn.execute(query, (tenant, since, *extra)).fetchall()

            known = self._names.get(
                tenant,
                subject,
                epoch=int(epoch or 0),
                stamp=int(stamp or 0),
                changed=changed,
            )
        return Glance(known=known, cursor=int(cursor), degraded=degraded)

    def speakers(self, tenant: str, memory_ids: Iterable[str]) -> dict[str, str]:
        """The speaker of each episode among ``memory_ids``."""
        ns = self.ns
        ids = list(memory_ids)
        if not ids:
            return {}
        with self._connection() as conn:
            return {
                m: s
                for m, s in conn.execute(
                    f"SELECT memory_id, speaker FROM {ns}.entries WHERE tenant = %s"
                    " AND memory_id = ANY(%s) AND speaker IS NOT NULL",
                    (tenant, ids),
                )
            }

    def neighbours(
        self, tenant: str, memory_ids: Iterable[str], *, window: int
    ) -> dict[str, list[tuple[str, int]]]:
        """For each episode among ``memory_ids``: the entries of its thread within
        ``window`` places before or after it, as ``(memory_id, offset)``."""
        ns = self.ns
        ids = list(memory_ids)
        found: dict[str, list[tuple[str, int]]] = {}
        if not ids or window < 1:
            return found
        with self._connection() as conn:  # an anchor without neighbours: one row of NULLs
            rows = conn.execute(
                "SELECT a.memory_id, n.side, n.memory_id, n.at, n.id"
                f" FROM {ns}.entries a LEFT JOIN LATERAL ("
                f"(SELECT -1 AS side, memory_id, at, id FROM {ns}.entries"
                " WHERE tenant = a.tenant AND thread = a.thread AND (at, id) < (a.at, a.id)"
                " ORDER BY at DESC, id DESC LIMIT %(w)s) UNION ALL"
                f" (SELECT 1, memory_id, at, id FROM {ns}.entries"
                " WHERE tenant = a.tenant AND thread = a.thread AND (at, id) > (a.at, a.id)"
                " ORDER BY at, id LIMIT %(w)s)) n ON true"
                " WHERE a.tenant = %(tenant)s AND a.memory_id = ANY(%(ids)s)"
                " AND a.thread IS NOT NULL",
                {"tenant": tenant, "ids": ids, "w": window},
            ).fetchall()
        for anchor in dict.fromkeys(r[0] for r in rows):
            mine = [r for r in rows if r[0] == anchor and r[1] is not None]
            before = sorted((r for r in mine if r[1] < 0), key=lambda r: (r[3], r[4]))
            after = sorted((r for r in mine if r[1] > 0), key=lambda r: (r[3], r[4]))
            found[anchor] = [(r[2], -d) for d, r in enumerate(reversed(before), 1)] + [
                (r[2], d) for d, r in enumerate(after, 1)
            ]
        return found


# -- feeding, inside one transaction --------------------------------------------------------


@dataclass(slots=True)
class _Doc:
    """What a batch needs to know of one entry: as stored, or as the batch leaves it."""

    id: int | None
    """``None``: inserted by this batch (an id is drawn when it is written)."""
    revision: int
    length: int
    win_length: int | None
    has_vector: bool
    thread: str | None
    at: str


@dataclass(slots=True)
class _Write:
    record: MemoryRecord
    revision: int
    generation: int
    vector: np.ndarray | None
    text: str
    length: int
    part: int
    span: tuple[int, int] | None


class _Feed:
    """One batch of outbox rows applied on ``conn`` at ``stamp``, planned in Python and
    written in bulk: the rows are played in order against what the index holds (a
    newer revision is never replaced by an older one, a delete takes the entry out,
    a later upsert brings a new one), then each tenant's removals, updates and
    inserts are written with a few statements, and the windows of the turns whose
    neighbourhood changed are rewritten once each. The result is the one applying
    the rows one by one would give (the tests compare it with the SQLite index)."""

    def __init__(self, conn: psycopg.Connection[Any], ns: str, stamp: int) -> None:
        self.conn = conn
        self.ns = ns
        self.stamp = stamp
        self.stats: dict[tuple[str, str], list[int]] = {}

    def _count(self, tenant: str, kind: str, *, docs: int, tokens: int) -> None:
        moved = self.stats.setdefault((tenant, kind), [0, 0])
        moved[0] += docs
        moved[1] += tokens

    def apply(
        self,
        rows: Sequence[OutboxEntry],
        records: dict[tuple[str, str], MemoryRecord],
        vectors: _Embedded,
    ) -> None:
        by_tenant: dict[str, list[OutboxEntry]] = {}
        for row in rows:
            by_tenant.setdefault(row.tenant, []).append(row)
        for tenant, mine in by_tenant.items():
            self._tenant(tenant, mine, records, vectors)
        for (tenant, kind), (docs, tokens_) in sorted(self.stats.items()):
            if docs or tokens_:
                _add_stats(self.conn, self.ns, tenant, kind, docs=docs, tokens=tokens_)
        self.stats.clear()

    def _tenant(
        self,
        tenant: str,
        rows: Sequence[OutboxEntry],
        records: dict[tuple[str, str], MemoryRecord],
        vectors: _Embedded,
    ) -> None:
        ns = self.ns
        # keyed (memory id, part): a long turn has an entry per passage
        alive: dict[tuple[str, int], _Doc] = {
            (m, p): _Doc(id=i, revision=r, length=n, win_length=w, has_vector=v, thread=t, at=a)
            for m, p, i, r, n, w, v, t, a in self.conn.execute(
                "SELECT memory_id, part, id, revision, length, win_length, vector IS NOT NULL,"
                f" thread, at FROM {ns}.entries WHERE tenant = %s AND memory_id = ANY(%s)",
                (tenant, list(dict.fromkeys(r.memory_id for r in rows))),
            )
        }
        parts = Counter(m for m, _ in alive)
        removed: list[_Doc] = []
        writes: dict[tuple[str, int], _Write] = {}

        def drop(memory_id: str, first: int) -> None:
            """Take the entries of ``memory_id`` from part ``first`` on out."""
            for part in range(first, parts[memory_id]):
                gone = alive.pop((memory_id, part))
                writes.pop((memory_id, part), None)
                if gone.id is not None:
                    removed.append(gone)
            parts[memory_id] = min(first, parts[memory_id])

        for row in rows:  # in outbox order
            current = alive.get((row.memory_id, 0))
            if row.op == "upsert":
                record = records.get((tenant, row.memory_id))
                if record is None or (current is not None and current.revision > row.revision):
                    continue  # gone since, or a newer revision is already indexed
                docs = vectors[(tenant, row.memory_id)]
                drop(row.memory_id, len(docs))  # passages it no longer has
                for passage, vector in docs:
                    key = (row.memory_id, passage.part)
                    current = alive.get(key)
                    if current is None:
                        current = alive[key] = _Doc(
                            id=None, revision=row.revision, length=0, win_length=None,
                            has_vector=False,
                            thread=_thread(record) if passage.part == 0 else None,  # one place
                            at=format_time(record.valid_from),
                        )  # fmt: skip
                    current.revision = row.revision
                    writes[key] = _Write(
                        record, row.revision, row.generation, vector, passage.text,
                        bm25.length(passage.text), passage.part, passage.span,
                    )  # fmt: skip
                parts[row.memory_id] = len(docs)
            elif row.op == "delete":
                if current is None or current.revision > row.revision:
                    continue
                drop(row.memory_id, 0)
        touched: list[_Doc] = [*removed]
        # removals: the entry, its postings, its window (the neighbours' come below)
        if removed:
            gone = [d.id for d in removed]
            for table in ("entries", "postings", "win_postings"):
                column = "id" if table == "entries" else "doc"
                self.conn.execute(
                    f"DELETE FROM {ns}.{table} WHERE tenant = %s AND {column} = ANY(%s)",
                    (tenant, gone),
                )
            for doc in removed:
                self._count(tenant, "entries", docs=-1, tokens=-doc.length)
                self._count(tenant, "vectors", docs=-int(doc.has_vector), tokens=0)
                if doc.win_length is not None:
                    self._count(tenant, "windows", docs=-1, tokens=-doc.win_length)
        # updates in place, then inserts with ids drawn up front
        updated = [(m, w) for m, w in writes.items() if alive[m].id is not None]
        inserted = [(m, w) for m, w in writes.items() if alive[m].id is None]
        if updated:
            self.conn.execute(
                f"DELETE FROM {ns}.postings WHERE tenant = %s AND doc = ANY(%s)",
                (tenant, [alive[m].id for m, _ in updated]),
            )
            self.conn.cursor().executemany(
                f"UPDATE {ns}.entries SET revision = %s, generation = %s, text = %s,"
                " vector = %s, changed = %s, length = %s, span_start = %s, span_end = %s"
                " WHERE tenant = %s AND id = %s",
                [
                    (
                        w.revision,
                        w.generation,
                        w.text,
                        w.vector,
                        self.stamp,
                        w.length,
                        *(w.span or (None, None)),
                        tenant,
                        alive[m].id,
                    )
                    for m, w in updated
                ],
            )
            for m, w in updated:
                doc = alive[m]
                self._count(tenant, "entries", docs=0, tokens=w.length - doc.length)
                has = w.vector is not None
                self._count(tenant, "vectors", docs=int(has) - int(doc.has_vector), tokens=0)
                doc.length, doc.has_vector = w.length, has
        if inserted:
            drawn = [
                i
                for (i,) in self.conn.execute(
                    f"SELECT nextval(pg_get_serial_sequence('{ns}.entries', 'id'))"
                    " FROM generate_series(1, %s)",
                    (len(inserted),),
                )
            ]
            with self.conn.cursor().copy(
                f"COPY {ns}.entries (tenant, id, memory_id, subject, family, kind, revision,"
                " generation, text, speaker, thread, at, vector, sample, changed, length,"
                " standing, part, span_start, span_end) FROM STDIN"
            ) as copy:
                for entry_id, (m, w) in zip(drawn, inserted, strict=True):
                    doc, record = alive[m], w.record
                    doc.id, doc.length, doc.has_vector = entry_id, w.length, w.vector is not None
                    copy.write_row(
                        (tenant, entry_id, m[0], record.subject, record.family, record.kind,
                         w.revision, w.generation, w.text, _speaker(record), doc.thread,
                         doc.at, w.vector, _int4(m[0] if not m[1] else f"{m[0]}#{m[1]}"),
                         self.stamp, w.length, _standing(record), w.part,
                         *(w.span or (None, None)))
                    )  # fmt: skip
                    self._count(tenant, "entries", docs=1, tokens=w.length)
                    self._count(tenant, "vectors", docs=int(w.vector is not None), tokens=0)
        self._post(
            "postings",
            tenant,
            [(w.record.subject, alive[m].id, w.text, w.length) for m, w in writes.items()],
        )
        touched += [alive[m] for m in writes]
        self._rewindow(tenant, touched)

    def _rewindow(self, tenant: str, touched: Sequence[_Doc]) -> None:
        """Rewrite the windows of the turns whose neighbourhood ``touched`` changed: each
        written turn and those within reach of it, and the turns that were within reach
        of a removed one; each once."""
        ns = self.ns
        threads = sorted({d.thread for d in touched if d.thread is not None})
        if not threads:
            return
        turns: dict[str, list[tuple[str, int, str, str, int | None]]] = {}
        for thread, at, entry_id, text, subject, win_length in self.conn.execute(
            f"SELECT thread, at, id, text, subject, win_length FROM {ns}.entries"
            " WHERE tenant = %s AND thread = ANY(%s) ORDER BY thread, at, id",
            (tenant, threads),
        ):
            turns.setdefault(thread, []).append((at, entry_id, text, subject, win_length))
        rewrite: list[tuple[int, str, str, int | None]] = []  # (id, subject, words, old)
        for thread in threads:
            line = turns.get(thread, [])
            keys = [(at, entry_id) for at, entry_id, *_ in line]
            wanted: set[int] = set()
            for doc in touched:
                if doc.thread != thread or doc.id is None:
                    continue
                place = bisect.bisect_left(keys, (doc.at, doc.id))
                present = place < len(keys) and keys[place] == (doc.at, doc.id)
                # a turn's window holds WINDOW_BEFORE turns before it, WINDOW_AFTER after
                last = place + WINDOW_BEFORE if present else place + WINDOW_BEFORE - 1
                wanted.update(range(max(0, place - WINDOW_AFTER), min(len(line), last + 1)))
            for at_ in sorted(wanted):
                _, entry_id, text, subject, old = line[at_]
                around = (
                    line[max(0, at_ - WINDOW_BEFORE) : at_] + line[at_ + 1 : at_ + 1 + WINDOW_AFTER]
                )
                words = " ".join([text, *(_lead(t[2]) for t in around)])
                rewrite.append((entry_id, subject, words, old))
        if not rewrite:
            return
        self.conn.execute(
            f"DELETE FROM {ns}.win_postings WHERE tenant = %s AND doc = ANY(%s)",
            (tenant, [r[0] for r in rewrite]),
        )
        lengths = [bm25.length(words) for _, _, words, _ in rewrite]
        for (_, _, _, old), length in zip(rewrite, lengths, strict=True):
            if old is not None:
                self._count(tenant, "windows", docs=-1, tokens=-old)
            self._count(tenant, "windows", docs=1, tokens=length)
        self._post(
            "win_postings",
            tenant,
            [
                (subject, entry_id, words, n)
                for (entry_id, subject, words, _), n in zip(rewrite, lengths, strict=True)
            ],
        )
        self.conn.execute(
            f"UPDATE {ns}.entries e SET win_length = v.length"
            " FROM unnest(%s::bigint[], %s::integer[]) AS v(id, length)"
            " WHERE e.tenant = %s AND e.id = v.id",
            ([r[0] for r in rewrite], lengths, tenant),
        )

    def _post(
        self, table: str, tenant: str, docs: Sequence[tuple[str, int | None, str, int]]
    ) -> None:
        """One ``COPY`` of the postings of ``(subject, doc, text, length)`` documents."""
        if not docs:
            return
        with self.conn.cursor().copy(
            f"COPY {self.ns}.{table} (tenant, lexeme, subject, doc, tf, length) FROM STDIN"
        ) as copy:
            for subject, doc, text, length in docs:
                for lexeme, tf in Counter(tokens(text)).items():
                    copy.write_row((tenant, lexeme, subject, doc, tf, length))


# -- helpers --------------------------------------------------------------------------------


def _create_extension(conn: psycopg.Connection[Any]) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StoreError(
            "the index's vectors need the pgvector extension in this database: run"
            f" CREATE EXTENSION vector as a superuser, or open the index without an embedder"
            f" ({exc})"
        ) from exc


def _read_outbox(
    store: Store, after: int, *, limit: int, tenant: str | None
) -> tuple[list[OutboxEntry], dict[tuple[str, str], MemoryRecord]]:
    with store.read() as unit:
        rows = list(unit.outbox_after(after, limit=limit, tenant=tenant))
        by_tenant: dict[str, list[str]] = {}
        for row in rows:
            if row.op == "upsert":
                by_tenant.setdefault(row.tenant, []).append(row.memory_id)
        records = {
            (t, memory_id): record
            for t, ids in by_tenant.items()
            for memory_id, record in unit.get_records(t, ids).items()
            if indexed(record)
        }
    return rows, records


def _one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> tuple[Any, ...]:
    """The one row ``query`` returns."""
    row = conn.execute(query, params).fetchone()
    assert row is not None, query
    return tuple(row)


def _get(conn: psycopg.Connection[Any], ns: str, key: str) -> str | None:
    row = conn.execute(f"SELECT value FROM {ns}.meta WHERE key = %s", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set(conn: psycopg.Connection[Any], ns: str, key: str, value: str) -> None:
    conn.execute(
        f"INSERT INTO {ns}.meta VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _cursor_of(conn: psycopg.Connection[Any], ns: str, tenant: str) -> int:
    """The later of the global cursor and ``tenant``'s own, in one round trip."""
    (seq,) = _one(
        conn,
        f"SELECT greatest((SELECT value::bigint FROM {ns}.meta WHERE key = 'cursor'),"
        f" (SELECT seq FROM {ns}.cursors WHERE tenant = %s), 0)",
        (tenant,),
    )
    return int(seq)


def _add_stats(
    conn: psycopg.Connection[Any], ns: str, tenant: str, kind: str, *, docs: int, tokens: int
) -> None:
    conn.execute(
        f"INSERT INTO {ns}.stats VALUES (%s, %s, %s, %s) ON CONFLICT (tenant, kind)"
        " DO UPDATE SET docs = stats.docs + excluded.docs,"
        " tokens = stats.tokens + excluded.tokens",
        (tenant, kind, docs, tokens),
    )


def _vector_hit(tenant: str, row: Sequence[Any], *, typical: float) -> Hit:
    """A vector hit: ``row[6]`` its cosine (a float32 value, as the SQLite index's),
    ``row[7]`` its text, ``row[8:10]`` its passage's span."""
    cosine = float(row[6])
    return replace(_hit(tenant, row[:6], cosine - typical, row[7], row[8:10]), cosine=cosine)
