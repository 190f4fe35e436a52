"""The extraction queue shared by worker processes: no job done twice, none lost.

Several processes drain one store's queue at once, each with its own
connection, over several tenants. Every job is leased by one worker only
(SQLite serialises the lease; PostgreSQL skips rows another worker has
locked), committed once, and none is left behind.
"""

from __future__ import annotations

import multiprocessing.queues
from collections import Counter
from datetime import timedelta

import pytest

from memledger.domain.quotas import Quotas
from memledger.domain.records import Claim, SourceEvent
from memledger.errors import QuotaExceededError
from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.conformance._base import SPAWN, UrlFactory
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref, snapshot
from memledger.write.worker import WorkerSettings

WORKERS = 4
TENANTS = ("acme", "globex")
TURNS = 30
"""Turns per tenant, one extraction job each."""


def _fridays(source: SourceEvent) -> list[Claim]:
    return [pref("friday", grounding="Fridays")] if "Fridays" in source.text else []


Report = tuple[dict[str, int], list[str]]


def _drain(url: str, results: multiprocessing.queues.Queue[Report]) -> None:
    """Drain the queue of every tenant; report what this process did (a child process)."""
    memory = Memory(open_store(url), clock=FrozenClock(day(10, 3)))
    try:
        report = memory.process(
            extractor=FunctionExtractor(_fridays), settings=WorkerSettings(batch=3)
        )
        results.put((dict(report.outcomes), report.errors))
    finally:
        memory.close()


