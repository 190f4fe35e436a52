"""The embedded canonical store: one SQLite file in WAL mode.

Writes run in ``BEGIN IMMEDIATE`` transactions, so writers (threads or
processes) are serialised by SQLite's write lock and a unit of work commits
only when its block returns; any exception rolls it back. Reads run in a
deferred transaction and see one snapshot. ``sqlite3`` errors are translated
to :class:`~memledger.errors.StoreError` here and never escape.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from memledger.domain.records import (
    Actor,
    Grant,
    HistoryEntry,
    Job,
    MemoryRecord,
    Receipt,
    RecordStatus,
    ReviewItem,
    SourceEvent,
    format_time,
    parse_time,
)
from memledger.errors import MigrationError, StoreError, StoreLockedError, StoreNotFoundError
from memledger.ports import FamilySlot, OutboxEntry, OutboxOp, StoredEvent
from memledger.store import Failpoint, codec

BUSY_TIMEOUT_MS = 30_000


def _t(value: datetime | None) -> str | None:
    return None if value is None else format_time(value)


def _pt(value: str | None) -> datetime | None:
    return None if value is None else parse_time(value)


@lru_cache(maxsize=1024)
def _grants(text: str) -> frozenset[Grant]:
    return frozenset(Grant.parse(g) for g in json.loads(text))


def load_migrations() -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` for every packaged migration, in order."""
    found: list[tuple[int, str, str]] = []
    for entry in resources.files("memledger.store.migrations").iterdir():
        match = re.fullmatch(r"(\d{4})_(\w+)\.sql", entry.name)
        if match:
            found.append((int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"packaged migrations are not numbered 1..n: {versions}")
    return found


def _statements(sql: str) -> list[str]:
    lines = [ln for ln in sql.splitlines() if not ln.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _checksum(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()


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
        self._gate = _WriteGate(Path(f"{self.path}.lock"))
        if not self.path.parent.exists():
            raise StoreError(f"cannot open {str(self.path)!r}: folder does not exist")
        if not create and not self.path.exists():
            raise StoreNotFoundError(f"no memledger store at {str(self.path)!r}")
        # Opening takes the write gate: processes creating the same file at once would
        # otherwise race on switching it to WAL, which SQLite refuses without waiting.
        with _translated(f"open {str(self.path)!r}"), self._gate.held(BUSY_TIMEOUT_MS / 1000):
            self._migrate(self._connection())

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
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._guard:
            self._all.append(conn)
        return conn

    def close(self) -> None:
        with self._guard:
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._gate.close()
            self._closed = True

    # -- migrations -----------------------------------------------------------------

    def _migrate(self, conn: sqlite3.Connection) -> None:
        known = load_migrations()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                " checksum TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            applied = {
                row[0]: (row[1], row[2])
                for row in conn.execute("SELECT version, name, checksum FROM schema_migrations")
            }
            newest = max(applied, default=0)
            if newest > len(known):
                raise MigrationError(
                    f"{str(self.path)!r} has schema version {newest}; this memledger knows "
                    f"up to {len(known)}: upgrade memledger"
                )
            for version, name, sql in known:
                if version in applied:
                    if applied[version][1] != _checksum(sql):
                        raise MigrationError(
                            f"migration {version} ({name}) in {str(self.path)!r} differs from "
                            "the packaged one; migrations are append-only"
                        )
                    continue
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?, ?)",
                    (version, name, _checksum(sql), format_time(datetime.now(UTC))),
                )
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
        with _translated("write"), self._gate.held(BUSY_TIMEOUT_MS / 1000):
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
        with _translated("read"):
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

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._pid: int | None = None

    def _file(self) -> int | None:
        if fcntl is None:
            return None
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
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


