"""The record rows of a SQL unit of work: the memories, and what follows them.

:class:`RecordRows` inserts, closes and reads records (``insert_record``,
``close_record``, ``get_record``, ``get_records``, ``event_records``,
``claims_of_events``, ``family_records``) and the windows of claims alone
(``claim_windows``); keeps the compactions of a session's episodes into a summary,
which dissolve when one of them closes (``add_compaction``, ``covered_by``,
``compacted``); writes and reads the outbox that feeds the index
(``add_outbox``, ``outbox_after``, ``outbox_pending`` ... and :func:`outbox_row`,
the values of one outbox row); and holds the mentions of a record by later events
(``add_mention``, ``mention_events``, ``set_mentions``) and the tenant's counters
(``bump_counter``, ``counters``). See :class:`memledger.ports.UnitOfWork` for what
each method promises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memledger.domain.records import MemoryRecord, RecordStatus, format_time, parse_time
from memledger.ports import ClaimWindow, OutboxEntry, OutboxOp
from memledger.store import _rows as layout
from memledger.store._namespaces import visible_sql
from memledger.store._sql_base import _chunks
from memledger.store._sql_ledger import LedgerRows


class RecordRows(LedgerRows):
    """Records, compactions, the outbox, mentions and counters, on the unit's connection
    (closing a record writes its history: built on :class:`LedgerRows`)."""

    # -- records --------------------------------------------------------------------

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
        for chunk, among in _chunks(memory_ids, size=500, ordered=True):
            sql = (
                f"SELECT {layout.RECORD_COLUMNS} FROM records"
                f" WHERE tenant = ? AND memory_id IN {among}"
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
        for chunk, among in _chunks(event_ids, size=500, ordered=True):
            sql = (
                f"SELECT {layout.RECORD_COLUMNS} FROM records INDEXED BY records_source"
                f" WHERE tenant = ? AND source_event_id IN {among}"
                " AND kind != 'episode' AND proposed_kind != 'episode'"
            )
            found.extend(layout.record(row) for row in self.conn.execute(sql, (tenant, *chunk)))
        return found

    def claim_windows(self, tenant: str, event_ids: Sequence[str]) -> Sequence[ClaimWindow]:
        found: list[ClaimWindow] = []
        pt = layout.pt
        for chunk, among in _chunks(event_ids, size=500, ordered=True):
            sql = (
                "SELECT source_event_id, subject, family, scope, superseded_at, valid_from,"
                " valid_until, expires_at FROM records INDEXED BY records_source"
                f" WHERE tenant = ? AND source_event_id IN {among}"
                " AND kind NOT IN ('episode', 'observation') AND proposed_kind != 'episode'"
                " AND status NOT IN ('historical', 'revoked')"
            )
            found.extend(
                ClaimWindow(e, s, f, scope, pt(closed), parse_time(start), pt(until), pt(expiry))
                for e, s, f, scope, closed, start, until, expiry in self.conn.execute(
                    sql, (tenant, *chunk)
                )
            )
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

    # -- outbox ---------------------------------------------------------------------

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

    # -- mentions and counters ------------------------------------------------------

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
        for chunk, among in _chunks(memory_ids, size=500, ordered=True):
            found.update(
                row[0]
                for row in self.conn.execute(
                    f"SELECT event_id FROM mentions WHERE tenant = ? AND memory_id IN {among}",
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
