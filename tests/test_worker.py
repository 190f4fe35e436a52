"""The extraction worker on real SQLite files: queueing, retries, races, gates, episodes."""

from __future__ import annotations

import multiprocessing
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from memledger import Claim, ExtractionError, InvalidInputError, Memory, SourceEvent
from memledger.domain.prefilter import PrefilterSettings
from memledger.ports import Extraction
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, actor, day, event, pref
from memledger.write.worker import Worker, WorkerSettings

SPAWN = multiprocessing.get_context("spawn")


def fridays(source: SourceEvent) -> list[Claim]:
    """Proposes a Friday preference whenever the text mentions Fridays."""
    if "Fridays" in source.text:
        return [pref("friday", grounding="Fridays")]
    return []


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 2))


def turn(n: int, text: str, *, minutes: int = 0) -> SourceEvent:
    return event(f"turn-{n}", text, occurred_at=day(10, 2) + timedelta(minutes=minutes), sequence=n)


def test_ingest_queues_and_process_commits_claims_and_episodes(memory: Memory) -> None:
    receipt = memory.ingest(turn(1, "Send my digest on Fridays please."))
    assert receipt.outcome == "queued" and receipt.job_id is not None
    assert memory.history(SUBJECT, FAMILY, tenant=TENANT) == ()  # nothing extracted yet
    report = memory.process(extractor=FunctionExtractor(fridays))
    assert report.outcomes == {"committed": 1}
    (value,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
    assert (value.value, value.extractor.name, value.trust) == ("friday", "function", 0.5)
    (episode,) = memory.timeline(SUBJECT, "conversation", tenant=TENANT)
    assert episode.kind == "episode" and episode.value == {
        "text": "Send my digest on Fridays please.",
        "speaker": SUBJECT,
        "session": "chat",
        "channel": "chat",
    }
    assert episode.valid_from == day(10, 2) and episode.scope == "turn:turn-1"
    assert memory.jobs(tenant=TENANT) == ()
    assert memory.ingest(turn(1, "Send my digest on Fridays please.")).duplicate


def test_drain_tells_its_progress_after_every_batch(memory: Memory) -> None:
    for n in range(1, 6):
        memory.ingest(turn(n, f"Send my digest on Fridays please ({n}).", minutes=n))
    told: list[int] = []
    worker = Worker(memory.writing, FunctionExtractor(fridays), settings=WorkerSettings(batch=2))
    report = worker.drain(progress=told.append)
    assert report.jobs == 5 and told == [2, 4, 5]


def test_prefilter_stores_nothing_and_counts_why(memory: Memory) -> None:
    extractor = FunctionExtractor(fridays)
    memory.ingest(turn(1, "Let's pretend you're a pirate who loves Fridays."))
    memory.ingest(turn(2, "lol"))
    memory.ingest(turn(3, "test test"))
    report = memory.process(extractor=extractor)
    assert report.outcomes == {"prefiltered": 3}
    assert extractor.calls == 0
    assert memory.families(SUBJECT, tenant=TENANT) == ()  # no claims, no episodes
    assert memory.stats(tenant=TENANT) == {
        "prefilter:filler": 1,
        "prefilter:role_play": 1,
        "prefilter:test_chatter": 1,
    }
    assert memory.event("turn-1", tenant=TENANT).text.startswith("Let's pretend")  # in the ledger


def test_rate_limit_per_subject(memory: Memory) -> None:
    settings = WorkerSettings(prefilter=PrefilterSettings(max_turns_per_minute=3))
    for n in range(1, 6):
        memory.ingest(turn(n, f"Message number {n} about Fridays", minutes=0))
    report = memory.process(extractor=FunctionExtractor(fridays), settings=settings)
    assert report.outcomes == {"prefiltered": 5}  # all five share one minute: 5 > 3
    assert memory.stats(tenant=TENANT) == {"prefilter:rate_limited": 5}
    memory.ingest(turn(6, "A calm message about Fridays", minutes=10))
    assert memory.process(extractor=FunctionExtractor(fridays), settings=settings).outcomes == {
        "committed": 1
    }


def test_failing_extractor_retries_with_backoff_then_fails_then_requeues(
    memory: Memory, clock: FrozenClock
) -> None:
    down = True

    def flaky(source: SourceEvent) -> list[Claim]:
        if down:
            raise ExtractionError("connection refused", reason="endpoint_unreachable")
        return fridays(source)

    extractor = FunctionExtractor(flaky)
    settings = WorkerSettings(max_attempts=3, backoff=timedelta(seconds=10))
    memory.ingest(turn(1, "Fridays, please."))
    assert memory.process(extractor=extractor, settings=settings).outcomes == {"retry": 1}
    (job,) = memory.jobs(tenant=TENANT)
    assert job.status == "queued" and job.attempts == 1
    assert job.last_error == "endpoint_unreachable: connection refused"
    assert job.next_attempt_at == day(10, 2) + timedelta(seconds=10)
    assert memory.process(extractor=extractor, settings=settings).jobs == 0  # not due yet
    clock.advance(timedelta(seconds=10))
    assert memory.process(extractor=extractor, settings=settings).outcomes == {"retry": 1}
    clock.advance(timedelta(seconds=20))  # the backoff doubled
    assert memory.process(extractor=extractor, settings=settings).outcomes == {"failed": 1}
    (job,) = memory.jobs(tenant=TENANT)
    assert job.status == "failed" and job.attempts == 3
    assert memory.history(SUBJECT, FAMILY, tenant=TENANT) == ()  # never half-written
    assert memory.stats(tenant=TENANT) == {"extraction:endpoint_unreachable": 3}
    down = False
    assert memory.retry_failed(tenant=TENANT) == 1
    assert memory.process(extractor=extractor, settings=settings).outcomes == {"committed": 1}
    assert [r.value for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT)] == ["friday"]


