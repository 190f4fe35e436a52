"""The PostgreSQL index's tables that :class:`~memledger.index.postgres.PostgresIndex` is
built on: the driver (imported here once, with a message naming the ``postgres``
extra when it is missing), the namespace's layout and the version of that layout
(:data:`SCHEMA`), the pool of connections, the transactions and locks, and the
index's state (``meta``: the global cursor, the change stamp and the epoch, why
vectors are missing; ``cursors``: each tenant's own).

:class:`PostgresIndexBase` holds the pool and what every part of the index reads: the
lexical part (:mod:`memledger.index._postgres_lexical`), the vector part
(:mod:`memledger.index._postgres_vectors`) and the feed
(:mod:`memledger.index._postgres_maintenance`) build on it; the functions below
(:func:`get_meta`, :func:`set_meta`, :func:`tenant_cursor`, :func:`cursors`,
:func:`add_stats`, :func:`one`, :func:`int4`, :func:`relation_name`) are their
statements on one connection.

Tables, in the schema ``namespace`` (``memledger_index`` by default): ``entries``
(one row per entry: what a hit reports, the episode's speaker, thread and time, the
vector, the entry's place in the median's sample, the stamp of its last change, its
length and its window's, a standing instruction's scope, the passage's part and
span), ``postings`` and ``win_postings`` (one row per document and distinct token),
``stats`` (per tenant: documents and tokens of each kind, and how many entries have
a vector), ``cursors`` and ``meta``. A namespace of another layout, tokenizer or
embedder is emptied on open and refilled from the outbox.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

from memledger.errors import InvalidInputError, StoreError
from memledger.index._ann import ANN_THRESHOLD, AnnStatus
from memledger.index._base import Embedder
from memledger.index._common import VectorPath, check_ann_threshold
from memledger.index._names import NameCache
from memledger.index._tokens import STEMMER_VERSION
from memledger.ports import Store

try:
    import psycopg
    import psycopg_pool
    from pgvector.psycopg import register_vector
    from psycopg import sql
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise ImportError(
        "the PostgreSQL index needs the postgres extra: pip install 'memledger[postgres]'"
    ) from exc

__all__ = [
    "EF_SEARCH",
    "NAMESPACE",
    "OVERFETCH",
    "SAMPLE",
    "SCHEMA",
    "PostgresIndexBase",
    "add_stats",
    "cursors",
    "get_meta",
    "int4",
    "one",
    "psycopg",
    "relation_name",
    "set_meta",
    "sql",
    "tenant_cursor",
]

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


def int4(text: str) -> int:
    """A fixed pseudo-random PostgreSQL ``integer`` for ``text``: the second half of the
    index's advisory lock ids (one pair per namespace), an entry's rank in the median's
    sample."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") - 2**31


def relation_name(prefix: str, tenant: str) -> str:
    """The name of a relation of ``tenant``'s own (its HNSW index: ``hnsw_...``)."""
    return f"{prefix}_" + hashlib.sha256(tenant.encode()).hexdigest()[:20]


class PostgresIndexBase:
    """An open PostgreSQL index: its pool of connections (autocommit, each query planned
    for its values), its namespace's tables, and the state held beside them (each
    tenant's HNSW status, the names of its entries).

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
        check_ann_threshold(ann_threshold)
        dsn = getattr(store, "dsn", None)
        if not isinstance(dsn, str):
            raise InvalidInputError(
                f"a PostgresIndex needs a PostgreSQL store, got {type(store).__name__}"
            )
        self.url = store.url
        self.ns = namespace
        """The schema the index's tables live in."""
        self._lock_key = int4(namespace)
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
                set_meta(conn, ns, key, value)
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
        set_meta(conn, ns, "ready", SCHEMA)

    def _drop_all(self, conn: psycopg.Connection[Any]) -> None:
        ns = self.ns
        stamp = int(get_meta(conn, ns, "stamp") or 0) + 1  # keeps rising, so other handles see it
        for table in ("entries", "postings", "win_postings", "stats", "cursors"):
            conn.execute(f"DROP TABLE IF EXISTS {ns}.{table}")
        conn.execute(f"DELETE FROM {ns}.meta")
        set_meta(conn, ns, "stamp", str(stamp))
        set_meta(conn, ns, "epoch", str(stamp))
        self._anns.clear()
        self._names.clear()

    def _reset(self) -> None:
        """Drop every table and lay them out again (a rebuild's start)."""
        with self._transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_PREPARE_LOCK, self._lock_key))
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_FEED_LOCK, self._lock_key))
            self._drop_all(conn)
            self._prepare(conn)

    @property
    def _embedder_name(self) -> str:
        return "" if self.embedder is None else self.embedder.name

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Self:
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
            stamp = int(get_meta(conn, self.ns, "stamp") or 0) + 1
            yield conn, stamp
            set_meta(conn, self.ns, "stamp", str(stamp))

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self._connection() as conn, conn.transaction():
            yield conn

    # -- state ----------------------------------------------------------------------------

    @property
    def cursor(self) -> int:
        """The outbox sequence up to which every tenant's rows are applied."""
        with self._connection() as conn:
            return int(get_meta(conn, self.ns, "cursor") or 0)

    def cursor_of(self, tenant: str) -> int:
        """The outbox sequence up to which ``tenant``'s rows are applied."""
        with self._connection() as conn:
            return tenant_cursor(conn, self.ns, tenant)

    def _cursors(self) -> tuple[int, dict[str, int]]:
        """The global cursor and each tenant's own."""
        with self._connection() as conn:
            return cursors(conn, self.ns)

    @property
    def degraded(self) -> str | None:
        """Why some entries were stored without a vector, or ``None``."""
        with self._connection() as conn:
            return get_meta(conn, self.ns, "degraded")


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


def one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> tuple[Any, ...]:
    """The one row ``query`` returns."""
    row = conn.execute(query, params).fetchone()
    assert row is not None, query
    return tuple(row)


def get_meta(conn: psycopg.Connection[Any], ns: str, key: str) -> str | None:
    row = conn.execute(f"SELECT value FROM {ns}.meta WHERE key = %s", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: psycopg.Connection[Any], ns: str, key: str, value: str) -> None:
    conn.execute(
        f"INSERT INTO {ns}.meta VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def tenant_cursor(conn: psycopg.Connection[Any], ns: str, tenant: str) -> int:
    """The later of the global cursor and ``tenant``'s own, in one round trip."""
    (seq,) = one(
        conn,
        f"SELECT greatest((SELECT value::bigint FROM {ns}.meta WHERE key = 'cursor'),"
        f" (SELECT seq FROM {ns}.cursors WHERE tenant = %s), 0)",
        (tenant,),
    )
    return int(seq)


def add_stats(
    conn: psycopg.Connection[Any], ns: str, tenant: str, kind: str, *, docs: int, tokens: int
) -> None:
    conn.execute(
        f"INSERT INTO {ns}.stats VALUES (%s, %s, %s, %s) ON CONFLICT (tenant, kind)"
        " DO UPDATE SET docs = stats.docs + excluded.docs,"
        " tokens = stats.tokens + excluded.tokens",
        (tenant, kind, docs, tokens),
    )


def cursors(conn: psycopg.Connection[Any], ns: str) -> tuple[int, dict[str, int]]:
    """The global cursor and each tenant's own."""
    cursor = int(get_meta(conn, ns, "cursor") or 0)
    return cursor, dict(conn.execute(f"SELECT tenant, seq FROM {ns}.cursors").fetchall())
