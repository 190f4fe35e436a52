"""The extraction worker: runs queued jobs through prefilter, extractor and gates, then commits.

A few jobs at a time, in two short transactions, so that a slow extractor (an
LLM endpoint) never holds the store's write lock:

1. lease the oldest due jobs (a crashed worker's lease runs out and another
   worker takes the job over);
2. outside any transaction: prefilter each turn, extract, gate the candidates;
3. commit each batch under the generations its job started with, each under
   its own savepoint of one transaction. The event commit is the unit of
   idempotency, so a retried, duplicated or raced job leaves exactly one
   result; a family revoked meanwhile rejects its claims as ``stale_generation``.

An extractor failure (endpoint down, slow, invalid output) leaves the job
queued for a retry after an exponential backoff with the reason recorded;
after ``max_attempts`` it is marked ``failed`` (listed, and requeued by
``Memory.retry_failed``), never silently dropped. Every turn that passes the
prefilter is also kept as an ``episode`` record; the assistant's turns
(``role="assistant"``) only as that: an agent's own words are not extracted
into claims about the user.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from memledger.domain.addresses import check_tenant
from memledger.domain.families import Schema
from memledger.domain.gates import GateSettings, gate
from memledger.domain.limits import check_claims
from memledger.domain.prefilter import PrefilterSettings, prefilter
from memledger.domain.records import Claim, Job, JsonValue, Receipt, SourceEvent
from memledger.errors import (
    EmbedderError,
    ExtractionError,
    InvalidInputError,
    LimitExceededError,
    StoreError,
    StoreLockedError,
)
from memledger.index.catchup import feed
from memledger.ports import Extraction, Extractor, UnitOfWork
from memledger.write.batch import Batch, stable_id, validate
from memledger.write.commit import commit_event
from memledger.write.ports import HasWriting, WritePorts, write_ports

LOCK_RETRIES = 3
"""Tries of one batch's commit that lost a deadlock (PostgreSQL) before giving up."""