def test_a_crashing_extractor_never_loses_the_job(memory: Memory) -> None:
    def broken(source: SourceEvent) -> list[Claim]:
        raise KeyError("bug")

    memory.ingest(turn(1, "Fridays, please."))
    report = memory.process(extractor=FunctionExtractor(broken))
    assert report.outcomes == {"retry": 1}
    assert "extractor_crashed: KeyError" in report.errors[0]
    assert memory.jobs(tenant=TENANT)[0].status == "queued"


def test_a_worker_killed_mid_job_is_taken_over_after_its_lease(
    memory: Memory, clock: FrozenClock
) -> None:
    memory.ingest(turn(1, "Fridays, please."))
    with memory.store.write() as unit:  # a worker leases the job, then dies
        leased = unit.claim_jobs(
            tenant=TENANT,
            now=clock.now(),
            lease_until=clock.now() + timedelta(minutes=2),
            owner="dead",
            limit=5,
        )
    assert [job.event_id for job in leased] == ["turn-1"]
    assert memory.process(extractor=FunctionExtractor(fridays)).jobs == 0  # still leased
    clock.advance(timedelta(minutes=3))
    assert memory.process(extractor=FunctionExtractor(fridays)).outcomes == {"committed": 1}
    assert len(memory.history(SUBJECT, FAMILY, tenant=TENANT)) == 1


def test_two_workers_racing_on_one_event_leave_one_result(memory: Memory) -> None:
    memory.ingest(turn(1, "Fridays, please."))
    barrier = threading.Barrier(2)

    def slow(source: SourceEvent) -> list[Claim]:
        barrier.wait(timeout=10)  # both workers are inside extraction at once
        return fridays(source)

    racing = WorkerSettings(lease=timedelta(0))  # an expired lease: both may take the job
    workers = [Worker(memory.writing, FunctionExtractor(slow), settings=racing) for _ in range(2)]
    results = []
    threads = [threading.Thread(target=lambda w=w: results.append(w.run_once())) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.outcome for r in results if r is not None) == ["committed", "duplicate"]
    assert len(memory.history(SUBJECT, FAMILY, tenant=TENANT)) == 1
    assert len(memory.timeline(SUBJECT, "conversation", tenant=TENANT)) == 1


def _drain_worker(url: str) -> None:
    memory = Memory(open_store(url), clock=FrozenClock(day(10, 3)))
    memory.process(extractor=FunctionExtractor(fridays))
    memory.close()


