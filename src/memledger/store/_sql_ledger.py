"""The ledger rows of a SQL unit of work: what was said and what became of it.

:class:`LedgerRows` holds the source events (``get_event``, ``append_event``,
``event_hash``) and their outcomes (``get_outcome``, ``put_outcome``); the family
slots with their revision and position (``get_family``, ``lock_family``,
``put_family``, ``families``); the history of every record a family held
(``add_history``, ``history``, ``family_events``); and the subjects the events and
families name (``count_events``, ``subject_events``, ``subjects``). See
:class:`memledger.ports.UnitOfWork` for what each method promises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memledger.domain.records import (
    Actor,
    HistoryAction,
    HistoryEntry,
    MemoryRecord,
    Receipt,
    SourceEvent,
    format_time,
    parse_time,
)
from memledger.ports import FamilySlot, StoredEvent, SubjectSummary
from memledger.store import _rows as layout
from memledger.store import codec
from memledger.store._namespaces import visible_sql
from memledger.store._sql_base import SqlBase


class LedgerRows(SqlBase):
    """Events, outcomes, family slots, history and subjects, on the unit's connection."""

    # -- events and outcomes --------------------------------------------------------

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
        return None if row is None else _slot(tenant, subject, family, row)

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
        return [_slot(tenant, subject, row[0], row[1:]) for row in rows]

    def family_events(self, tenant: str, subject: str, family: str) -> Sequence[str]:
        rows = self.conn.execute(
            "SELECT cause FROM history WHERE tenant = ? AND subject = ? AND family = ?"
            " AND action IN ('recorded', 'closed', 'mentioned') GROUP BY cause ORDER BY min(seq)",
            (tenant, subject, family),
        )
        return [row[0] for row in rows]

    # -- history --------------------------------------------------------------------

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

    # -- subjects -------------------------------------------------------------------

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


def _slot(tenant: str, subject: str, family: str, row: Sequence[Any]) -> FamilySlot:
    """A family slot from its ``revision, generation, position, updated_at`` columns."""
    revision, generation, position, updated_at = row
    return FamilySlot(
        tenant=tenant,
        subject=subject,
        family=family,
        revision=revision,
        generation=generation,
        position=codec.position_from_json(position),
        updated_at=layout.pt(updated_at),
    )