class WorkerChecks:
    def test_worker_processes_share_one_queue_without_double_work(
        self, fresh_url: UrlFactory
    ) -> None:
        url = fresh_url()
        memory = Memory(open_store(url), clock=FrozenClock(day(10, 2)))
        for tenant in TENANTS:
            for n in range(1, TURNS + 1):
                turn = event(
                    f"turn-{n}",
                    f"Turn {n}: Fridays suit me.",
                    occurred_at=day(10, 2) + timedelta(minutes=n),
                    sequence=n,
                    tenant=tenant,
                )
                memory.ingest(turn)  # queued: no claims given
        results: multiprocessing.queues.Queue[Report] = SPAWN.Queue()
        procs = [SPAWN.Process(target=_drain, args=(url, results)) for _ in range(WORKERS)]
        for proc in procs:
            proc.start()
        done: Counter[str] = Counter()
        errors: list[str] = []
        for _ in procs:
            outcomes, failed = results.get(timeout=180)
            done.update(outcomes)
            errors.extend(failed)
        for proc in procs:
            proc.join(60)
        assert [proc.exitcode for proc in procs] == [0] * WORKERS
        # every job committed by exactly one worker: none twice, none lost
        assert done == {"committed": TURNS * len(TENANTS)}, (done, errors)
        for tenant in TENANTS:
            assert memory.jobs(tenant=tenant) == ()
            jobs = memory.jobs(tenant=tenant, open_only=False)
            assert len(jobs) == TURNS
            assert {job.attempts for job in jobs} == {1}  # leased once each
            assert len(memory.timeline(SUBJECT, "conversation", tenant=tenant)) == TURNS
            (current,) = memory.timeline(SUBJECT, FAMILY, tenant=tenant)
            historical = [
                r for r in memory.history(SUBJECT, FAMILY, tenant=tenant) if r.status != "active"
            ]
            assert current.mentions + len(historical) == TURNS
        memory.close()

    def test_a_tenant_flooding_the_queue_does_not_starve_another(
        self, fresh_url: UrlFactory
    ) -> None:
        memory = Memory(open_store(fresh_url()), clock=FrozenClock(day(10, 2)))
        for n in range(40):  # the flood, queued first
            memory.ingest(
                event(f"big-{n}", "Fridays suit me.", occurred_at=day(10, 1), tenant="big")
            )
        for n in range(3):
            memory.ingest(
                event(f"small-{n}", "Fridays suit me.", occurred_at=day(10, 1), tenant="small")
            )
        report = memory.process(
            extractor=FunctionExtractor(_fridays), settings=WorkerSettings(batch=4), limit=8
        )
        # a turn each: the small tenant's three jobs ran among the first eight
        assert report.jobs == 8 and memory.jobs(tenant="small") == ()
        assert len(memory.jobs(tenant="big")) == 40 - 5
        memory.close()

    def test_a_claim_takes_each_tenants_oldest_due_jobs_a_turn_at_a_time(
        self, fresh_url: UrlFactory
    ) -> None:
        clock = FrozenClock(day(10, 2))
        memory = Memory(open_store(fresh_url()), clock=clock)
        for tenant, count in (("a", 4), ("b", 2), ("c", 3)):
            for n in range(1, count + 1):
                clock.advance(timedelta(minutes=1))
                memory.ingest(
                    event(f"{tenant}{n}", "Fridays.", occurred_at=day(10, 1), tenant=tenant)
                )

        def claim(tenant: str | None, limit: int, owner: str = "w") -> set[str]:
            with memory.store.write() as unit:
                jobs = unit.claim_jobs(
                    tenant=tenant,
                    now=clock.now(),
                    lease_until=clock.now() + timedelta(minutes=5),
                    owner=owner,
                    limit=limit,
                )
            return {job.event_id for job in jobs}

        assert claim("a", 1, owner="other") == {"a1"}  # leased elsewhere: not due
        # the first due job of each tenant, then the second ones oldest first
        assert claim(None, 5) == {"a2", "b1", "c1", "a3", "b2"}
        assert claim(None, 10) == {"a4", "c2", "c3"}
        assert claim(None, 10) == set()
        clock.advance(timedelta(minutes=6))  # every lease ran out: due again, oldest first
        assert claim("c", 2) == {"c1", "c2"}
        assert claim(None, 2) == {"a1", "b1"}
        memory.close()

    def test_a_flooding_tenant_gets_errors_and_the_others_lag_stays_low(
        self, fresh_url: UrlFactory
    ) -> None:
        clock = FrozenClock(day(10, 2))
        memory = Memory(open_store(fresh_url()), clock=clock)
        memory.set_quotas(Quotas(jobs_per_minute=20, max_records=30), tenant="big")
        refused = 0
        for n in range(60):  # the flood: twenty a minute get in, the rest are refused
            try:
                memory.ingest(event(f"big-{n}", "Fridays suit me.", occurred_at=day(10, 1),
                                    tenant="big"))  # fmt: skip
            except QuotaExceededError as exc:
                refused += 1
                assert exc.retry_after == 60.0 and "jobs_per_minute" in str(exc)
        assert refused == 40 and len(memory.jobs(tenant="big")) == 20
        for n in range(3):
            memory.ingest(
                event(f"small-{n}", "Fridays suit me.", occurred_at=day(10, 1), tenant="small")
            )
        clock.advance(timedelta(seconds=5))
        memory.process(extractor=FunctionExtractor(_fridays), settings=WorkerSettings(batch=4),
                       limit=8)  # fmt: skip
        small = memory.freshness(tenant="small")
        assert small.queued_jobs == 0 and small.extraction_lag_p95 == 5.0  # not behind big
        replay = event("big-0", "Fridays suit me.", occurred_at=day(10, 1), tenant="big")
        assert memory.ingest(replay).duplicate  # a replay is not a new event: not refused
        late = event("big-late", "Fridays suit me.", occurred_at=day(10, 1), tenant="big")
        with pytest.raises(QuotaExceededError):
            memory.ingest(late)
        clock.advance(timedelta(minutes=1))  # a new minute: the flood may queue again
        assert memory.ingest(late).outcome == "queued"
        memory.close()

    def test_a_tenant_at_its_record_quota_cannot_add_more(self, fresh_url: UrlFactory) -> None:
        memory = Memory(open_store(fresh_url()), clock=FrozenClock(day(10, 2)))
        memory.set_quotas(Quotas(max_records=2), tenant=TENANT)
        assert memory.quotas(tenant=TENANT) == Quotas(max_records=2)
        for n in range(2):
            memory.ingest(event(f"e{n}", "Fridays", occurred_at=day(10, 1), subject=f"s{n}"),
                          [pref("friday")])  # fmt: skip
        state = snapshot(memory, subjects=["s0", "s1", "s2"])
        with pytest.raises(QuotaExceededError, match="max_records"):
            memory.ingest(event("e2", "Fridays", occurred_at=day(10, 1), subject="s2"),
                          [pref("friday")])  # fmt: skip
        assert snapshot(memory, subjects=["s0", "s1", "s2"]) == state
        again = memory.ingest(event("e0", "Fridays", occurred_at=day(10, 1), subject="s0"),
                              [pref("friday")])  # fmt: skip
        assert again.duplicate  # a replay is not refused
        assert memory.set_quotas(None, tenant=TENANT) == Quotas()
        memory.ingest(event("e2", "Fridays", occurred_at=day(10, 1), subject="s2"),
                      [pref("friday")])  # fmt: skip
        memory.close()
