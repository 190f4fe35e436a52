"""One transaction of a SQL store: the unit-of-work primitives, and how domain values
are laid out in rows. See :class:`memledger.ports.UnitOfWork`.

Written once for both SQL backends in SQLite's dialect (``?`` parameters, ``INSERT OR
IGNORE``, ``INDEXED BY`` hints): the SQLite store runs it as it is, the PostgreSQL
store through a connection that translates those three
(:mod:`memledger.store.postgres`) and overrides the few primitives whose locking
differs. The stores, their connections, locks and migrations are in
:mod:`memledger.store.sqlite` and :mod:`memledger.store.postgres`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from memledger.domain.changes import Change
from memledger.domain.records import (
    Actor,
    HistoryAction,
    HistoryEntry,
    Job,
    MemoryRecord,
    Receipt,
    RecordStatus,
    SourceEvent,
    format_time,
    parse_time,
)
from memledger.errors import ConflictError
from memledger.ports import (
    FamilySlot,
    OutboxEntry,
    OutboxOp,
    StoredDecision,
    StoredEvent,
    StoredTrace,
    SubjectSummary,
)
from memledger.store import Failpoint, codec
from memledger.store import _rows as layout
from memledger.store._namespaces import held_sql, held_text, visible_sql
from memledger.store._sql_service import ServiceRows


def _chunks(ids: Iterable[str]) -> Iterator[tuple[list[str], str]]:
    """``ids`` sorted, each once, in chunks of at most 400 (under SQLite's bound of
    parameters) with each chunk's ``(?, ?, ...)``."""
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), 400):
        chunk = wanted[start : start + 400]
        yield chunk, f"({', '.join('?' * len(chunk))})"


