"""The job and quota rows of a SQL unit of work: the extraction queue and what a
tenant may add to it.

:class:`JobRows` queues, reads and claims jobs, fairly across tenants
(``add_job``, ``get_job``, ``claim_jobs``, ``retry_job``, ``requeue_failed``,
``finish_job``, ``jobs``); reports the queue's state (``queue_state``,
``job_lags``); and keeps a tenant's quotas with the counts they are checked against
(``quotas``, ``set_quotas``, ``jobs_queued_since``, ``open_records_count``). See
:class:`memledger.ports.UnitOfWork` for what each method promises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memledger.domain.records import Job, format_time, parse_time
from memledger.store import _rows as layout
from memledger.store import codec
from memledger.store._sql_base import SqlBase


class JobRows(SqlBase):
    """Jobs, the queue's state and quotas, on the unit's connection."""

    # -- jobs -----------------------------------------------------------------------

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

    # -- quotas and the queue's state -------------------------------------------------

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
