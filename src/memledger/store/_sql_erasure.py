"""The erasure and retention rows of a SQL unit of work: what is read, what expires
and what is erased for good.

:class:`ErasureRows` counts reads of records (``record_accesses``, ``last_touched``,
``access_counts``); erases a subject's events and everything derived from them,
leaving tombstones (``erasable_events``, ``erase_events``, ``erase_records``,
``live_event_records``, ``tombstone``, ``put_erasure``, ``erasure_bodies``); and
keeps each kind's retention and the expiry it sets (``retention``,
``set_retention``, ``expired_records``, ``expiring_tenants``). A trace's body is
scrubbed by :class:`~memledger.store._sql_traces.TraceRows`. See
:class:`memledger.ports.UnitOfWork` for what each method promises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from memledger.domain.records import MemoryRecord, format_time, parse_time
from memledger.store import _rows as layout
from memledger.store._sql_base import _chunks
from memledger.store._sql_records import RecordRows

_OF_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("mentions", "mentions"),
    ("jobs", "jobs"),
    ("review_queue", "reviews"),
    ("event_outcomes", None),
    ("events", "events"),
)
"""What an erased event takes with it, in the order deleted, each table with the name
its rows are counted under (``None``: not counted)."""
_OF_RECORDS: tuple[tuple[str, str | None], ...] = (
    ("mentions", "mentions"),
    ("record_access", None),
    ("records", "records"),
)
"""What an erased record takes with it, as :data:`_OF_EVENTS` says."""


class ErasureRows(RecordRows):
    """Accesses, erasures, tombstones and retention, on the unit's connection (erasing
    takes records out of the index and writes their history: built on
    :class:`~memledger.store._sql_records.RecordRows`)."""

    # -- accesses -------------------------------------------------------------------

    def record_accesses(self, tenant: str, accesses: Mapping[str, tuple[datetime, int]]) -> int:
        written = 0
        for chunk, _ in _chunks(accesses):  # one statement a chunk: one round trip
            rows = [(m, format_time(accesses[m][0]), accesses[m][1]) for m in chunk]
            cursor = self.conn.execute(
                # an erased memory gains no row back; rows in memory id order, the order
                # concurrent flushes lock them in
                "INSERT INTO record_access (tenant, memory_id, last_at, accesses)"
                " SELECT ?, v.column1, v.column2, v.column3"
                f" FROM (VALUES {', '.join('(?, ?, ?)' for _ in rows)}) AS v"
                " WHERE EXISTS (SELECT 1 FROM records"
                " WHERE records.tenant = ? AND records.memory_id = v.column1)"
                " ORDER BY v.column1"
                " ON CONFLICT (tenant, memory_id) DO UPDATE SET"
                " last_at = CASE WHEN excluded.last_at > record_access.last_at"
                " THEN excluded.last_at ELSE record_access.last_at END,"
                " accesses = record_access.accesses + excluded.accesses",
                (tenant, *(value for row in rows for value in row), tenant),
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

    # -- erasure --------------------------------------------------------------------

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
            self._delete(_OF_EVENTS, tenant, chunk=chunk, among=among, by="event_id", counts=counts)
        return counts

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
            self._delete(
                _OF_RECORDS, tenant, chunk=chunk, among=among, by="memory_id", counts=counts
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

    def _delete(
        self,
        tables: Sequence[tuple[str, str | None]],
        tenant: str,
        *,
        chunk: Sequence[str],
        among: str,
        by: str,
        counts: dict[str, int],
    ) -> None:
        """Delete the tenant's rows of each of ``tables`` in turn whose ``by`` column is
        in ``chunk`` (``among``: its ``(?, ...)``), adding how many went to ``counts``
        under the name each table counts as (``None``: not counted)."""
        for table, counted in tables:
            if self._failpoint is not None:
                self._failpoint("erase_events")
            gone = self.conn.execute(
                f"DELETE FROM {table} WHERE tenant = ? AND {by} IN {among}", (tenant, *chunk)
            ).rowcount
            if counted is not None:
                counts[counted] += int(gone)
            if table == "records":  # no decoded copy of an erased record stays in memory
                layout.forget()

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

    # -- retention ------------------------------------------------------------------

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