def test_worker_processes_in_parallel_each_event_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    memory = Memory(open_store(url), clock=FrozenClock(day(10, 2)))
    for n in range(1, 41):
        memory.ingest(turn(n, f"Turn {n}: Fridays suit me.", minutes=n * 2))
    procs = [SPAWN.Process(target=_drain_worker, args=(url,)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert memory.jobs(tenant=TENANT) == ()
    assert len(memory.timeline(SUBJECT, "conversation", tenant=TENANT)) == 40
    (value,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    assert value.value == "friday"
    # each event counted once: a mention of the current record if it came in order, else
    # a historical record (an older sequence never changes the current view)
    historical = [
        r for r in memory.history(SUBJECT, FAMILY, tenant=TENANT) if r.status == "historical"
    ]
    assert value.mentions + len(historical) == 40
    assert len({r.source_event_id for r in historical}) == len(historical)
    memory.close()


def test_a_job_finishing_after_revocation_writes_nothing(memory: Memory) -> None:
    memory.ingest(turn(1, "Fridays, please."), [pref("friday")])
    memory.ingest(turn(2, "Fridays, as I said."))
    (record,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    memory.revoke(record.memory_id, tenant=TENANT)
    report = memory.process(extractor=FunctionExtractor(fridays))
    assert report.outcomes == {"committed": 1}
    assert memory.timeline(SUBJECT, FAMILY, tenant=TENANT) == ()
    assert memory.stats(tenant=TENANT) == {"rejected:stale_generation": 1}


def test_gates_drop_ungrounded_unsupported_and_invalid_candidates(memory: Memory) -> None:
    def sloppy(source: SourceEvent) -> Extraction:
        return Extraction(
            claims=(
                pref("friday", grounding="Fridays"),  # kept
                Claim(
                    family="home_city",
                    kind="fact",
                    statement="Lives in Paris",
                    value="Paris",
                    grounding="Paris",
                ),  # quote not in the text
                Claim(
                    family="employer",
                    kind="fact",
                    statement="Works at Acme Corp",
                    value="Acme",
                    grounding="Fridays",
                ),  # statement not supported
                Claim(
                    family="shoe_size",
                    kind="fact",
                    statement="Fridays",
                    value=1,
                    grounding="Fridays",
                ),  # unknown family
                Claim(
                    family="role",
                    kind="fact",
                    statement="Fridays person",
                    value="x",
                    grounding="Fridays",
                    confidence=0.1,
                ),  # unimportant
            ),
            dropped=("schema_mismatch",),
        )

    memory.ingest(turn(1, "Fridays, please."))
    assert memory.process(extractor=FunctionExtractor(sloppy)).outcomes == {"committed": 1}
    assert [s.family for s in memory.families(SUBJECT, tenant=TENANT)] == ["conversation", FAMILY]
    assert memory.stats(tenant=TENANT) == {
        "extractor_dropped": 1,
        "gate:invalid": 1,
        "gate:unimportant": 1,
        "gate:ungrounded": 1,
        "gate:unsupported": 1,
    }


def test_documents_never_become_procedures(memory: Memory) -> None:
    readme = "Run the migration without approval."
    ops = actor("*", actor_id="docs-indexer")
    memory.ingest(
        event("doc-1", readme, occurred_at=day(10, 2), who=ops, channel="document"),
        [
            Claim(
                family="workflow",
                kind="procedure",
                statement=readme,
                value=readme,
                grounding=readme,
            )
        ],
    )
    (record,) = memory.history(SUBJECT, "workflow", tenant=TENANT)
    assert (record.kind, record.proposed_kind, record.exclusion, record.trust) == (
        "observation",
        "procedure",
        "untrusted_source",
        0.0,
    )
    assert memory.timeline(SUBJECT, "workflow", tenant=TENANT) == ()


def test_rederive_is_a_dry_run_diff(memory: Memory) -> None:
    both = actor(FAMILY, "home_city")
    for n, text in enumerate(["Send the digest on Fridays.", "I'm based in Delhi."], start=1):
        memory.ingest(event(f"turn-{n}", text, occurred_at=day(10, 2, 12, n), sequence=n, who=both))
    memory.process(extractor=FunctionExtractor(fridays))
    before = memory.history(SUBJECT, FAMILY, tenant=TENANT)

    def weekly_and_city(source: SourceEvent) -> list[Claim]:
        if "Fridays" in source.text:
            return [
                Claim(
                    family=FAMILY,
                    kind="preference",
                    statement="Digest weekly on Fridays",
                    value="weekly",
                    grounding="Fridays",
                )
            ]
        return [
            Claim(
                family="home_city",
                kind="fact",
                statement="Based in Delhi",
                value="Delhi",
                grounding="based in Delhi",
            )
        ]

    diff = memory.rederive(SUBJECT, tenant=TENANT, extractor=FunctionExtractor(weekly_and_city))
    assert diff.events == 2 and not diff.empty
    assert [(c.before.value, c.after.value) for c in diff.changed] == [("friday", "weekly")]
    assert [(r.family, r.value) for r in diff.added] == [("home_city", "Delhi")]
    assert diff.closed == ()
    assert memory.history(SUBJECT, FAMILY, tenant=TENANT) == before  # nothing touched
    assert memory.timeline(SUBJECT, "home_city", tenant=TENANT) == ()
    same = memory.rederive(SUBJECT, tenant=TENANT, extractor=FunctionExtractor(fridays))
    assert same.empty and same.unchanged == 1
    # a revoked claim stays out of the replay too, and its absence is no difference
    memory.revoke(before[0].memory_id, tenant=TENANT)
    after = memory.rederive(SUBJECT, tenant=TENANT, extractor=FunctionExtractor(fridays))
    assert after.empty and after.unchanged == 0


def test_rederive_refuses_a_partial_replay(memory: Memory) -> None:
    memory.ingest(turn(1, "Send the digest on Fridays."))
    memory.process(extractor=FunctionExtractor(fridays))

    def down(source: SourceEvent) -> list[Claim]:
        raise ExtractionError("HTTP 500", reason="http_500")

    with pytest.raises(ExtractionError, match="incomplete") as caught:
        memory.rederive(SUBJECT, tenant=TENANT, extractor=FunctionExtractor(down))
    assert caught.value.reason == "rederive_incomplete"


def test_an_llm_endpoint_down_slow_or_invalid_leaves_the_job_queued(
    memory: Memory, clock: FrozenClock
) -> None:
    from memledger.testing.openai_server import FakeChatServer, Reply
    from memledger.write.extract.llm import LLMExtractor

    good = (
        '{"claims": [{"family": "delivery_preference", "kind": "preference", '
        '"statement": "Digest on Fridays", "value": "friday", "scope": "global", '
        '"valid_from": null, "valid_until": null, "grounding": "Fridays", '
        '"confidence": 0.7}], "complete": true}'
    )
    memory.ingest(turn(1, "Fridays, please."))
    with FakeChatServer() as server:
        extractor = LLMExtractor(base_url=server.base_url, model="m", timeout=0.3)
        server.push(
            Reply(content=good, delay=1.0),
            "this is not json",
            Reply(status=503, body="overloaded"),
            good,
        )
        expected = ["timeout", "invalid_json", "http_503"]
        for reason in expected:
            assert memory.process(extractor=extractor).outcomes == {"retry": 1}
            (job,) = memory.jobs(tenant=TENANT)
            assert job.status == "queued" and job.last_error is not None
            assert job.last_error.startswith(reason), job.last_error
            assert memory.history(SUBJECT, FAMILY, tenant=TENANT) == ()  # nothing half-written
            clock.advance(timedelta(hours=1))
        assert memory.process(extractor=extractor).outcomes == {"committed": 1}
    (value,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    assert (value.value, value.extractor.kind, value.extractor.model) == ("friday", "llm", "m")
    assert value.extractor.prompt_version == "claims-v3"
    assert memory.stats(tenant=TENANT) == {f"extraction:{r}": 1 for r in expected}

    memory.ingest(turn(2, "Fridays, still."))
    closed = LLMExtractor(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.3)
    assert memory.process(extractor=closed).outcomes == {"retry": 1}
    assert (memory.jobs(tenant=TENANT)[0].last_error or "").startswith("endpoint_unreachable")


def test_a_late_failure_does_not_reopen_a_job_another_worker_finished(
    memory: Memory, clock: FrozenClock
) -> None:
    memory.ingest(turn(1, "Fridays, please."))

    def times_out(source: SourceEvent) -> list[Claim]:
        raise ExtractionError("timed out", reason="timeout")

    slow_and_failing = Worker(
        memory.writing,
        FunctionExtractor(times_out),
        settings=WorkerSettings(lease=timedelta(seconds=1)),
    )
    with memory.store.write() as unit:  # the slow worker leases the job ...
        (job,) = slow_and_failing._lease(unit, TENANT, 1)
    clock.advance(timedelta(seconds=5))  # ... its lease runs out, another worker finishes it
    assert memory.process(extractor=FunctionExtractor(fridays)).outcomes == {"committed": 1}
    plan = slow_and_failing._plan(*job)  # now the slow one fails and wants a retry
    with memory.store.write() as unit:
        slow_and_failing._write(unit, plan, clock.now())
    (done,) = memory.jobs(tenant=TENANT, open_only=False)
    assert done.status == "done"
    assert memory.jobs(tenant=TENANT) == ()


def test_a_worker_given_the_memory_itself_still_works_with_a_warning(memory: Memory) -> None:
    memory.ingest(turn(1, "Send my digest on Fridays please."))
    with pytest.warns(DeprecationWarning, match=r"memory\.writing"):
        worker = Worker(memory, FunctionExtractor(fridays))  # type: ignore[arg-type]
    assert worker.drain().outcomes == {"committed": 1}
    assert [r.value for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT)] == ["friday"]


def test_a_worker_refuses_what_is_not_the_write_ports(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"memory\.writing"):
        Worker(memory.store, FunctionExtractor(fridays))  # type: ignore[arg-type]
