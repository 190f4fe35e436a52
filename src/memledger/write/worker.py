"""The extraction worker: runs queued jobs through prefilter, extractor and gates, then commits.

One job at a time, in three short transactions, so that a slow extractor (an
LLM endpoint) never holds the store's write lock:

1. lease the oldest due job (a crashed worker's lease runs out and another
   worker takes the job over);
2. outside any transaction: prefilter the turn, extract, gate the candidates;
3. commit the batch under the generations the job started with. The event
   commit is the unit of idempotency, so a retried, duplicated or raced job
   leaves exactly one result; a family revoked meanwhile rejects its claims
   as ``stale_generation``.

An extractor failure (endpoint down, slow, invalid output) leaves the job
queued for a retry after an exponential backoff with the reason recorded;
after ``max_attempts`` it is marked ``failed`` (listed, and requeued by
``Memory.retry_failed``), never silently dropped. Every turn that passes the
prefilter is also kept as an ``episode`` record.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

from memledger.domain.gates import GateSettings, gate
from memledger.domain.prefilter import PrefilterSettings, prefilter
from memledger.domain.records import Claim, Job, Receipt, SourceEvent
from memledger.errors import ExtractionError, InvalidInputError, StoreLockedError
from memledger.ports import Extraction, Extractor
from memledger.write.batch import Batch, stable_id, validate
from memledger.write.commit import commit_event

if TYPE_CHECKING:
    from memledger.memory import Memory

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

    def delay(self, attempts: int) -> timedelta:
        """Wait before attempt ``attempts + 1``: doubling from ``backoff``, capped."""
        factor: int = 2 ** max(0, attempts - 1)
        return min(self.backoff * factor, self.max_backoff)


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

    @property
    def jobs(self) -> int:
        return sum(self.outcomes.values())

    def add(self, result: JobResult) -> None:
        self.outcomes[result.outcome] += 1
        if result.error is not None:
            self.errors.append(f"{result.job.event_id}: {result.error}")


def episode_of(event: SourceEvent) -> Claim:
    """The raw turn as an episode record: text, speaker, session and time."""
    session = event.metadata.get("session")
    scope = f"turn:{event.event_id}"
    if len(scope) > 255:
        scope = stable_id("turn", event.tenant, event.event_id)
    return Claim(
        family="conversation",
        kind="episode",
        statement=event.text,
        value={
            "text": event.text,
            "speaker": event.actor.id,
            "session": session if isinstance(session, str) else event.stream_key,
            "channel": event.channel,
        },
        scope=scope,
        valid_from=event.occurred_at,
    )


class Worker:
    """Runs extraction jobs of one :class:`~memledger.Memory` with one extractor."""

    def __init__(
        self,
        memory: Memory,
        extractor: Extractor,
        *,
        settings: WorkerSettings | None = None,
        owner: str | None = None,
    ) -> None:
        self.memory = memory
        self.extractor = extractor
        self.settings = settings or WorkerSettings()
        self.owner = owner or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def run_once(self, *, tenant: str | None = None) -> JobResult | None:
        """Run the oldest due job, if any."""
        now = self.memory.clock.now()
        with self.memory.store.write() as unit:
            job = unit.claim_job(
                tenant=tenant, now=now, lease_until=now + self.settings.lease, owner=self.owner
            )
            if job is None:
                return None
            stored = unit.get_event(job.tenant, job.event_id)
            assert stored is not None, "the ledger is append-only"
            event = stored.event
            recent = unit.count_events(
                event.tenant,
                event.subject,
                since=event.occurred_at - timedelta(minutes=1),
                until=event.occurred_at,
            )
        reason = prefilter(event.text, turns_last_minute=recent, settings=self.settings.prefilter)
        if reason is not None:
            return self._commit(
                job,
                event,
                (),
                note=f"prefilter:{reason}",
                counters=Counter({f"prefilter:{reason}": 1}),
            )
        try:
            extraction = self.extractor.extract(event)
        except ExtractionError as exc:
            return self._retry(job, f"{exc.reason}: {exc}", counter=f"extraction:{exc.reason}")
        except Exception as exc:  # a broken extractor must not lose the job
            return self._retry(
                job,
                f"extractor_crashed: {type(exc).__name__}: {exc}",
                counter="extraction:extractor_crashed",
            )
        claims, counters = self._admit(event, extraction)
        if self.settings.episodes:
            claims.append(episode_of(event))
        return self._commit(
            job, event, tuple(claims), complete=extraction.complete, counters=counters
        )

    def _admit(
        self, event: SourceEvent, extraction: Extraction
    ) -> tuple[list[Claim], Counter[str]]:
        counters: Counter[str] = Counter(f"extractor_dropped:{r}" for r in extraction.dropped)
        kept: list[Claim] = []
        for claim in extraction.claims:
            why: str | None = gate(claim, event.text, settings=self.settings.gates)
            if why is None:
                try:
                    validate(Batch(event=event, claims=(claim,)), self.memory.schema)
                except InvalidInputError:
                    why = "invalid"
            if why is None:
                kept.append(claim)
            else:
                counters[f"gate:{why}"] += 1
        return kept, counters

    def _commit(
        self,
        job: Job,
        event: SourceEvent,
        claims: tuple[Claim, ...],
        *,
        complete: bool = True,
        note: str | None = None,
        counters: Counter[str],
    ) -> JobResult:
        batch = Batch(
            event=event,
            claims=claims,
            complete=complete,
            extractor=self.extractor.info,
            generations=job.generations,
            job_id=job.job_id,
            note=note,
        )
        with self.memory.store.write() as unit:
            receipt = commit_event(
                unit,
                batch,
                schema=self.memory.schema,
                policy=self.memory.policy,
                now=self.memory.clock.now(),
            )
            if not receipt.duplicate:
                for name, count in sorted(counters.items()):
                    unit.bump_counter(event.tenant, name, by=count)
        outcome: JobOutcome
        if receipt.duplicate:
            outcome = "duplicate"
        elif note is not None:
            outcome = "prefiltered"
        else:
            outcome = "review" if receipt.outcome == "review" else "committed"
        return JobResult(job, outcome, receipt)

    def _retry(self, job: Job, error: str, *, counter: str) -> JobResult:
        now = self.memory.clock.now()
        failed = job.attempts >= self.settings.max_attempts
        with self.memory.store.write() as unit:
            unit.retry_job(
                job.tenant,
                job.job_id,
                error=error[:2000],
                next_attempt_at=now + self.settings.delay(job.attempts),
                failed=failed,
            )
            unit.bump_counter(job.tenant, counter)
        return JobResult(job, "failed" if failed else "retry", error=error)

    def drain(self, *, tenant: str | None = None, limit: int | None = None) -> WorkReport:
        """Run due jobs until none is left (or ``limit`` were run)."""
        report = WorkReport()
        while limit is None or report.jobs < limit:
            try:
                result = self.run_once(tenant=tenant)
            except StoreLockedError as exc:  # another writer held the lock too long: later
                report.errors.append(str(exc))
                break
            if result is None:
                break
            report.add(result)
        return report

    def run(
        self, *, stop: threading.Event, tenant: str | None = None, poll: float = 0.5
    ) -> WorkReport:
        """Run jobs until ``stop`` is set, sleeping ``poll`` seconds when idle."""
        report = WorkReport()
        while not stop.is_set():
            batch = self.drain(tenant=tenant, limit=100)
            report.outcomes.update(batch.outcomes)
            report.errors.extend(batch.errors)
            if batch.jobs == 0:
                stop.wait(poll)
        return report
