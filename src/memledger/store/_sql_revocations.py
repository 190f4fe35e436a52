"""The revocation and change rows of a SQL unit of work: what was taken back, and
how to put it back.

:class:`RevocationRows` holds the sources revoked from a family and the tenant's
numbered revocation log (``add_revoked_source``, ``revoked_sources_of``,
``add_revocation``, ``revocation_mark``, ``revoked_after``); the events forgotten
(``forget_event``, ``is_forgotten``, ``unforget_event``); the recorded changes and
what undoing one needs (``put_change``, ``get_change``, ``mark_undone``,
``records_closed_by``, ``lift_revoked_sources``); and the records one extractor
wrote (``extractor_records``). See :class:`memledger.ports.UnitOfWork` for what each
method promises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from memledger.domain.changes import Change
from memledger.domain.records import MemoryRecord, format_time
from memledger.store import _rows as layout
from memledger.store import codec
from memledger.store._sql_base import SqlBase


class RevocationRows(SqlBase):
    """Revoked sources, the revocation log, forgotten events and recorded changes, on
    the unit's connection."""

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