JobOutcome = Literal["committed", "review", "prefiltered", "retry", "failed", "duplicate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSettings:
    """How the worker runs jobs. Defaults suit an interactive agent."""

    prefilter: PrefilterSettings = field(default_factory=PrefilterSettings)
    gates: GateSettings = field(default_factory=GateSettings)
    episodes: bool = True
    lease: timedelta = timedelta(minutes=2)
    max_attempts: int = 8
    backoff: timedelta = timedelta(seconds=2)
    max_backoff: timedelta = timedelta(minutes=10)
    batch: int = 32
    """Jobs leased and committed per transaction (each under its own savepoint)."""
    index_rows: int = 500
    """Outbox rows of the derived index's backlog (every tenant's) :meth:`Worker.run`
    applies per round, so that reads find the index caught up (0: leave it to reads
    and ``memledger reindex``; see :mod:`memledger.index.catchup`)."""

    def __post_init__(self) -> None:
        rows = self.index_rows
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise InvalidInputError(f"index_rows must be an integer >= 0, got {rows!r}")

    def delay(self, attempts: int) -> timedelta:
        """Wait before attempt ``attempts + 1``: doubling from ``backoff``, capped."""
        factor: int = 2 ** max(0, attempts - 1)
        return min(self.backoff * factor, self.max_backoff)


_Leased = tuple[Job, SourceEvent, int]
"""A leased job, its event, and the subject's turns in the minute before it."""


@dataclass(frozen=True, slots=True)
class _Commit:
    job: Job
    batch: Batch
    counters: Counter[str]
    schema: Schema
    """The tenant's schema, looked up before the write transaction (it may read the store)."""


@dataclass(frozen=True, slots=True)
class _Retry:
    job: Job
    error: str
    counter: str


@dataclass(frozen=True, slots=True)
class JobResult:
    job: Job
    outcome: JobOutcome
    receipt: Receipt | None = None
    error: str | None = None


@dataclass(slots=True)
class WorkReport:
    """What a run of the worker did, by outcome."""

    outcomes: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    expired: int = 0
    """Records erased because their expiry came (``run(expire_every=...)``)."""
    indexed: int = 0
    """Outbox rows :meth:`Worker.run` applied to the derived index."""

    @property
    def jobs(self) -> int:
        return sum(self.outcomes.values())

    def add(self, result: JobResult) -> None:
        self.outcomes[result.outcome] += 1
        if result.error is not None:
            self.errors.append(f"{result.job.event_id}: {result.error}")


def _families(plan: _Commit | _Retry) -> set[tuple[str, str, str]]:
    """``(tenant, subject, family)`` of every family a plan's commit writes."""
    if isinstance(plan, _Retry):
        return set()
    event = plan.batch.event
    return {(event.tenant, c.subject or event.subject, c.family) for c in plan.batch.claims}


def episode_of(event: SourceEvent) -> Claim:
    """The raw turn as an episode record: text, speaker, session and time."""
    session = event.metadata.get("session")
    scope = f"turn:{event.event_id}"
    if len(scope) > 255:
        scope = stable_id("turn", event.tenant, event.event_id)
    value: dict[str, JsonValue] = {
        "text": event.text,
        "speaker": event.actor.id,
        "session": session if isinstance(session, str) else event.stream_key,
        "channel": event.channel,
    }
    if event.role is not None:
        value["role"] = event.role
    return Claim(
        family="conversation",
        kind="episode",
        statement=event.text,
        value=value,
        scope=scope,
        valid_from=event.occurred_at,
    )


class Worker:
    """Runs extraction jobs of one store with one extractor, through the write ports of
    a :class:`~memledger.Memory` (``memory.writing``)."""

    def __init__(
        self,
        ports: WritePorts | HasWriting,
        extractor: Extractor,
        *,
        settings: WorkerSettings | None = None,
        owner: str | None = None,
    ) -> None:
        self.ports = write_ports(ports)
        self.extractor = extractor
        self.settings = settings or WorkerSettings()
        self.owner = owner or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def run_once(self, *, tenant: str | None = None) -> JobResult | None:
        """Run the oldest due job, if any."""
        results = self.run_batch(tenant=tenant, size=1)
        return results[0] if results else None

    def run_batch(self, *, tenant: str | None = None, size: int | None = None) -> list[JobResult]:
        """Lease up to ``size`` due jobs, extract each, and commit them in one transaction.

        Each job's outcome is written under its own savepoint: one that fails is
        rolled back alone and queued for a retry, the others commit.
        """
        results, _ = self._cycle(tenant, None, size=size or self.settings.batch, next_size=0)
        return results

    def _cycle(
        self, tenant: str | None, leased: list[_Leased] | None, *, size: int, next_size: int
    ) -> tuple[list[JobResult], list[_Leased]]:
        """Commit one batch and, in the same transaction, lease the next ``next_size`` jobs
        (one transaction per batch instead of two)."""
        if leased is None:
            with self.ports.store.write() as unit:
                leased = self._lease(unit, tenant, size)
        plans = [self._plan(job, event, recent) for job, event, recent in leased]
        if not plans:
            return [], []
        for attempt in range(1, LOCK_RETRIES + 1):
            try:
                return self._commit_batch(plans, tenant, next_size=next_size)
            except StoreLockedError:  # a deadlock victim: nothing was written, try again
                if attempt == LOCK_RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _commit_batch(
        self, plans: list[_Commit | _Retry], tenant: str | None, *, next_size: int
    ) -> tuple[list[JobResult], list[_Leased]]:
        results: list[JobResult] = []
        now = self.ports.clock.now()
        with self.ports.store.write() as unit:
            # every family the batch writes, locked up front in one order: two batches
            # never wait on each other in a cycle (PostgreSQL locks per family)
            for key in sorted({key for plan in plans for key in _families(plan)}):
                unit.lock_family(*key)
            for plan in plans:
                try:
                    with unit.savepoint():
                        results.append(self._write(unit, plan, now))
                except (StoreError, KeyboardInterrupt):
                    raise
                except Exception as exc:  # one poisoned job must not block the others
                    error = f"commit_failed: {type(exc).__name__}: {exc}"
                    with unit.savepoint():
                        results.append(
                            self._write(unit, _Retry(plan.job, error, "commit:failed"), now)
                        )
            following = self._lease(unit, tenant, next_size) if next_size else []
        return results, following

    def _lease(self, unit: UnitOfWork, tenant: str | None, size: int) -> list[_Leased]:
        now = self.ports.clock.now()
        leased: list[_Leased] = []
        jobs = unit.claim_jobs(
            tenant=tenant,
            now=now,
            lease_until=now + self.settings.lease,
            owner=self.owner,
            limit=size,
        )
        for job in jobs:
            stored = unit.get_event(job.tenant, job.event_id)
            assert stored is not None, "the ledger is append-only"
            event = stored.event
            recent = unit.count_events(
                event.tenant,
                event.subject,
                since=event.occurred_at - timedelta(minutes=1),
                until=event.occurred_at,
            )
            leased.append((job, event, recent))
        return leased

    def derive(self, event: SourceEvent) -> tuple[Claim, ...]:
        """The claims a job would commit for ``event`` besides its episode: none for a
        turn the prefilter drops or the agent's own words, else the extractor's claims
        that pass the gates. An extractor failure raises (:class:`ExtractionError`)."""
        if prefilter(event.text, turns_last_minute=0, settings=self.settings.prefilter):
            return ()
        if event.role == "assistant":
            return ()
        try:
            extraction = self.extractor.extract(event)
        except ExtractionError:
            raise
        except Exception as exc:
            raise ExtractionError(
                f"the extractor crashed on event {event.event_id!r}: {type(exc).__name__}: {exc}",
                reason="extractor_crashed",
            ) from exc
        claims, _ = self._admit(event, extraction)
        return tuple(claims)

    def _plan(self, job: Job, event: SourceEvent, recent: int) -> _Commit | _Retry:
        """Everything that happens outside a transaction: prefilter, extraction, gates."""
        reason = prefilter(event.text, turns_last_minute=recent, settings=self.settings.prefilter)
        if reason is not None:
            return self._commit(
                job,
                self._batch(job, event, (), note=f"prefilter:{reason}"),
                Counter({f"prefilter:{reason}": 1}),
            )
        if event.role == "assistant":  # the agent's own words: kept as the turn, no claims
            episode = [episode_of(event)] if self.settings.episodes else []
            return self._commit(
                job, self._batch(job, event, tuple(episode)), Counter({"agent_turn": 1})
            )
        try:
            extraction = self.extractor.extract(event)
        except ExtractionError as exc:
            return _Retry(job, f"{exc.reason}: {exc}", f"extraction:{exc.reason}")
        except Exception as exc:  # a broken extractor must not lose the job
            return _Retry(
                job,
                f"extractor_crashed: {type(exc).__name__}: {exc}",
                "extraction:extractor_crashed",
            )
        claims, counters = self._admit(event, extraction)
        complete = extraction.complete
        if len(claims) >= self.ports.limits.max_claims:  # the episode needs a place too
            complete = False  # to review, whole: nothing is cut off silently
            counters["gate:too_many_claims"] += 1
        if self.settings.episodes:
            claims.append(episode_of(event))
        batch = self._batch(job, event, tuple(claims), complete=complete)
        return self._commit(job, batch, counters)

    def _commit(self, job: Job, batch: Batch, counters: Counter[str]) -> _Commit:
        families = {claim.family for claim in batch.claims}
        return _Commit(job, batch, counters, self.ports.schema_for(job.tenant, families))

    def _batch(
        self,
        job: Job,
        event: SourceEvent,
        claims: tuple[Claim, ...],
        *,
        complete: bool = True,
        note: str | None = None,
    ) -> Batch:
        return Batch(
            event=event,
            claims=claims,
            complete=complete,
            extractor=self.extractor.info,
            generations=job.generations,
            revocation_mark=job.revocation_mark,
            job_id=job.job_id,
            note=note,
            from_ledger=True,
        )

    def _admit(
        self, event: SourceEvent, extraction: Extraction
    ) -> tuple[list[Claim], Counter[str]]:
        counters: Counter[str] = Counter()
        if extraction.dropped:
            counters["extractor_dropped"] = len(extraction.dropped)
        kept: list[Claim] = []
        schema = self.ports.schema_for(event.tenant, {c.family for c in extraction.claims})
        for claim in extraction.claims:
            why: str | None = gate(claim, event.text, settings=self.settings.gates)
            if why is None:
                try:
                    validate(Batch(event=event, claims=(claim,)), schema)
                except InvalidInputError:
                    why = "invalid"
            if why is None:
                try:  # an extractor's claim is held to the same limits as a caller's
                    check_claims([claim], self.ports.limits)
                except LimitExceededError:
                    why = "over_limit"
            if why is None:
                kept.append(claim)
            else:
                counters[f"gate:{why}"] += 1
        return kept, counters

    def _write(self, unit: UnitOfWork, plan: _Commit | _Retry, now: datetime) -> JobResult:
        job = plan.job
        if isinstance(plan, _Retry):
            failed = job.attempts >= self.settings.max_attempts
            unit.retry_job(
                job.tenant,
                job.job_id,
                error=plan.error[:2000],
                next_attempt_at=now + self.settings.delay(job.attempts),
                failed=failed,
            )
            unit.bump_counter(job.tenant, plan.counter)
            return JobResult(job, "failed" if failed else "retry", error=plan.error)
        receipt = commit_event(
            unit, plan.batch, schema=plan.schema, policy=self.ports.policy, now=now
        )
        if receipt.duplicate:
            return JobResult(job, "duplicate", receipt)
        for name, count in sorted(plan.counters.items()):
            unit.bump_counter(job.tenant, name, by=count)
        if plan.batch.note is not None:
            return JobResult(job, "prefiltered", receipt)
        return JobResult(job, "review" if receipt.outcome == "review" else "committed", receipt)

    def drain(
        self,
        *,
        tenant: str | None = None,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> WorkReport:
        """Run due jobs until none is left (or ``limit`` were run); ``progress`` is told
        the number of jobs run so far after every batch."""
        report = WorkReport()
        leased: list[_Leased] | None = None
        batch = self.settings.batch
        while limit is None or report.jobs < limit:
            size = batch if limit is None else min(batch, limit - report.jobs)
            following = batch if limit is None else min(batch, limit - report.jobs - size)
            try:
                results, leased = self._cycle(tenant, leased, size=size, next_size=following)
            except StoreLockedError as exc:  # another writer held the lock too long: later
                report.errors.append(str(exc))
                break
            if not results:
                break
            for result in results:
                report.add(result)
            if progress is not None:
                progress(report.jobs)
        return report

    def run(
        self,
        *,
        stop: threading.Event,
        tenant: str | None = None,
        poll: float = 0.5,
        expire_every: float | None = None,
    ) -> WorkReport:
        """Run jobs until ``stop`` is set (checked after every batch), sleeping ``poll``
        seconds when idle. Keeps the latest 100 errors. With ``expire_every`` (seconds),
        also erase what expired (``ports.expire``: :meth:`memledger.Memory.expire`) at that pace,
        first at the start. Each round also applies up to ``settings.index_rows`` rows of
        the derived index's backlog; the worker sleeps only when it found neither jobs
        nor backlog."""
        report = WorkReport()
        due = time.monotonic()
        while not stop.is_set():
            if expire_every is not None and time.monotonic() >= due:
                try:
                    erased = self.ports.expire(tenant)
                except StoreError as exc:  # the store is busy or down: the next round
                    report.errors = [*report.errors, f"expiry: {exc}"][-100:]
                else:
                    report.expired += sum(len(r.memory_ids) for r in erased)
                due = time.monotonic() + expire_every
            batch = self.drain(tenant=tenant, limit=self.settings.batch)
            report.outcomes.update(batch.outcomes)
            report.errors = [*report.errors, *batch.errors][-100:]
            indexed = self._feed_index(report, tenant)
            if batch.jobs == 0 and indexed == 0:
                stop.wait(poll)
        return report

    def _feed_index(self, report: WorkReport, tenant: str | None) -> int:
        """One bounded step of the index's catch-up (``tenant``'s, or every tenant's);
        the rows applied."""
        if self.settings.index_rows <= 0:
            return 0
        rows = self.settings.index_rows
        try:
            applied = feed(self.ports.index(), self.ports.store, rows=rows, tenant=tenant)
        except (StoreError, EmbedderError) as exc:  # busy, down or not loading: next round
            report.errors = [*report.errors, f"index: {exc}"][-100:]
            return 0
        report.indexed += applied
        return applied


def process(
    ports: WritePorts,
    *,
    extractor: Extractor | None = None,
    tenant: str | None = None,
    limit: int | None = None,
    settings: WorkerSettings | None = None,
) -> WorkReport:
    """Run due extraction jobs now, in this thread, until none is left.

    The default extractor is the offline rule-based one. ``tenant=None``
    runs every tenant's jobs (a service's worker); a tenant limits it.
    """
    if tenant is not None:
        check_tenant(tenant)
    if extractor is None:
        from memledger.write.extract.rules import RuleExtractor

        extractor = RuleExtractor()
    return Worker(ports, extractor, settings=settings).drain(tenant=tenant, limit=limit)


def retry_failed(ports: WritePorts, *, tenant: str) -> int:
    """Queue every failed job of ``tenant`` again; returns how many."""
    check_tenant(tenant)
    with ports.store.write() as unit:
        return unit.requeue_failed(tenant, now=ports.clock.now())