@contextmanager
def _translated(what: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreLockedError(f"SQLite {what} gave up waiting for the lock: {exc}") from exc
        raise StoreError(f"SQLite {what} failed: {exc}") from exc
    except sqlite3.Error as exc:
        raise StoreError(f"SQLite {what} failed: {exc}") from exc


_RECORD_COLUMNS = (
    "tenant, memory_id, subject, family, scope, kind, proposed_kind, claim, value, status,"
    " source_event_id, source_actor_id, source_channel, source_identity_authenticated,"
    " scope_authorized, claim_faithful_to_source, operational_setting_confirmed, recorded_at,"
    " superseded_at, closed_by, valid_from, valid_until, revision, generation, confidence,"
    " grounding, extractor, supersedes, exclusion, mentions, trust"
)


def _record_row(r: MemoryRecord) -> tuple[Any, ...]:
    return (
        r.tenant,
        r.memory_id,
        r.subject,
        r.family,
        r.scope,
        r.kind,
        r.proposed_kind,
        r.claim,
        codec.dumps(r.value),
        r.status,
        r.source_event_id,
        r.source_actor_id,
        r.source_channel,
        int(r.source_identity_authenticated),
        int(r.scope_authorized),
        int(r.claim_faithful_to_source),
        int(r.operational_setting_confirmed),
        _t(r.recorded_at),
        _t(r.superseded_at),
        r.closed_by,
        _t(r.valid_from),
        _t(r.valid_until),
        r.revision,
        r.generation,
        r.confidence,
        r.grounding,
        codec.extractor_to_json(r.extractor),
        r.supersedes,
        r.exclusion,
        r.mentions,
        r.trust,
    )


def _record(row: sqlite3.Row | tuple[Any, ...]) -> MemoryRecord:
    (
        tenant,
        memory_id,
        subject,
        family,
        scope,
        kind,
        proposed_kind,
        claim,
        value,
        status,
        event_id,
        actor_id,
        channel,
        authenticated,
        authorized,
        faithful,
        confirmed,
        recorded_at,
        superseded_at,
        closed_by,
        valid_from,
        valid_until,
        revision,
        generation,
        confidence,
        grounding,
        extractor,
        supersedes,
        exclusion,
        mentions,
        trust,
    ) = row
    recorded = parse_time(recorded_at)
    start = parse_time(valid_from)
    return MemoryRecord(
        tenant=tenant,
        memory_id=memory_id,
        subject=subject,
        family=family,
        kind=kind,
        proposed_kind=proposed_kind,
        claim=claim,
        value=codec.loads_json(value),
        scope=scope,
        status=status,
        source_event_id=event_id,
        source_actor_id=actor_id,
        source_channel=channel,
        source_identity_authenticated=bool(authenticated),
        scope_authorized=bool(authorized),
        claim_faithful_to_source=bool(faithful),
        operational_setting_confirmed=bool(confirmed),
        recorded_at=recorded,
        superseded_at=_pt(superseded_at),
        closed_by=closed_by,
        valid_from=start,
        valid_until=_pt(valid_until),
        revision=revision,
        generation=generation,
        confidence=confidence,
        grounding=grounding,
        extractor=codec.extractor_from_json(extractor),
        supersedes=supersedes,
        exclusion=exclusion,
        mentions=mentions,
        trust=trust,
    )


class SQLiteUnit:
    """One transaction on one connection. See :class:`memledger.ports.UnitOfWork`."""

    def __init__(self, conn: sqlite3.Connection, failpoint: Failpoint | None) -> None:
        self.conn = conn
        self._failpoint = failpoint
        self._depth = 0

    def _write(self, step: str, sql: str, params: Sequence[Any]) -> None:
        if self._failpoint is not None:
            self._failpoint(step)
        self.conn.execute(sql, params)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested transaction: rolled back alone if its block raises."""
        self._depth += 1
        name = f"sp{self._depth}"
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.conn.execute(f"ROLLBACK TO {name}")
            self.conn.execute(f"RELEASE {name}")
            raise
        else:
            self.conn.execute(f"RELEASE {name}")
        finally:
            self._depth -= 1

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        return self.conn.execute(sql, params).fetchone()

    # -- ledger ---------------------------------------------------------------------

    def get_event(self, tenant: str, event_id: str) -> StoredEvent | None:
        row = self._one(
            "SELECT content_hash, subject, actor_id, actor_authenticated, actor_grants, channel,"
            " stream, sequence, occurred_at, text, metadata, ingested_at"
            " FROM events WHERE tenant = ? AND event_id = ?",
            (tenant, event_id),
        )
        if row is None:
            return None
        (
            content_hash,
            subject,
            actor_id,
            authenticated,
            grants,
            channel,
            stream,
            sequence,
            occurred_at,
            text,
            metadata,
            ingested_at,
        ) = row
        event = SourceEvent(
            tenant=tenant,
            event_id=event_id,
            subject=subject,
            actor=Actor(
                id=actor_id,
                authenticated=bool(authenticated),
                grants=_grants(grants),
            ),
            channel=channel,
            stream=stream,
            sequence=sequence,
            occurred_at=parse_time(occurred_at),
            text=text,
            metadata=json.loads(metadata),
        )
        return StoredEvent(
            event=event, content_hash=content_hash, ingested_at=parse_time(ingested_at)
        )

    def event_hash(self, tenant: str, event_id: str) -> str | None:
        row = self._one(
            "SELECT content_hash FROM events WHERE tenant = ? AND event_id = ?",
            (tenant, event_id),
        )
        return None if row is None else str(row[0])

    def append_event(self, event: SourceEvent, *, content_hash: str, at: datetime) -> None:
        self._write(
            "append_event",
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.tenant,
                event.event_id,
                content_hash,
                event.subject,
                event.actor.id,
                int(event.actor.authenticated),
                codec.dumps(sorted(str(g) for g in event.actor.grants)),
                event.channel,
                event.stream,
                event.sequence,
                format_time(event.occurred_at),
                event.text,
                codec.dumps(event.metadata),
                format_time(at),
            ),
        )

    def get_outcome(self, tenant: str, event_id: str) -> Receipt | None:
        row = self._one(
            "SELECT receipt FROM event_outcomes WHERE tenant = ? AND event_id = ?",
            (tenant, event_id),
        )
        return None if row is None else codec.receipt_from_json(row[0])

    def put_outcome(self, receipt: Receipt, *, at: datetime) -> None:
        self._write(
            "put_outcome",
            "INSERT INTO event_outcomes VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (tenant, event_id) DO UPDATE SET outcome = excluded.outcome,"
            " receipt = excluded.receipt, decided_at = excluded.decided_at",
            (
                receipt.tenant,
                receipt.event_id,
                receipt.outcome,
                codec.receipt_to_json(receipt),
                format_time(at),
            ),
        )

    # -- family slots ---------------------------------------------------------------

    def get_family(self, tenant: str, subject: str, family: str) -> FamilySlot | None:
        row = self._one(
            "SELECT revision, generation, position, updated_at FROM families"
            " WHERE tenant = ? AND subject = ? AND family = ?",
            (tenant, subject, family),
        )
        if row is None:
            return None
        return FamilySlot(
            tenant=tenant,
            subject=subject,
            family=family,
            revision=row[0],
            generation=row[1],
            position=codec.position_from_json(row[2]),
            updated_at=_pt(row[3]),
        )

    def lock_family(self, tenant: str, subject: str, family: str) -> FamilySlot:
        # BEGIN IMMEDIATE already holds the database write lock: reading is locking.
        slot = self.get_family(tenant, subject, family)
        return slot or FamilySlot(tenant=tenant, subject=subject, family=family)

    def put_family(self, slot: FamilySlot) -> None:
        self._write(
            "put_family",
            "INSERT INTO families VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (tenant, subject, family) DO UPDATE SET revision = excluded.revision,"
            " generation = excluded.generation, position = excluded.position,"
            " updated_at = excluded.updated_at",
            (
                slot.tenant,
                slot.subject,
                slot.family,
                slot.revision,
                slot.generation,
                codec.position_to_json(slot.position),
                _t(slot.updated_at),
            ),
        )

    def families(self, tenant: str, subject: str) -> Sequence[FamilySlot]:
        rows = self.conn.execute(
            "SELECT family, revision, generation, position, updated_at FROM families"
            " WHERE tenant = ? AND subject = ? ORDER BY family",
            (tenant, subject),
        ).fetchall()
        return [
            FamilySlot(
                tenant=tenant,
                subject=subject,
                family=family,
                revision=revision,
                generation=generation,
                position=codec.position_from_json(position),
                updated_at=_pt(updated_at),
            )
            for family, revision, generation, position, updated_at in rows
        ]

    def family_events(self, tenant: str, subject: str, family: str) -> Sequence[str]:
        rows = self.conn.execute(
            "SELECT cause FROM history WHERE tenant = ? AND subject = ? AND family = ?"
            " AND action != 'revoked' GROUP BY cause ORDER BY min(seq)",
            (tenant, subject, family),
        )
        return [row[0] for row in rows]

    # -- records, history, outbox ----------------------------------------------------

    def insert_record(self, record: MemoryRecord) -> None:
        self._write(
            "insert_record",
            f"INSERT INTO records ({_RECORD_COLUMNS}) VALUES ({', '.join('?' * 31)})",
            _record_row(record),
        )

    def close_record(
        self, tenant: str, memory_id: str, *, status: RecordStatus, at: datetime, closed_by: str
    ) -> None:
        self._write(
            "close_record",
            "UPDATE records SET status = ?, superseded_at = ?, closed_by = ?"
            " WHERE tenant = ? AND memory_id = ? AND superseded_at IS NULL",
            (status, format_time(at), closed_by, tenant, memory_id),
        )

    def get_record(self, tenant: str, memory_id: str) -> MemoryRecord | None:
        row = self._one(
            f"SELECT {_RECORD_COLUMNS} FROM records WHERE tenant = ? AND memory_id = ?",
            (tenant, memory_id),
        )
        return None if row is None else _record(row)

    def get_records(self, tenant: str, memory_ids: Sequence[str]) -> Mapping[str, MemoryRecord]:
        found: dict[str, MemoryRecord] = {}
        wanted = list(dict.fromkeys(memory_ids))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = (
                f"SELECT {_RECORD_COLUMNS} FROM records WHERE tenant = ?"
                f" AND memory_id IN ({', '.join('?' * len(chunk))})"
            )
            for row in self.conn.execute(sql, (tenant, *chunk)):
                record = _record(row)
                found[record.memory_id] = record
        return found

    def family_records(
        self, tenant: str, subject: str, family: str, *, open_only: bool
    ) -> Sequence[MemoryRecord]:
        # Without statistics the planner prefers the primary key's tenant prefix and scans
        # the whole tenant; the family index is always the right one here.
        sql = (
            f"SELECT {_RECORD_COLUMNS} FROM records INDEXED BY records_family"
            " WHERE tenant = ? AND subject = ? AND family = ?"
        )
        if open_only:
            sql += " AND superseded_at IS NULL"
        sql += " ORDER BY recorded_at, valid_from, memory_id"
        return [_record(row) for row in self.conn.execute(sql, (tenant, subject, family))]

    def add_history(self, entry: HistoryEntry) -> None:
        self._write(
            "add_history",
            "INSERT INTO history (tenant, subject, family, revision, generation, action,"
            " memory_id, status, at, cause) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.tenant,
                entry.subject,
                entry.family,
                entry.revision,
                entry.generation,
                entry.action,
                entry.memory_id,
                entry.status,
                format_time(entry.at),
                entry.cause,
            ),
        )

    def history(self, tenant: str, subject: str, family: str) -> Sequence[HistoryEntry]:
        rows = self.conn.execute(
            "SELECT seq, revision, generation, action, memory_id, status, at, cause FROM history"
            " WHERE tenant = ? AND subject = ? AND family = ? ORDER BY seq",
            (tenant, subject, family),
        )
        return [
            HistoryEntry(
                seq=seq,
                tenant=tenant,
                subject=subject,
                family=family,
                revision=revision,
                generation=generation,
                action=action,
                memory_id=memory_id,
                status=status,
                at=parse_time(at),
                cause=cause,
            )
            for seq, revision, generation, action, memory_id, status, at, cause in rows
        ]

    def add_outbox(self, record: MemoryRecord, *, op: OutboxOp, at: datetime) -> None:
        self._write(
            "add_outbox",
            "INSERT INTO outbox (tenant, memory_id, subject, family, revision, generation, op,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.tenant,
                record.memory_id,
                record.subject,
                record.family,
                record.revision,
                record.generation,
                op,
                format_time(at),
            ),
        )

    def outbox_size(self, tenant: str) -> int:
        row = self._one(
            "SELECT count(*) FROM outbox WHERE tenant = ? AND processed_at IS NULL", (tenant,)
        )
        return int(row[0])

    def outbox_after(self, seq: int, *, limit: int) -> Sequence[OutboxEntry]:
        rows = self.conn.execute(
            "SELECT seq, tenant, memory_id, subject, family, revision, generation, op"
            " FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
            (seq, limit),
        ).fetchall()
        return [
            OutboxEntry(
                seq=s, tenant=t, memory_id=m, subject=su, family=f, revision=r, generation=g, op=op
            )
            for s, t, m, su, f, r, g, op in rows
        ]

    def outbox_head(self) -> int:
        row = self._one("SELECT coalesce(max(seq), 0) FROM outbox", ())
        return int(row[0])

    def add_mention(self, tenant: str, memory_id: str, *, event_id: str, at: datetime) -> bool:
        cursor = self.conn.execute(
            "SELECT 1 FROM mentions WHERE tenant = ? AND memory_id = ? AND event_id = ?",
            (tenant, memory_id, event_id),
        )
        if cursor.fetchone() is not None:
            return False
        self._write(
            "add_mention",
            "INSERT INTO mentions VALUES (?, ?, ?, ?)",
            (tenant, memory_id, event_id, format_time(at)),
        )
        return True

    def set_mentions(
        self, tenant: str, memory_id: str, *, mentions: int, confidence: float, revision: int
    ) -> None:
        self._write(
            "set_mentions",
            "UPDATE records SET mentions = ?, confidence = ?, revision = ?"
            " WHERE tenant = ? AND memory_id = ?",
            (mentions, confidence, revision, tenant, memory_id),
        )

    def bump_counter(self, tenant: str, name: str, *, by: int = 1) -> None:
        self._write(
            "bump_counter",
            "INSERT INTO counters VALUES (?, ?, ?)"
            " ON CONFLICT (tenant, name) DO UPDATE SET count = count + excluded.count",
            (tenant, name, by),
        )

    def counters(self, tenant: str) -> Mapping[str, int]:
        rows = self.conn.execute(
            "SELECT name, count FROM counters WHERE tenant = ? ORDER BY name", (tenant,)
        )
        return {name: count for name, count in rows}

    def count_events(self, tenant: str, subject: str, *, since: datetime, until: datetime) -> int:
        row = self._one(
            "SELECT count(*) FROM events WHERE tenant = ? AND subject = ?"
            " AND occurred_at >= ? AND occurred_at <= ?",
            (tenant, subject, format_time(since), format_time(until)),
        )
        return int(row[0])

    def subject_events(self, tenant: str, subject: str) -> Sequence[SourceEvent]:
        rows = self.conn.execute(
            "SELECT event_id FROM events WHERE tenant = ? AND subject = ?"
            " ORDER BY occurred_at, sequence, ingested_at, event_id",
            (tenant, subject),
        ).fetchall()
        found = [self.get_event(tenant, row[0]) for row in rows]
        return [stored.event for stored in found if stored is not None]

    # -- revocation -----------------------------------------------------------------

    def add_revoked_source(
        self, tenant: str, subject: str, family: str, *, event_id: str, generation: int
    ) -> None:
        self._write(
            "add_revoked_source",
            "INSERT OR IGNORE INTO revoked_sources VALUES (?, ?, ?, ?, ?)",
            (tenant, subject, family, event_id, generation),
        )

    def is_revoked_source(self, tenant: str, subject: str, family: str, event_id: str) -> bool:
        row = self._one(
            "SELECT 1 FROM revoked_sources"
            " WHERE tenant = ? AND subject = ? AND family = ? AND event_id = ?",
            (tenant, subject, family, event_id),
        )
        return row is not None

    def revoked_sources(self, tenant: str, subject: str, family: str) -> frozenset[str]:
        rows = self.conn.execute(
            "SELECT event_id FROM revoked_sources WHERE tenant = ? AND subject = ? AND family = ?",
            (tenant, subject, family),
        )
        return frozenset(row[0] for row in rows)

    # -- review queue and jobs --------------------------------------------------------

    def add_review(self, item: ReviewItem) -> None:
        self._write(
            "add_review",
            "INSERT OR IGNORE INTO review_queue VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item.tenant,
                item.review_id,
                item.event_id,
                item.subject,
                item.reason,
                codec.claims_to_json(item.claims),
                format_time(item.created_at),
                _t(item.resolved_at),
                item.resolution,
            ),
        )

    def reviews(self, tenant: str, *, open_only: bool) -> Sequence[ReviewItem]:
        sql = (
            "SELECT review_id, event_id, subject, reason, claims, created_at, resolved_at,"
            " resolution FROM review_queue WHERE tenant = ?"
        )
        if open_only:
            sql += " AND resolved_at IS NULL"
        sql += " ORDER BY created_at, review_id"
        rows = self.conn.execute(sql, (tenant,)).fetchall()
        return [
            ReviewItem(
                tenant=tenant,
                review_id=rid,
                event_id=eid,
                subject=subject,
                reason=reason,
                claims=codec.claims_from_json(claims),
                created_at=parse_time(created),
                resolved_at=_pt(resolved),
                resolution=resolution,
            )
            for rid, eid, subject, reason, claims, created, resolved, resolution in rows
        ]

    def add_job(self, job: Job) -> None:
        self._write(
            "add_job",
            "INSERT OR IGNORE INTO jobs (tenant, job_id, event_id, generations, status,"
            " attempts, last_error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                job.tenant,
                job.job_id,
                job.event_id,
                codec.dumps(dict(job.generations)),
                job.status,
                job.attempts,
                job.last_error,
                format_time(job.created_at),
            ),
        )

    _JOB_COLUMNS = (
        "tenant, job_id, event_id, generations, status, attempts, last_error, created_at,"
        " next_attempt_at, lease_until"
    )

    def get_job(self, tenant: str, job_id: str) -> Job | None:
        row = self._one(
            f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE tenant = ? AND job_id = ?",
            (tenant, job_id),
        )
        return None if row is None else self._job(row)

    @staticmethod
    def _job(row: tuple[Any, ...]) -> Job:
        (
            tenant,
            job_id,
            event_id,
            generations,
            status,
            attempts,
            last_error,
            created_at,
            next_attempt_at,
            lease_until,
        ) = row
        return Job(
            tenant=tenant,
            job_id=job_id,
            event_id=event_id,
            generations=json.loads(generations),
            status=status,
            attempts=attempts,
            last_error=last_error,
            created_at=parse_time(created_at),
            next_attempt_at=_pt(next_attempt_at),
            lease_until=_pt(lease_until),
        )

    def claim_jobs(
        self, *, tenant: str | None, now: datetime, lease_until: datetime, owner: str, limit: int
    ) -> Sequence[Job]:
        stamp = format_time(now)
        due = (
            "SELECT rowid FROM jobs WHERE status = 'queued'"
            " AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
            " AND (lease_until IS NULL OR lease_until <= ?)"
        )
        params: list[Any] = [format_time(lease_until), owner, stamp, stamp]
        if tenant is not None:
            due += " AND tenant = ?"
            params.append(tenant)
        params.append(limit)
        if self._failpoint is not None:
            self._failpoint("claim_jobs")
        rows = self.conn.execute(
            "UPDATE jobs SET lease_until = ?, lease_owner = ?, attempts = attempts + 1"
            f" WHERE rowid IN ({due} ORDER BY created_at, job_id LIMIT ?)"
            f" RETURNING {self._JOB_COLUMNS}",
            params,
        ).fetchall()
        return sorted((self._job(row) for row in rows), key=lambda j: (j.created_at, j.job_id))

    def retry_job(
        self, tenant: str, job_id: str, *, error: str, next_attempt_at: datetime, failed: bool
    ) -> None:
        self._write(
            "retry_job",
            "UPDATE jobs SET status = ?, last_error = ?, next_attempt_at = ?,"
            " lease_until = NULL, lease_owner = NULL"
            " WHERE tenant = ? AND job_id = ? AND status = 'queued'",  # another worker may be done
            ("failed" if failed else "queued", error, format_time(next_attempt_at), tenant, job_id),
        )

    def requeue_failed(self, tenant: str, *, now: datetime) -> int:
        cursor = self.conn.execute(
            "SELECT count(*) FROM jobs WHERE tenant = ? AND status = 'failed'", (tenant,)
        )
        count = int(cursor.fetchone()[0])
        if count:
            self._write(
                "requeue_failed",
                "UPDATE jobs SET status = 'queued', attempts = 0, next_attempt_at = ?"
                " WHERE tenant = ? AND status = 'failed'",
                (format_time(now), tenant),
            )
        return count

    def finish_job(self, tenant: str, job_id: str, *, at: datetime) -> None:
        self._write(
            "finish_job",
            "UPDATE jobs SET status = 'done', finished_at = ?, lease_until = NULL,"
            " lease_owner = NULL WHERE tenant = ? AND job_id = ? AND status != 'done'",
            (format_time(at), tenant, job_id),
        )

    def jobs(self, tenant: str, *, open_only: bool) -> Sequence[Job]:
        sql = f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE tenant = ?"
        if open_only:
            sql += " AND status != 'done'"
        sql += " ORDER BY created_at, job_id"
        return [self._job(row) for row in self.conn.execute(sql, (tenant,)).fetchall()]