class SqlUnit(ServiceRows):
    """One transaction on one connection. See :class:`memledger.ports.UnitOfWork`.

    ``conn`` runs SQLite-dialect SQL (``execute(sql, params)`` returning a cursor).
    Subclasses name the errors a broken unique key raises and the column that orders
    rows of one table by arrival."""

    _integrity_errors: tuple[type[Exception], ...] = ()
    _arrival = "rowid"
    """A column that grows with every insert, to order rows written in the same instant."""

    def __init__(self, conn: Any, failpoint: Failpoint | None) -> None:
        self.conn = conn
        self._failpoint = failpoint
        self._depth = 0

    def _write(self, step: str, sql: str, params: Sequence[Any]) -> Any:
        if self._failpoint is not None:
            self._failpoint(step)
        return self.conn.execute(sql, params)

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

    def get_event(
        self, tenant: str, event_id: str, *, namespaces: frozenset[str] | None = None
    ) -> StoredEvent | None:
        hide, hidden = visible_sql("subject", namespaces)
        row = self._one(
            "SELECT content_hash, subject, actor_id, actor_authenticated, actor_grants, channel,"
            " stream, sequence, occurred_at, text, metadata, ingested_at, role"
            f" FROM events WHERE tenant = ? AND event_id = ?{hide}",
            (tenant, event_id, *hidden),
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
            role,
        ) = row
        event = SourceEvent(
            tenant=tenant,
            event_id=event_id,
            subject=subject,
            actor=Actor(
                id=actor_id,
                authenticated=bool(authenticated),
                grants=layout.grants(grants),
            ),
            channel=channel,
            stream=stream,
            sequence=sequence,
            occurred_at=parse_time(occurred_at),
            text=text,
            metadata=json.loads(metadata),
            role=role,
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
            "INSERT INTO events (tenant, event_id, content_hash, subject, actor_id,"
            " actor_authenticated, actor_grants, channel, stream, sequence, occurred_at, text,"
            " metadata, ingested_at, role) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.tenant,
                event.event_id,
                content_hash,
                event.subject,
                event.actor.id,
                int(event.actor.authenticated),
                layout.grants_json(event.actor.grants),
                event.channel,
                event.stream,
                event.sequence,
                format_time(event.occurred_at),
                event.text,
                codec.dumps(event.metadata),
                format_time(at),
                event.role,
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
        return self._family(tenant, subject, family, lock=False)

    def _family(self, tenant: str, subject: str, family: str, *, lock: bool) -> FamilySlot | None:
        """A family slot's row; ``lock=True`` (a server store) also locks it."""
        row = self._one(
            "SELECT revision, generation, position, updated_at FROM families"
            " WHERE tenant = ? AND subject = ? AND family = ?" + (" FOR UPDATE" if lock else ""),
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
            updated_at=layout.pt(row[3]),
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
                layout.t(slot.updated_at),
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
                updated_at=layout.pt(updated_at),
            )
            for family, revision, generation, position, updated_at in rows
        ]

    def family_events(self, tenant: str, subject: str, family: str) -> Sequence[str]:
        rows = self.conn.execute(
            "SELECT cause FROM history WHERE tenant = ? AND subject = ? AND family = ?"
            " AND action IN ('recorded', 'closed', 'mentioned') GROUP BY cause ORDER BY min(seq)",
            (tenant, subject, family),
        )
        return [row[0] for row in rows]

    # -- records, history, outbox ----------------------------------------------------

    def insert_record(self, record: MemoryRecord) -> None:
        self._write(
            "insert_record",
            f"INSERT INTO records ({layout.RECORD_COLUMNS}) VALUES ({', '.join('?' * 32)})",
            layout.record_row(record),
        )

    def close_record(
        self, tenant: str, memory_id: str, *, status: RecordStatus, at: datetime, closed_by: str
    ) -> None:
        cursor = self._write(
            "close_record",
            "UPDATE records SET status = ?, superseded_at = ?, closed_by = ?"
            " WHERE tenant = ? AND memory_id = ? AND superseded_at IS NULL",
            (status, format_time(at), closed_by, tenant, memory_id),
        )
        if cursor.rowcount:  # a summary, or an episode it covers, closed: dissolve it
            self._dissolve(tenant, memory_id, at=at, cause=f"{memory_id} closed ({closed_by})")

    # -- compaction (memledger.write.compact) -----------------------------------------

    def add_compaction(self, tenant: str, summary_id: str, memory_ids: Sequence[str]) -> None:
        for memory_id in sorted(set(memory_ids)):
            self._write(
                "add_compaction",
                "INSERT INTO compactions VALUES (?, ?, ?)",
                (tenant, summary_id, memory_id),
            )

    def covered_by(self, tenant: str, memory_ids: Sequence[str]) -> Mapping[str, str]:
        return {m: s for m, s, held in self._compaction_rows(tenant, memory_ids) if held}

    def compacted(self, tenant: str, summary_id: str) -> Sequence[str]:
        rows = self.conn.execute(
            "SELECT memory_id FROM compactions WHERE tenant = ? AND summary_id = ?"
            " ORDER BY memory_id",
            (tenant, summary_id),
        )
        return [str(row[0]) for row in rows]

    def _compaction_rows(
        self, tenant: str, memory_ids: Sequence[str], *, summaries: bool = False
    ) -> list[tuple[str, str, bool]]:
        """(episode, summary, whether the summary is open) for the compactions covering
        ``memory_ids`` (``summaries=True``: of the summaries among them)."""
        column = "summary_id" if summaries else "memory_id"
        found: list[tuple[str, str, bool]] = []
        for chunk, among in _chunks(memory_ids):
            rows = self.conn.execute(
                "SELECT c.memory_id, c.summary_id, s.superseded_at IS NULL FROM compactions c"
                " JOIN records s ON s.tenant = c.tenant AND s.memory_id = c.summary_id"
                f" WHERE c.tenant = ? AND c.{column} IN {among}",
                (tenant, *chunk),
            )
            found.extend((str(m), str(summary), bool(held)) for m, summary, held in rows)
        return found

    def _dissolve(self, tenant: str, memory_id: str, *, at: datetime, cause: str) -> None:
        """``memory_id`` closed: if it is an open summary, or an episode one covers, that
        summary closes (its words are its episodes') and the episodes it covers that are
        still open go back to the index. The compaction stays as lineage."""
        rows = self.conn.execute(  # one lookup on every close: as episode or as summary
            "SELECT c.memory_id, c.summary_id, s.superseded_at IS NULL FROM compactions c"
            " JOIN records s ON s.tenant = c.tenant AND s.memory_id = c.summary_id"
            " WHERE c.tenant = ? AND (c.memory_id = ? OR c.summary_id = ?)",
            (tenant, memory_id, memory_id),
        ).fetchall()
        # (a summary that just closed itself reads as closed: it was open a moment ago)
        for summary_id in sorted({s for _, s, held in rows if held or s == memory_id}):
            if summary_id == memory_id:  # the summary closed: its episodes are indexed again
                covered = self.get_records(tenant, self.compacted(tenant, summary_id))
                for record in covered.values():
                    if record.superseded_at is None:
                        self.add_outbox(record, op="upsert", at=at)
                continue
            summary = self.get_record(tenant, summary_id)  # a covered episode closed
            if summary is None:
                continue
            closed_by = f"dissolved: {cause}"
            self.close_record(  # which dissolves it, as above
                tenant, summary_id, status="superseded", at=at, closed_by=closed_by
            )
            closed = replace(summary, status="superseded", superseded_at=at, closed_by=closed_by)
            self.add_history(self._history(closed, "closed", at=at, cause=f"summary {closed_by}"))
            self.add_outbox(closed, op="delete", at=at)

    @staticmethod
    def _history(
        record: MemoryRecord, action: HistoryAction, *, at: datetime, cause: str
    ) -> HistoryEntry:
        """What the store itself did to ``record`` (dissolving, erasing), at its revision."""
        return HistoryEntry(
            seq=0,
            tenant=record.tenant,
            subject=record.subject,
            family=record.family,
            revision=record.revision,
            generation=record.generation,
            action=action,
            memory_id=record.memory_id,
            status=record.status,
            at=at,
            cause=cause,
        )

    def get_record(
        self, tenant: str, memory_id: str, *, namespaces: frozenset[str] | None = None
    ) -> MemoryRecord | None:
        hide, hidden = visible_sql("subject", namespaces)
        row = self._one(
            f"SELECT {layout.RECORD_COLUMNS} FROM records WHERE tenant = ? AND memory_id = ?{hide}",
            (tenant, memory_id, *hidden),
        )
        return None if row is None else layout.record(row)

    def get_records(self, tenant: str, memory_ids: Sequence[str]) -> Mapping[str, MemoryRecord]:
        found: dict[str, MemoryRecord] = {}
        wanted = list(dict.fromkeys(memory_ids))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = (
                f"SELECT {layout.RECORD_COLUMNS} FROM records WHERE tenant = ?"
                f" AND memory_id IN ({', '.join('?' * len(chunk))})"
            )
            for row in self.conn.execute(sql, (tenant, *chunk)):
                record = layout.record(row)
                found[record.memory_id] = record
        return found

    def event_records(
        self, tenant: str, event_id: str, *, open_only: bool
    ) -> Sequence[MemoryRecord]:
        sql = (
            f"SELECT {layout.RECORD_COLUMNS} FROM records INDEXED BY records_source"
            " WHERE tenant = ? AND source_event_id = ?"
        )
        if open_only:
            sql += " AND superseded_at IS NULL"
        sql += " ORDER BY recorded_at, subject, family, valid_from, memory_id"
        return [layout.record(row) for row in self.conn.execute(sql, (tenant, event_id))]

    def claims_of_events(self, tenant: str, event_ids: Sequence[str]) -> Sequence[MemoryRecord]:
        found: list[MemoryRecord] = []
        wanted = list(dict.fromkeys(event_ids))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = (
                f"SELECT {layout.RECORD_COLUMNS} FROM records INDEXED BY records_source"
                f" WHERE tenant = ? AND source_event_id IN ({', '.join('?' * len(chunk))})"
                " AND kind != 'episode' AND proposed_kind != 'episode'"
            )
            found.extend(layout.record(row) for row in self.conn.execute(sql, (tenant, *chunk)))
        return found

    def family_records(
        self, tenant: str, subject: str, family: str, *, open_only: bool
    ) -> Sequence[MemoryRecord]:
        # Without statistics the planner prefers the primary key's tenant prefix and scans
        # the whole tenant; the family index is always the right one here.
        sql = (
            f"SELECT {layout.RECORD_COLUMNS} FROM records INDEXED BY records_family"
            " WHERE tenant = ? AND subject = ? AND family = ?"
        )
        if open_only:
            sql += " AND superseded_at IS NULL"
        sql += " ORDER BY recorded_at, valid_from, memory_id"
        return [layout.record(row) for row in self.conn.execute(sql, (tenant, subject, family))]

    def add_history(self, entry: HistoryEntry) -> None:
        self._write(
            "add_history",
            "INSERT INTO history (tenant, subject, family, revision, generation, action,"
            " memory_id, status, at, cause, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                entry.note,
            ),
        )

    def history(self, tenant: str, subject: str, family: str) -> Sequence[HistoryEntry]:
        rows = self.conn.execute(
            "SELECT seq, revision, generation, action, memory_id, status, at, cause, note"
            " FROM history WHERE tenant = ? AND subject = ? AND family = ? ORDER BY seq",
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
                note=note,
            )
            for seq, revision, generation, action, memory_id, status, at, cause, note in rows
        ]

    _OUTBOX_INSERT = (
        "INSERT INTO outbox (tenant, memory_id, subject, family, revision, generation, op,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )

    def add_outbox(self, record: MemoryRecord, *, op: OutboxOp, at: datetime) -> None:
        self._write("add_outbox", self._OUTBOX_INSERT, outbox_row(record, op=op, at=at))

    def outbox_size(self, tenant: str) -> int:
        row = self._one(
            "SELECT count(*) FROM outbox WHERE tenant = ? AND processed_at IS NULL", (tenant,)
        )
        return int(row[0])

    def outbox_after(
        self, seq: int, *, limit: int, tenant: str | None = None
    ) -> Sequence[OutboxEntry]:
        columns = "seq, tenant, memory_id, subject, family, revision, generation, op"
        if tenant is None:
            sql = f"SELECT {columns} FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?"
            params: tuple[Any, ...] = (seq, limit)
        else:
            sql = (
                f"SELECT {columns} FROM outbox INDEXED BY outbox_tenant"
                " WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?"
            )
            params = (tenant, seq, limit)
        rows = self.conn.execute(sql, params).fetchall()
        return [
            OutboxEntry(
                seq=s, tenant=t, memory_id=m, subject=su, family=f, revision=r, generation=g, op=op
            )
            for s, t, m, su, f, r, g, op in rows
        ]

    def outbox_pending(self, tenant: str, *, after: int) -> int:
        row = self._one(
            "SELECT count(*) FROM outbox INDEXED BY outbox_tenant WHERE tenant = ? AND seq > ?",
            (tenant, after),
        )
        return int(row[0])

    def outbox_pending_subjects(self, tenant: str, *, after: int) -> Mapping[str, int]:
        rows = self.conn.execute(
            "SELECT subject, count(*) FROM outbox INDEXED BY outbox_tenant"
            " WHERE tenant = ? AND seq > ? GROUP BY subject",
            (tenant, after),
        )
        return {str(subject): int(n) for subject, n in rows}

    def outbox_head(self) -> int:
        row = self._one("SELECT coalesce(max(seq), 0) FROM outbox", ())
        return int(row[0])

    def outbox_count(self, *, after: int) -> int:
        row = self._one("SELECT count(*) FROM outbox WHERE seq > ?", (after,))
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

    def mention_events(self, tenant: str, memory_ids: Sequence[str]) -> Sequence[str]:
        found: set[str] = set()
        wanted = list(dict.fromkeys(memory_ids))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            found.update(
                row[0]
                for row in self.conn.execute(
                    "SELECT event_id FROM mentions WHERE tenant = ?"
                    f" AND memory_id IN ({', '.join('?' * len(chunk))})",
                    (tenant, *chunk),
                )
            )
        return sorted(found)

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
            " ON CONFLICT (tenant, name) DO UPDATE SET count = counters.count + excluded.count",
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

    def subjects(
        self,
        tenant: str,
        *,
        prefix: str = "",
        after: str | None = None,
        limit: int,
        namespaces: frozenset[str] | None = None,
    ) -> Sequence[SubjectSummary]:
        # A prefix range (subject >= prefix AND subject < prefix + U+10FFFF) uses the
        # (tenant, subject, ...) indexes of both tables, where LIKE would not.
        low = max(prefix, after or "")
        high = prefix + "\U0010ffff"
        past = " WHERE subject > ?" if after is not None else " WHERE 1 = 1"
        hide, hidden = visible_sql("subject", namespaces)
        rows = self.conn.execute(
            "SELECT subject, sum(f), sum(e), max(at) FROM ("
            " SELECT subject, 1 AS f, 0 AS e, updated_at AS at FROM families"
            "  WHERE tenant = ? AND subject >= ? AND subject < ?"
            " UNION ALL"
            " SELECT subject, 0, 1, ingested_at FROM events"
            "  WHERE tenant = ? AND subject >= ? AND subject < ?"
            f") AS found{past}{hide} GROUP BY subject ORDER BY subject LIMIT ?",
            (
                *(tenant, low, high, tenant, low, high),
                *(() if after is None else (after,)),
                *hidden,
                limit,
            ),
        ).fetchall()
        return [
            SubjectSummary(
                subject=row[0],
                families=int(row[1]),
                events=int(row[2]),
                last_at=None if row[3] is None else parse_time(row[3]),
            )
            for row in rows
        ]

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

    def revoked_sources_of(
        self, tenant: str, keys: Iterable[tuple[str, str]]
    ) -> Mapping[tuple[str, str], frozenset[str]]:
        wanted = list(dict.fromkeys(keys))
        found: dict[tuple[str, str], set[str]] = {key: set() for key in wanted}
        for start in range(0, len(wanted), 200):
            chunk = wanted[start : start + 200]
            either = " OR ".join(["(subject = ? AND family = ?)"] * len(chunk))
            rows = self.conn.execute(
                f"SELECT subject, family, event_id FROM revoked_sources"
                f" WHERE tenant = ? AND ({either})",
                (tenant, *(value for key in chunk for value in key)),
            )
            for subject, family, event_id in rows:
                found[(subject, family)].add(event_id)
        return {key: frozenset(events) for key, events in found.items()}

    def add_revocation(
        self, tenant: str, subject: str, family: str, *, generation: int, at: datetime
    ) -> int:
        number = self.revocation_mark(tenant) + 1
        self._write(
            "add_revocation",
            "INSERT INTO revocations VALUES (?, ?, ?, ?, ?, ?)",
            (tenant, number, subject, family, generation, format_time(at)),
        )
        return number

    def revocation_mark(self, tenant: str) -> int:
        row = self._one("SELECT coalesce(max(n), 0) FROM revocations WHERE tenant = ?", (tenant,))
        return int(row[0])

    def revoked_after(self, tenant: str, subject: str, family: str, mark: int) -> bool:
        row = self._one(
            "SELECT 1 FROM revocations WHERE tenant = ? AND subject = ? AND family = ? AND n > ?",
            (tenant, subject, family, mark),
        )
        return row is not None

    def forget_event(self, tenant: str, event_id: str, *, at: datetime, reason: str) -> None:
        self._write(
            "forget_event",
            "INSERT OR IGNORE INTO forgotten_events VALUES (?, ?, ?, ?)",
            (tenant, event_id, format_time(at), reason),
        )

    def is_forgotten(self, tenant: str, event_id: str) -> bool:
        row = self._one(
            "SELECT 1 FROM forgotten_events WHERE tenant = ? AND event_id = ?", (tenant, event_id)
        )
        return row is not None

    def unforget_event(self, tenant: str, event_id: str) -> None:
        self._write(
            "unforget_event",
            "DELETE FROM forgotten_events WHERE tenant = ? AND event_id = ?",
            (tenant, event_id),
        )

    # -- recorded changes ---------------------------------------------------------------

    def put_change(self, change: Change, *, causes: Sequence[str] = ()) -> None:
        self._write(
            "put_change",
            "INSERT INTO change_sets VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (tenant, change_id) DO UPDATE SET body = excluded.body",
            change.row(),
        )
        for cause in causes:
            self._write(
                "put_change",
                "INSERT OR IGNORE INTO change_causes VALUES (?, ?, ?)",
                (change.tenant, cause, change.change_id),
            )

    _CHANGE_COLUMNS = "tenant, change_id, kind, at, reason, body, undone_by"

    def get_change(self, tenant: str, change_id: str) -> Change | None:
        row = self._one(
            f"SELECT {self._CHANGE_COLUMNS} FROM change_sets WHERE tenant = ? AND change_id = ?",
            (tenant, change_id),
        )
        return None if row is None else Change.from_row(*row)

    def change_of_cause(self, tenant: str, cause: str) -> str | None:
        row = self._one(
            "SELECT change_id FROM change_causes WHERE tenant = ? AND cause = ?", (tenant, cause)
        )
        return None if row is None else str(row[0])

    def mark_undone(self, tenant: str, change_id: str, *, by: str) -> None:
        self._write(
            "mark_undone",
            "UPDATE change_sets SET undone_by = ? WHERE tenant = ? AND change_id = ?",
            (by, tenant, change_id),
        )

    def changes(self, tenant: str, *, limit: int) -> Sequence[Change]:
        rows = self.conn.execute(
            f"SELECT {self._CHANGE_COLUMNS} FROM change_sets WHERE tenant = ?"
            " ORDER BY at DESC, change_id LIMIT ?",
            (tenant, limit),
        )
        return [Change.from_row(*row) for row in rows]

    def records_closed_by(self, tenant: str, cause: str) -> Sequence[MemoryRecord]:
        rows = self.conn.execute(
            f"SELECT {layout.RECORD_COLUMNS} FROM records WHERE tenant = ? AND closed_by = ?"
            " ORDER BY subject, family, valid_from, memory_id",
            (tenant, cause),
        )
        return [layout.record(row) for row in rows]

    def lift_revoked_sources(
        self, tenant: str, subject: str, family: str, *, generation: int
    ) -> Sequence[str]:
        rows = self.conn.execute(
            "SELECT event_id FROM revoked_sources"
            " WHERE tenant = ? AND subject = ? AND family = ? AND generation = ?",
            (tenant, subject, family, generation),
        )
        lifted = sorted(str(row[0]) for row in rows)
        self._write(
            "lift_revoked_sources",
            "DELETE FROM revoked_sources"
            " WHERE tenant = ? AND subject = ? AND family = ? AND generation = ?",
            (tenant, subject, family, generation),
        )
        return lifted

    def revocation_generations(self, tenant: str, subject: str, family: str) -> Sequence[int]:
        rows = self.conn.execute(
            "SELECT generation FROM revocations WHERE tenant = ? AND subject = ? AND family = ?"
            " ORDER BY generation",
            (tenant, subject, family),
        )
        return [int(row[0]) for row in rows]

    def extractor_records(
        self, tenant: str, name: str, version: str, *, since: datetime | None
    ) -> Sequence[MemoryRecord]:
        # the extractor column is JSON text written by one codec: the few distinct values
        # are read and matched here, then the records selected by exact text
        texts = [
            str(row[0])
            for row in self.conn.execute(
                "SELECT DISTINCT extractor FROM records WHERE tenant = ?", (tenant,)
            )
        ]
        found: list[MemoryRecord] = []
        for text in texts:
            info = codec.extractor_from_json(text)
            if (info.name, info.version) != (name, version):
                continue
            sql = f"SELECT {layout.RECORD_COLUMNS} FROM records WHERE tenant = ? AND extractor = ?"
            params: list[object] = [tenant, text]
            if since is not None:
                sql += " AND recorded_at >= ?"
                params.append(format_time(since))
            found.extend(layout.record(row) for row in self.conn.execute(sql, params))
        return sorted(found, key=lambda r: (r.recorded_at, r.memory_id))

    # -- erasure ------------------------------------------------------------------------

    def record_accesses(self, tenant: str, accesses: Mapping[str, tuple[datetime, int]]) -> int:
        written = 0
        for memory_id, (at, count) in sorted(accesses.items()):
            cursor = self.conn.execute(  # an erased memory gains no row back
                "INSERT INTO record_access SELECT ?, ?, ?, ? WHERE EXISTS"
                " (SELECT 1 FROM records WHERE tenant = ? AND memory_id = ?)"
                " ON CONFLICT (tenant, memory_id) DO UPDATE SET"
                " last_at = CASE WHEN excluded.last_at > record_access.last_at"
                " THEN excluded.last_at ELSE record_access.last_at END,"
                " accesses = record_access.accesses + excluded.accesses",
                (tenant, memory_id, format_time(at), count, tenant, memory_id),
            )
            written += max(0, cursor.rowcount)
        return written

    def last_touched(
        self, tenant: str, memory_ids: Sequence[str], *, before: datetime
    ) -> Mapping[str, datetime]:
        touched: dict[str, datetime] = {}
        stamp = format_time(before)
        for chunk, among in _chunks(memory_ids):
            rows = [
                *self.conn.execute(
                    "SELECT memory_id, last_at FROM record_access"
                    f" WHERE tenant = ? AND memory_id IN {among} AND last_at <= ?",
                    (tenant, *chunk, stamp),
                ),
                *self.conn.execute(
                    "SELECT m.memory_id, max(e.occurred_at) FROM mentions m JOIN events e"
                    " ON e.tenant = m.tenant AND e.event_id = m.event_id"
                    f" WHERE m.tenant = ? AND m.memory_id IN {among} AND e.occurred_at <= ?"
                    " GROUP BY m.memory_id",
                    (tenant, *chunk, stamp),
                ),
            ]
            for memory_id, at in rows:
                when = parse_time(at)
                if memory_id not in touched or touched[memory_id] < when:
                    touched[str(memory_id)] = when
        return touched

    def access_counts(self, tenant: str, memory_ids: Sequence[str]) -> Mapping[str, int]:
        counts: dict[str, int] = {}
        for chunk, among in _chunks(memory_ids):
            rows = self.conn.execute(
                "SELECT memory_id, accesses FROM record_access"
                f" WHERE tenant = ? AND memory_id IN {among}",
                (tenant, *chunk),
            )
            counts.update((str(memory_id), int(n)) for memory_id, n in rows)
        return counts

    def erasable_events(self, tenant: str, subject: str) -> Sequence[str]:
        rows = self.conn.execute(
            "SELECT event_id FROM events WHERE tenant = ? AND subject = ?"
            " UNION SELECT source_event_id FROM records WHERE tenant = ? AND subject = ?",
            (tenant, subject, tenant, subject),
        )
        return sorted(str(row[0]) for row in rows)

    def erase_events(
        self, tenant: str, event_ids: Sequence[str], *, erasure_id: str, at: datetime
    ) -> Mapping[str, int]:
        counts = dict.fromkeys(("events", "records", "mentions", "jobs", "reviews"), 0)
        stamp = format_time(at)
        for chunk, among in _chunks(event_ids):
            found = self.conn.execute(
                "SELECT event_id, content_hash FROM events"
                f" WHERE tenant = ? AND event_id IN {among}",
                (tenant, *chunk),
            ).fetchall()
            for event_id, content_hash in found:
                self._write(
                    "erase_events",
                    "INSERT OR IGNORE INTO tombstones VALUES (?, ?, ?, ?, ?)",
                    (tenant, event_id, content_hash, erasure_id, stamp),
                )
            ids = [
                str(row[0])
                for row in self.conn.execute(
                    "SELECT memory_id FROM records INDEXED BY records_source"
                    f" WHERE tenant = ? AND source_event_id IN {among}",
                    (tenant, *chunk),
                )
            ]
            for kind, n in self.erase_records(tenant, ids, erasure_id=erasure_id, at=at).items():
                counts[kind] += n
            counts["mentions"] += self._delete(
                f"DELETE FROM mentions WHERE tenant = ? AND event_id IN {among}", (tenant, *chunk)
            )
            counts["jobs"] += self._delete(
                f"DELETE FROM jobs WHERE tenant = ? AND event_id IN {among}", (tenant, *chunk)
            )
            counts["reviews"] += self._delete(
                f"DELETE FROM review_queue WHERE tenant = ? AND event_id IN {among}",
                (tenant, *chunk),
            )
            self._delete(
                f"DELETE FROM event_outcomes WHERE tenant = ? AND event_id IN {among}",
                (tenant, *chunk),
            )
            counts["events"] += self._delete(
                f"DELETE FROM events WHERE tenant = ? AND event_id IN {among}", (tenant, *chunk)
            )
        return counts

    def _delete(self, sql: str, params: Sequence[Any]) -> int:
        if self._failpoint is not None:
            self._failpoint("erase_events")
        return int(self.conn.execute(sql, params).rowcount)

    def retention(self, tenant: str) -> Mapping[str, int]:
        rows = self.conn.execute("SELECT kind, days FROM retention WHERE tenant = ?", (tenant,))
        return {str(kind): int(days) for kind, days in rows}

    def set_retention(self, tenant: str, kind: str, days: int | None, *, at: datetime) -> int:
        if days is None:
            self._write(
                "set_retention",
                "DELETE FROM retention WHERE tenant = ? AND kind = ?",
                (tenant, kind),
            )
            return 0
        self._write(
            "set_retention",
            "INSERT INTO retention VALUES (?, ?, ?, ?)"
            " ON CONFLICT (tenant, kind) DO UPDATE SET days = excluded.days,"
            " set_at = excluded.set_at",
            (tenant, kind, days, format_time(at)),
        )
        changed = 0
        rows = self.conn.execute(
            f"SELECT {layout.RECORD_COLUMNS} FROM records WHERE tenant = ? AND proposed_kind = ?",
            (tenant, kind),
        ).fetchall()
        for row in rows:
            record = layout.record(row)
            due = record.recorded_at + timedelta(days=days)
            if record.expires_at is not None and record.expires_at <= due:
                continue
            self._write(
                "set_retention",
                "UPDATE records SET expires_at = ? WHERE tenant = ? AND memory_id = ?",
                (format_time(due), tenant, record.memory_id),
            )
            changed += 1
        return changed

    def expired_records(self, tenant: str, *, now: datetime, limit: int) -> Sequence[MemoryRecord]:
        rows = self.conn.execute(
            f"SELECT {layout.RECORD_COLUMNS} FROM records WHERE tenant = ?"
            " AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, memory_id"
            " LIMIT ?",
            (tenant, format_time(now), limit),
        )
        return [layout.record(row) for row in rows]

    def expiring_tenants(self, *, now: datetime) -> Sequence[str]:
        rows = self.conn.execute(
            "SELECT DISTINCT tenant FROM records WHERE expires_at IS NOT NULL"
            " AND expires_at <= ? ORDER BY tenant",
            (format_time(now),),
        )
        return [str(row[0]) for row in rows]

    def erase_records(
        self,
        tenant: str,
        memory_ids: Sequence[str],
        *,
        erasure_id: str,
        at: datetime,
        keep_summaries: bool = False,
    ) -> Mapping[str, int]:
        counts = {"records": 0, "mentions": 0}
        wanted = self._with_summaries(tenant, memory_ids, keep=keep_summaries, at=at)
        for chunk, among in _chunks(wanted):
            for record in self.get_records(tenant, chunk).values():
                self.add_history(
                    self._history(record, "erased", at=at, cause=f"erasure {erasure_id}")
                )
                if record.superseded_at is None:  # the index holds it: take it out
                    self.add_outbox(record, op="delete", at=at)
            counts["mentions"] += self._delete(
                f"DELETE FROM mentions WHERE tenant = ? AND memory_id IN {among}", (tenant, *chunk)
            )
            self._delete(
                f"DELETE FROM record_access WHERE tenant = ? AND memory_id IN {among}",
                (tenant, *chunk),
            )
            counts["records"] += self._delete(
                f"DELETE FROM records WHERE tenant = ? AND memory_id IN {among}", (tenant, *chunk)
            )
        return counts

    def _with_summaries(
        self, tenant: str, memory_ids: Sequence[str], *, keep: bool, at: datetime
    ) -> set[str]:
        """``memory_ids`` with every summary that covers one of them, open or dissolved
        (its words are theirs), unless ``keep`` (expiry: a summary outlives the episodes
        it covers, under its own expiry). The compactions of what goes are deleted; the
        open episodes of an open summary that goes return to the index."""
        wanted = set(memory_ids)
        covering = self._compaction_rows(tenant, sorted(wanted))
        if not keep:
            wanted.update(summary for _, summary, _ in covering)
        for memory_id, summary_id, _ in covering:
            self._write(
                "erase_events",
                "DELETE FROM compactions WHERE tenant = ? AND summary_id = ? AND memory_id = ?",
                (tenant, summary_id, memory_id),
            )
        going = self._compaction_rows(tenant, sorted(wanted), summaries=True)
        back = sorted({m for m, _, held in going if held and m not in wanted})
        for summary_id in sorted({summary for _, summary, _ in going}):
            self._write(
                "erase_events",
                "DELETE FROM compactions WHERE tenant = ? AND summary_id = ?",
                (tenant, summary_id),
            )
        for record in self.get_records(tenant, back).values():
            if record.superseded_at is None:
                self.add_outbox(record, op="upsert", at=at)
        return wanted

    def live_event_records(self, tenant: str, event_ids: Sequence[str]) -> Sequence[str]:
        found: set[str] = set()
        for chunk, among in _chunks(event_ids):
            rows = self.conn.execute(
                "SELECT DISTINCT source_event_id FROM records INDEXED BY records_source"
                f" WHERE tenant = ? AND source_event_id IN {among}",
                (tenant, *chunk),
            )
            found.update(str(row[0]) for row in rows)
        return sorted(found)

    def tombstone(self, tenant: str, event_id: str) -> str | None:
        row = self._one(
            "SELECT erasure_id FROM tombstones WHERE tenant = ? AND event_id = ?",
            (tenant, event_id),
        )
        return None if row is None else str(row[0])

    def scrub_traces(self, tenant: str, subject: str, *, erasure_id: str) -> int:
        rows = self.conn.execute(
            "SELECT trace_id, body FROM traces WHERE tenant = ? AND subject = ?",
            (tenant, subject),
        ).fetchall()
        for trace_id, body in rows:
            self._write(
                "scrub_traces",
                "UPDATE traces SET body = ? WHERE tenant = ? AND trace_id = ?",
                (_scrubbed(body, erasure_id), tenant, trace_id),
            )
        return len(rows)

    def put_erasure(self, tenant: str, erasure_id: str, *, at: datetime, body: str) -> None:
        self._write(
            "put_erasure",
            "INSERT INTO erasures VALUES (?, ?, ?, ?)"
            " ON CONFLICT (tenant, erasure_id) DO UPDATE SET body = excluded.body",
            (tenant, erasure_id, format_time(at), body),
        )

    def erasure_bodies(self, tenant: str) -> Sequence[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT erasure_id, body FROM erasures WHERE tenant = ?"
            " ORDER BY requested_at, erasure_id",
            (tenant,),
        )
        return [(str(e), str(b)) for e, b in rows]

    # -- context traces ---------------------------------------------------------------

    def put_trace(self, trace: StoredTrace) -> None:
        try:
            self._write(
                "put_trace",
                "INSERT INTO traces VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    trace.tenant,
                    trace.trace_id,
                    trace.subject,
                    format_time(trace.created_at),
                    trace.rendered_sha256,
                    trace.body,
                    held_text(trace.namespaces),
                ),
            )
        except self._integrity_errors as exc:
            raise ConflictError(
                f"trace {trace.trace_id!r} already exists for tenant {trace.tenant!r}"
            ) from exc

    def get_trace(
        self, tenant: str, trace_id: str, *, namespaces: frozenset[str] | None = None
    ) -> StoredTrace | None:
        hide, hidden = _trace_hide(namespaces)
        row = self._one(
            "SELECT subject, created_at, rendered_sha256, body FROM traces"
            f" WHERE tenant = ? AND trace_id = ?{hide}",
            (tenant, trace_id, *hidden),
        )
        return None if row is None else _trace(tenant, trace_id, row)

    def put_decision(self, decision: StoredDecision) -> None:
        self._write(
            "put_decision",
            "INSERT INTO gate_decisions VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                decision.tenant,
                decision.decision_id,
                decision.trace_id,
                format_time(decision.decided_at),
                decision.action,
                int(decision.allowed),
                decision.body,
            ),
        )

    def decisions(self, tenant: str, *, trace_id: str) -> Sequence[StoredDecision]:
        rows = self.conn.execute(
            "SELECT decision_id, decided_at, action, allowed, body FROM gate_decisions"
            f" WHERE tenant = ? AND trace_id = ? ORDER BY decided_at, {self._arrival}",
            (tenant, trace_id),
        )
        return [
            StoredDecision(
                tenant=tenant,
                decision_id=decision_id,
                trace_id=trace_id,
                decided_at=parse_time(decided_at),
                action=action,
                allowed=bool(allowed),
                body=body,
            )
            for decision_id, decided_at, action, allowed, body in rows
        ]

    def traces(
        self,
        tenant: str,
        *,
        subject: str | None = None,
        limit: int = 50,
        namespaces: frozenset[str] | None = None,
    ) -> Sequence[StoredTrace]:
        hide, hidden = _trace_hide(namespaces)
        sql = "SELECT subject, created_at, rendered_sha256, body, trace_id FROM traces"
        sql += " WHERE tenant = ?" + (" AND subject = ?" if subject is not None else "") + hide
        sql += " ORDER BY created_at DESC, trace_id DESC LIMIT ?"
        named = () if subject is None else (subject,)
        params = (tenant, *named, *hidden, limit)
        return [_trace(tenant, row[4], row[:4]) for row in self.conn.execute(sql, params)]

    # -- review queue and jobs --------------------------------------------------------

    def add_job(self, job: Job) -> None:
        self._write(
            "add_job",
            "INSERT OR IGNORE INTO jobs (tenant, job_id, event_id, generations, status,"
            " attempts, last_error, created_at, revocation_mark)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                job.tenant,
                job.job_id,
                job.event_id,
                codec.dumps(dict(job.generations)),
                job.status,
                job.attempts,
                job.last_error,
                format_time(job.created_at),
                job.revocation_mark,
            ),
        )

    _JOB_COLUMNS = (
        "tenant, job_id, event_id, generations, status, attempts, last_error, created_at,"
        " next_attempt_at, lease_until, revocation_mark"
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
            revocation_mark,
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
            next_attempt_at=layout.pt(next_attempt_at),
            lease_until=layout.pt(lease_until),
            revocation_mark=revocation_mark,
        )

    def claim_jobs(
        self, *, tenant: str | None, now: datetime, lease_until: datetime, owner: str, limit: int
    ) -> Sequence[Job]:
        stamp = format_time(now)
        # Fair across tenants: each tenant's due jobs in order, taken a turn at a time
        # (the first of every tenant, then the second ...), so a tenant that floods the
        # queue cannot starve the others. The tenants with queued jobs are found by
        # seeking the index (status, tenant, created_at, job_id) from one tenant to the
        # next, and each gives at most ``limit`` due jobs read in the index's order: a
        # claim reads what it may take, not the whole queue.
        if tenant is None:
            tenants = (
                "WITH RECURSIVE tenants(tenant) AS ("
                " SELECT min(tenant) FROM jobs INDEXED BY jobs_fair WHERE status = 'queued'"
                " UNION ALL SELECT (SELECT min(tenant) FROM jobs INDEXED BY jobs_fair"
                " WHERE status = 'queued' AND tenant > tenants.tenant)"
                " FROM tenants WHERE tenants.tenant IS NOT NULL),"
            )
            params: list[Any] = []
        else:
            tenants = "WITH tenants(tenant) AS (SELECT ?),"
            params = [tenant]
        due = (
            " due AS (SELECT j.rowid AS rid, j.created_at, j.job_id, row_number() OVER"
            " (PARTITION BY j.tenant ORDER BY j.created_at, j.job_id) AS turn"
            " FROM tenants JOIN jobs AS j ON j.rowid IN ("
            "  SELECT rowid FROM jobs INDEXED BY jobs_fair"
            "  WHERE status = 'queued' AND tenant = tenants.tenant"
            "  AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
            "  AND (lease_until IS NULL OR lease_until <= ?)"
            "  ORDER BY created_at, job_id LIMIT ?)"
            " WHERE tenants.tenant IS NOT NULL),"
        )
        params += [stamp, stamp, limit, limit, format_time(lease_until), owner]
        if self._failpoint is not None:
            self._failpoint("claim_jobs")
        rows = self.conn.execute(
            f"{tenants}{due} picked AS (SELECT rid FROM due ORDER BY turn, created_at, job_id"
            " LIMIT ?)"
            " UPDATE jobs SET lease_until = ?, lease_owner = ?, attempts = attempts + 1"
            f" WHERE rowid IN (SELECT rid FROM picked) RETURNING {self._JOB_COLUMNS}",
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

    def quotas(self, tenant: str) -> str | None:
        row = self._one("SELECT body FROM quotas WHERE tenant = ?", (tenant,))
        return None if row is None else str(row[0])

    def set_quotas(self, tenant: str, body: str | None, *, at: datetime) -> None:
        if body is None:
            self._write("set_quotas", "DELETE FROM quotas WHERE tenant = ?", (tenant,))
            return
        self._write(
            "set_quotas",
            "INSERT INTO quotas VALUES (?, ?, ?) ON CONFLICT (tenant) DO UPDATE"
            " SET body = excluded.body, set_at = excluded.set_at",
            (tenant, body, format_time(at)),
        )

    def jobs_queued_since(self, tenant: str, since: datetime) -> int:
        row = self._one(
            "SELECT count(*) FROM jobs INDEXED BY jobs_recent WHERE tenant = ? AND created_at >= ?",
            (tenant, format_time(since)),
        )
        return int(row[0])

    def open_records_count(self, tenant: str) -> int:
        row = self._one(
            "SELECT count(*) FROM records WHERE tenant = ? AND superseded_at IS NULL", (tenant,)
        )
        return int(row[0])

    def queue_state(self, tenant: str | None) -> tuple[int, datetime | None]:
        only, params = ("", ()) if tenant is None else (" AND tenant = ?", (tenant,))
        count, oldest = self._one(
            f"SELECT count(*), min(created_at) FROM jobs WHERE status = 'queued'{only}", params
        )
        return int(count), None if oldest is None else parse_time(oldest)

    def job_lags(self, tenant: str | None, *, since: datetime) -> Sequence[float]:
        only, params = ("", ()) if tenant is None else (" AND tenant = ?", (tenant,))
        rows = self.conn.execute(
            "SELECT created_at, finished_at FROM jobs INDEXED BY jobs_finished"
            f" WHERE status = 'done' AND finished_at >= ?{only}",
            (format_time(since), *params),
        )
        return [(parse_time(done) - parse_time(queued)).total_seconds() for queued, done in rows]

    def jobs(self, tenant: str, *, open_only: bool) -> Sequence[Job]:
        sql = f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE tenant = ?"
        if open_only:
            sql += " AND status != 'done'"
        sql += " ORDER BY created_at, job_id"
        return [self._job(row) for row in self.conn.execute(sql, (tenant,)).fetchall()]


def _trace_hide(namespaces: frozenset[str] | None) -> tuple[str, tuple[object, ...]]:
    """Traces the reader may see: of a visible subject, holding only what it may read."""
    subject, of_subject = visible_sql("subject", namespaces)
    held, of_held = held_sql("namespaces", namespaces)
    return subject + held, of_subject + of_held


def _trace(tenant: str, trace_id: str, row: Sequence[Any]) -> StoredTrace:
    subject, created_at, rendered_sha256, body = row
    return StoredTrace(
        tenant=tenant,
        trace_id=trace_id,
        subject=subject,
        created_at=parse_time(created_at),
        rendered_sha256=rendered_sha256,
        body=body,
    )


def _scrubbed(body: str, erasure_id: str) -> str:
    """A trace body without what was said: no request, no fields of the items that are
    not memories (memory ids, revisions and passage offsets stay, for the audit)."""
    data = json.loads(body)
    data["request"] = ""
    data["erased"] = erasure_id
    for item in data.get("items", []):
        if "fields" in item:
            item["fields"] = {}
    return json.dumps(data, separators=(",", ":"))


def outbox_row(record: MemoryRecord, *, op: OutboxOp, at: datetime) -> tuple[Any, ...]:
    """The values of :attr:`SqlUnit._OUTBOX_INSERT` for a record appearing or leaving."""
    return (
        record.tenant,
        record.memory_id,
        record.subject,
        record.family,
        record.revision,
        record.generation,
        op,
        format_time(at),
    )
