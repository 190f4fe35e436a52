"""The PostgreSQL canonical store (``memledger[postgres]``: psycopg 3 and its pool).

``Memory.open("postgresql://user@host/db")``. The same store contract as the
embedded SQLite store, on the same SQL (:mod:`memledger.store._sql_unit`, run
through a connection that translates SQLite's ``?`` parameters, ``INSERT OR
IGNORE`` and ``INDEXED BY`` hints), with its own numbered migrations
(``memledger.store.migrations_pg``, applied on open under an advisory lock so
that processes opening one database at once migrate it once).

Where SQLite serialises every write transaction on one file lock, PostgreSQL
runs them side by side (``READ COMMITTED``), and the unit of work takes the
locks the write path's serialisation points need, each held until commit:

* a family slot: ``lock_family`` takes a transaction advisory lock on the
  (tenant, subject, family), which covers a slot not yet written, then
  ``SELECT ... FOR UPDATE`` on its row. The event commit locks its families
  in sorted order, so two events never wait on each other in a cycle;
* an event: a write unit's first look at an event (``event_hash``,
  ``get_outcome``) locks the (tenant, event id), so a retried event and its
  extraction job are decided once, whichever arrives first;
* a tenant's revocation log, while a revocation takes the next number;
* the outbox: its rows are held in the unit and inserted just before commit
  under one lock, so outbox sequence numbers are commit order and an index
  that tails the outbox by sequence never skips a row that commits late with
  a smaller number.

Jobs are claimed with ``FOR UPDATE SKIP LOCKED``, taking each tenant's oldest
due jobs in turn (one of each tenant with due jobs, then a second of each...),
so any number of workers on any number of machines share the queue without
double work and one tenant's backlog does not hold up the others'.

Reads run in ``REPEATABLE READ READ ONLY`` transactions: one snapshot, as
SQLite's read transactions. psycopg errors are translated to
:class:`~memledger.errors.StoreError` here (a deadlock, a serialisation
failure, a lock or pool timeout to :class:`~memledger.errors.StoreLockedError`:
nothing was written, try again) and never escape.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

try:
    import psycopg
    import psycopg_pool
    from psycopg import errors as pg_errors
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise ImportError(
        "the PostgreSQL store needs the postgres extra: pip install 'memledger[postgres]'"
    ) from exc

from memledger._openai_http import redact_url
from memledger.domain.records import Job, MemoryRecord, Receipt, format_time
from memledger.errors import (
    InvalidInputError,
    RevisionNotMetError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from memledger.ports import FamilySlot, OutboxOp
from memledger.store import Failpoint, floors
from memledger.store import _migrations as migrations
from memledger.store._migrations import Migration
from memledger.store._sql_unit import SqlUnit, outbox_row

POOL_SIZE = 10
"""Connections a store keeps open at most (per process)."""
POOL_TIMEOUT_S = 30.0
"""How long a unit of work waits for a free connection before giving up."""
LOCK_TIMEOUT_MS = 30_000
"""How long one statement waits for a lock before giving up (``lock_timeout``)."""
_MIGRATION_LOCK = 0x6D6C_6D69  # "mlmi": one advisory lock id for every migration run

_LOCKED = (
    pg_errors.DeadlockDetected,
    pg_errors.SerializationFailure,
    pg_errors.LockNotAvailable,
)


def load_migrations() -> list[Migration]:
    """``(version, name, sql)`` for every packaged PostgreSQL migration, in order."""
    return migrations.load("memledger.store.migrations_pg")


@lru_cache(maxsize=512)
def _translated_sql(sql: str, *, parameters: bool) -> str:
    """SQLite's dialect as the shared unit writes it, in PostgreSQL's."""
    sql = re.sub(r"\s+INDEXED BY \w+", "", sql)
    if sql.startswith("INSERT OR IGNORE INTO"):
        sql = "INSERT INTO" + sql.removeprefix("INSERT OR IGNORE INTO") + " ON CONFLICT DO NOTHING"
    if parameters:
        sql = sql.replace("%", "%%").replace("?", "%s")
    return sql


class _Connection:
    """A psycopg connection that runs the shared unit's SQLite-dialect statements."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        try:
            if params:
                return self.raw.execute(_translated_sql(sql, parameters=True), tuple(params))
            return self.raw.execute(_translated_sql(sql, parameters=False))
        except _LOCKED as exc:
            # a store error where it happens: the write path lets store errors through
            # (a worker does not take a lost deadlock for a poisoned job)
            raise StoreLockedError(f"PostgreSQL gave up on a lock: {exc}") from exc


