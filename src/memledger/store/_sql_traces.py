"""The trace and decision rows of a SQL unit of work: what a context packet was built
from, and what the gate decided on it.

:class:`TraceRows` writes, reads and lists context traces (``put_trace``,
``get_trace``, ``traces``, hidden by namespace as :func:`_trace_hide` says), scrubs
what was said from a subject's traces on erasure (``scrub_traces``, the body as
:func:`_scrubbed` leaves it) and keeps the gate's decisions on a trace
(``put_decision``, ``decisions``). See :class:`memledger.ports.UnitOfWork` for what
each method promises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memledger.domain.records import format_time, parse_time
from memledger.errors import ConflictError
from memledger.ports import StoredDecision, StoredTrace
from memledger.store._namespaces import held_sql, held_text, visible_sql
from memledger.store._sql_base import SqlBase


class TraceRows(SqlBase):
    """Context traces and gate decisions, on the unit's connection."""

    # -- context traces -------------------------------------------------------------

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

    # -- gate decisions -------------------------------------------------------------

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