class PostgresUnit(SqlUnit):
    """One transaction on one PostgreSQL connection. Write units lock what they decide
    on (see the module docstring); read units see one snapshot."""

    _integrity_errors = (pg_errors.UniqueViolation,)
    _arrival = "arrival"

    def __init__(self, conn: _Connection, failpoint: Failpoint | None, *, writing: bool) -> None:
        super().__init__(conn, failpoint)
        self._writing = writing
        self._outbox: list[tuple[Any, ...]] = []
        self._counters: Counter[tuple[str, str]] = Counter()
        self.wrote: set[str] = set()
        """The write steps this unit ran."""
        self._held: set[str] = set()

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested transaction, rolled back alone if its block raises: with it, what the
        block held back for the commit (outbox rows, counters) and the advisory locks it
        took (PostgreSQL releases them with the savepoint)."""
        outbox, counters, held = len(self._outbox), Counter(self._counters), set(self._held)
        try:
            with super().savepoint():
                yield
        except BaseException:
            del self._outbox[outbox:]
            self._counters, self._held = counters, held
            raise

    _BOOKKEEPING = frozenset({"touch_key"})
    """Writes no read needs to see: they do not make this process wait for replicas."""

    def _write(self, step: str, sql: str, params: Sequence[Any]) -> Any:
        self.wrote.add(step)
        return super()._write(step, sql, params)

    @property
    def changed(self) -> bool:
        """Whether the unit wrote anything a later read must see (asked after
        :meth:`flush`, which notes the outbox rows and counters it writes)."""
        return bool(self.wrote - self._BOOKKEEPING)

    def _lock(self, *key: str) -> None:
        """A transaction advisory lock on ``key`` (a hash of it: two keys that collide
        only wait on each other, never share a decision). Held until the transaction
        ends, so a second ask in the same unit costs no round trip."""
        name = "\x1f".join(key)
        if name in self._held:
            return
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (name,))
        self._held.add(name)

    # -- events: decided once -------------------------------------------------------

    def event_hash(self, tenant: str, event_id: str) -> str | None:
        if self._writing:
            self._lock("event", tenant, event_id)
        return super().event_hash(tenant, event_id)

    def get_outcome(self, tenant: str, event_id: str) -> Receipt | None:
        if self._writing:
            self._lock("event", tenant, event_id)
        return super().get_outcome(tenant, event_id)

    # -- family slots ---------------------------------------------------------------

    def lock_family(self, tenant: str, subject: str, family: str) -> FamilySlot:
        # the advisory lock first, in a statement of its own: the row read after it
        # is read in a snapshot taken once the previous holder committed
        self._lock("family", tenant, subject, family)
        slot = self._family(tenant, subject, family, lock=True)
        return slot or FamilySlot(tenant=tenant, subject=subject, family=family)

    # -- API keys ---------------------------------------------------------------------

    def revoke_key(self, tenant: str, key_id: str, *, at: datetime) -> None:
        # a tenant's key revocations take turns: what this unit reads of the keys
        # after it (the last-admin rule of memledger._keys) includes the last one's
        self._lock("keys", tenant)
        super().revoke_key(tenant, key_id, at=at)

    # -- revocation log ---------------------------------------------------------------

    def add_revocation(
        self, tenant: str, subject: str, family: str, *, generation: int, at: datetime
    ) -> int:
        self._lock("revocations", tenant)
        return super().add_revocation(tenant, subject, family, generation=generation, at=at)

    # -- outbox: inserted at commit, in commit order ----------------------------------

    def add_outbox(self, record: MemoryRecord, *, op: OutboxOp, at: datetime) -> None:
        if self._failpoint is not None:
            self._failpoint("add_outbox")
        self._outbox.append(outbox_row(record, op=op, at=at))

    # -- counters: added at commit, in key order ---------------------------------------

    def bump_counter(self, tenant: str, name: str, *, by: int = 1) -> None:
        if self._failpoint is not None:
            self._failpoint("bump_counter")
        self._counters[(tenant, name)] += by

    def counters(self, tenant: str) -> Mapping[str, int]:
        found = dict(super().counters(tenant))
        for (owner, name), by in self._counters.items():
            if owner == tenant:
                found[name] = found.get(name, 0) + by
        return dict(sorted(found.items()))

    def flush(self) -> None:
        """Write what this unit holds back until commit (the store calls this just before
        ``COMMIT``): the counters, each row locked in key order so that two units never
        wait on each other in a cycle, then the outbox rows under the outbox lock."""
        for (tenant, name), by in sorted(self._counters.items()):
            super().bump_counter(tenant, name, by=by)
        self._counters.clear()
        if not self._outbox:
            return
        self._lock("outbox")
        self.wrote.add("add_outbox")
        with self.conn.raw.cursor() as cursor:
            cursor.executemany(_translated_sql(self._OUTBOX_INSERT, parameters=True), self._outbox)
        self._outbox.clear()

    def outbox_size(self, tenant: str) -> int:
        return super().outbox_size(tenant) + sum(1 for row in self._outbox if row[0] == tenant)

    # -- jobs: SKIP LOCKED, fair across tenants ----------------------------------------

    def claim_jobs(
        self, *, tenant: str | None, now: datetime, lease_until: datetime, owner: str, limit: int
    ) -> Sequence[Job]:
        stamp = format_time(now)
        only = "" if tenant is None else " AND tenant = ?"
        if self._failpoint is not None:
            self._failpoint("claim_jobs")
        self.wrote.add("claim_jobs")
        # One statement whose plan does not depend on the jobs table's statistics (a
        # queue's are stale by design: taken when nothing was queued, they made a join of
        # queued jobs against candidates cost queued x candidates per claim). Candidates:
        # each tenant's oldest due jobs, in turns across tenants, by physical address. The
        # jobs are then locked by those addresses, SKIP LOCKED, in that order; the address
        # is checked again on the locked row, so a job another worker leased and committed
        # after this statement began (a newer row version, at another address) no longer
        # matches and is not leased twice. Only what is taken is locked.
        due = (
            " AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
            " AND (lease_until IS NULL OR lease_until <= ?)"
        )
        rows = self.conn.execute(
            f"WITH tenants AS (SELECT DISTINCT tenant FROM jobs WHERE status = 'queued'{only}),"
            " candidates AS ("
            "  SELECT c.row_at, c.created_at, c.job_id, row_number() OVER"
            "   (PARTITION BY c.tenant ORDER BY c.created_at, c.job_id) AS turn"
            "  FROM tenants CROSS JOIN LATERAL ("
            "   SELECT tenant, job_id, created_at, ctid AS row_at FROM jobs"
            f"   WHERE tenant = tenants.tenant AND status = 'queued'{due}"
            "   ORDER BY created_at, job_id LIMIT ?) AS c),"
            " ordered AS ("
            "  SELECT array_agg(row_at ORDER BY turn, created_at, job_id) AS rows FROM candidates),"
            " picked AS ("
            "  SELECT j.ctid AS row_at FROM ordered, jobs AS j"
            "  WHERE j.ctid = ANY(ordered.rows)"
            "  ORDER BY array_position(ordered.rows, j.ctid) LIMIT ?"
            "  FOR UPDATE OF j SKIP LOCKED)"
            " UPDATE jobs SET lease_until = ?, lease_owner = ?, attempts = jobs.attempts + 1"
            " WHERE ctid = ANY(ARRAY(SELECT row_at FROM picked))"
            f" RETURNING {', '.join(f'jobs.{c.strip()}' for c in self._JOB_COLUMNS.split(','))}",
            (
                *(() if tenant is None else (tenant,)),
                stamp,
                stamp,
                2 * limit + 8,  # room for rows another worker holds
                limit,
                format_time(lease_until),
                owner,
            ),
        ).fetchall()
        return sorted((self._job(row) for row in rows), key=lambda j: (j.created_at, j.job_id))


class _Pool:
    """Connections to one server, opened on first use and again in a forked child (which
    must not use its parent's sockets)."""

    def __init__(self, dsn: str, *, size: int, name: str) -> None:
        self.dsn, self.url, self._size, self._name = dsn, redact_url(dsn), size, name
        self._guard = threading.Lock()
        self._pool: psycopg_pool.ConnectionPool[Any] | None = None
        self._pid: int | None = None

    def get(self) -> psycopg_pool.ConnectionPool[Any]:
        with self._guard:
            if self._pool is None or self._pid != os.getpid():
                self._pool = psycopg_pool.ConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self._size,
                    kwargs={"autocommit": True, "options": f"-c lock_timeout={LOCK_TIMEOUT_MS}"},
                    timeout=POOL_TIMEOUT_S,
                    open=True,
                    name=self._name,
                )
                self._pid = os.getpid()
            return self._pool

    def close(self) -> None:
        with self._guard:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close()
            self._pool = None


StaleReplica = Literal["primary", "fail"]
"""What a read does when no replica is fresh enough within ``replica_wait``: read the
primary, or fail with :class:`~memledger.errors.RevisionNotMetError`."""


class PostgresStore:
    """A canonical store in one PostgreSQL database. Safe to share between threads (a
    pool of connections, one per unit of work); a forked process opens its own pool.

    ``replicas``: URLs of streaming replicas of that database. A read goes to a
    replica only if the replica has replayed this store's own last commit (a process
    reads its own writes) and holds every revision floor in force
    (:mod:`memledger.store.floors`); it waits up to ``replica_wait`` seconds for one
    to catch up, then reads the primary (``stale="primary"``) or fails
    (``stale="fail"``). Never a silent stale read. A replica that does not answer is
    skipped. Writes always go to the primary. :attr:`reads` counts where reads went.
    """

    def __init__(
        self,
        url: str,
        *,
        failpoint: Failpoint | None = None,
        create: bool = True,
        pool_size: int = POOL_SIZE,
        replicas: Sequence[str] = (),
        replica_wait: float = 1.0,
        stale: StaleReplica = "primary",
    ) -> None:
        if isinstance(replicas, str):
            raise InvalidInputError("replicas must be a list of URLs, not one string")
        if stale not in ("primary", "fail"):
            raise InvalidInputError(f"stale must be 'primary' or 'fail', got {stale!r}")
        if not isinstance(replica_wait, int | float) or replica_wait < 0:
            raise InvalidInputError(f"replica_wait must be seconds >= 0, got {replica_wait!r}")
        self._primary = _Pool(url, size=pool_size, name="memledger")
        self.url = self._primary.url
        self.dsn = url
        """The primary's connection string, password included (never shown: :attr:`url`
        is the one to print). The PostgreSQL index connects with it."""
        self._replicas = [
            _Pool(r, size=pool_size, name=f"memledger-replica-{n}") for n, r in enumerate(replicas)
        ]
        self.replica_wait = float(replica_wait)
        self.stale = stale
        self.reads: Counter[str] = Counter()
        """Reads served by ``primary``, by ``replica``; ``replica_behind``: reads that found
        no fresh replica in time; ``replica_down``: replicas that did not answer."""
        self._failpoint = failpoint
        self._guard = threading.Lock()
        self._committed_lsn: str | None = None
        self._turn = 0
        self._closed = False
        with self._translated("open"):
            self._open(create=create)

    # -- connections ----------------------------------------------------------------

    def _open(self, *, create: bool) -> None:
        try:
            conn = psycopg.connect(self._primary.dsn, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            if "does not exist" in str(exc):
                raise StoreNotFoundError(f"no PostgreSQL database at {self.url!r}: {exc}") from exc
            raise
        with conn:
            if not create and not _has_schema(conn):
                raise StoreNotFoundError(f"no memledger store in {self.url!r}")
            conn.execute("BEGIN")
            try:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                migrations.apply(_Connection(conn).execute, load_migrations(), where=repr(self.url))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _connections(self) -> psycopg_pool.ConnectionPool[Any]:
        if self._closed:
            raise StoreError(f"store {self.url!r} is closed")
        return self._primary.get()

    _ERASED_TABLES = (
        "events",
        "event_outcomes",
        "records",
        "mentions",
        "jobs",
        "review_queue",
        "traces",
    )

    def scrub(self) -> None:
        """Vacuum the tables an erasure deletes from: the deleted rows' space is pruned
        and reused. PostgreSQL does not zero it, and its write-ahead log, archives and
        backups keep what they held until they are recycled (docs/postgresql.md)."""
        try:
            with self._connections().connection() as conn:  # autocommit: VACUUM needs it
                for table in self._ERASED_TABLES:
                    conn.execute(f"VACUUM {table}")
        except psycopg.Error as exc:
            raise StoreError(f"store {self.url!r}: vacuum after an erasure failed: {exc}") from exc

    def close(self) -> None:
        for pool in [self._primary, *self._replicas]:
            pool.close()
        self._closed = True

    def schema_version(self) -> int:
        with self.read() as unit:
            row = unit.conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    # -- transactions ---------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[PostgresUnit]:
        with self._translated("write"), self._connections().connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            unit = PostgresUnit(_Connection(conn), self._failpoint, writing=True)
            try:
                yield unit
                unit.flush()
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT")
            if self._replicas and unit.changed:  # where replicas must be for our own reads
                row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
                with self._guard:
                    self._committed_lsn = _later_lsn(self._committed_lsn, row[0])

    @contextmanager
    def read(self) -> Iterator[PostgresUnit]:
        with self._translated("read"):
            replica = self._fresh_replica(floors.in_force()) if self._replicas else None
            if replica is not None:
                pool, conn = replica
                try:
                    yield PostgresUnit(_Connection(conn), None, writing=False)
                finally:
                    _rollback(conn)
                    pool.putconn(conn)
                return
            with self._connections().connection() as conn:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                self.reads["primary"] += 1
                try:
                    yield PostgresUnit(_Connection(conn), None, writing=False)
                finally:
                    _rollback(conn)

    # -- replicas -------------------------------------------------------------------

    def _fresh_replica(
        self, wanted: Mapping[floors.FamilyKey, int]
    ) -> tuple[psycopg_pool.ConnectionPool[Any], psycopg.Connection[Any]] | None:
        """A replica connection in an open read transaction that sees this store's own
        commits and every floor of ``wanted``; ``None``: read the primary."""
        with self._guard:
            lsn = self._committed_lsn
            self._turn += 1
            start = self._turn
        deadline = time.monotonic() + self.replica_wait
        delay = 0.005
        while True:
            for n in range(len(self._replicas)):
                found = self._try_replica(
                    self._replicas[(start + n) % len(self._replicas)], lsn, wanted
                )
                if found is not None:
                    self.reads["replica"] += 1
                    return found
            if time.monotonic() >= deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        self.reads["replica_behind"] += 1
        if self.stale == "fail":
            raise RevisionNotMetError(
                f"no replica of {self.url!r} caught up within {self.replica_wait:g} s"
                f" (own commits to {lsn}, floors {_shown(wanted)}); retry later or read"
                " the primary"
            )
        return None

    def _try_replica(
        self, pool: _Pool, lsn: str | None, wanted: Mapping[floors.FamilyKey, int]
    ) -> tuple[psycopg_pool.ConnectionPool[Any], psycopg.Connection[Any]] | None:
        try:
            connections = pool.get()
            conn = connections.getconn(timeout=max(self.replica_wait, 0.1))
        except (psycopg.Error, psycopg_pool.PoolTimeout):
            self.reads["replica_down"] += 1
            return None
        try:
            if lsn is not None:
                # checked before the snapshot is taken: the snapshot then holds it all
                row = conn.execute(
                    "SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, false)", (lsn,)
                ).fetchone()
                if not (row and row[0]):
                    connections.putconn(conn)
                    return None
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            for (tenant, subject, family), revision in sorted(wanted.items()):
                row = conn.execute(
                    "SELECT revision FROM families WHERE tenant = %s AND subject = %s"
                    " AND family = %s",
                    (tenant, subject, family),
                ).fetchone()
                if (0 if row is None else row[0]) < revision:
                    _rollback(conn)
                    connections.putconn(conn)
                    return None
        except psycopg.Error:
            self.reads["replica_down"] += 1
            _rollback(conn)
            connections.putconn(conn)
            return None
        return connections, conn

    @contextmanager
    def _translated(self, what: str) -> Iterator[None]:
        try:
            yield
        except _LOCKED as exc:
            raise StoreLockedError(f"PostgreSQL {what} gave up on a lock: {exc}") from exc
        except psycopg_pool.PoolTimeout as exc:
            raise StoreLockedError(
                f"PostgreSQL {what}: no free connection within {POOL_TIMEOUT_S:g} s"
            ) from exc
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL {what} failed on {self.url!r}: {exc}") from exc


def _later_lsn(current: str | None, new: str) -> str:
    """The later of two WAL positions (``X/Y`` text)."""
    if current is None:
        return new

    def value(lsn: str) -> int:
        high, _, low = lsn.partition("/")
        return (int(high, 16) << 32) | int(low, 16)

    return new if value(new) > value(current) else current


def _shown(wanted: Mapping[floors.FamilyKey, int]) -> str:
    return ", ".join(f"{s}/{f}@{r}" for (_, s, f), r in sorted(wanted.items())) or "none"


def _rollback(conn: psycopg.Connection[Any]) -> None:
    """Roll back what the connection has open; a broken connection has nothing to roll
    back (the server already did) and the pool replaces it."""
    if conn.closed or conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error:
        conn.close()


def _has_schema(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    return bool(row and row[0])
