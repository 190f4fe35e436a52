"""Guards for the worker's batch transaction, its retry budget and the prefilter's rate
limit: each test here fails when the behaviour it names breaks (issue 9, mutation pass)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memledger import Claim, ExtractionError, Memory, SourceEvent
from memledger.domain.prefilter import PrefilterSettings, prefilter
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import FAMILY, TENANT, day, event, pref
from memledger.write.worker import WorkerSettings

SUBJECTS = ("user-1", "user-2", "user-3")
TEXT = "Send my digest on Fridays please."


def fridays(source: SourceEvent) -> list[Claim]:
    return [pref("friday", grounding="Fridays")]


class Poison:
    """A failpoint that raises a plain (non-store) error before the ``nth`` write of
    ``step``: with one ``put_outcome`` per committed job, the second job's commit fails
    after it has already written its records, history, outbox rows and family slot."""

    def __init__(self, step: str, nth: int) -> None:
        self.step, self.nth, self.seen, self.armed = step, nth, 0, False

    def __call__(self, step: str) -> None:
        if not self.armed or step != self.step:
            return
        self.seen += 1
        if self.seen == self.nth:
            raise RuntimeError("poisoned commit")


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 2))


def _open(path: Path, clock: FrozenClock, poison: Poison | None = None) -> Memory:
    return Memory(open_store(path, failpoint=poison), clock=clock)


def _queue_three(memory: Memory) -> None:
    for n, subject in enumerate(SUBJECTS):
        memory.ingest(event(f"e{n}", TEXT, occurred_at=day(10, 2), subject=subject, sequence=1))


def _state(memory: Memory) -> dict[str, object]:
    """Everything the batch writes, per subject, without record times."""
    state: dict[str, object] = {}
    for subject in SUBJECTS:
        slots = memory.families(subject, tenant=TENANT)
        state[subject] = (
            [(s.family, s.revision, s.generation) for s in slots],
            [
                (r.family, r.kind, r.value, r.status, r.revision, r.source_event_id)
                for s in slots
                for r in memory.history(subject, s.family, tenant=TENANT)
            ],
            [
                (h.family, h.action, h.revision, h.status, h.cause)
                for s in slots
                for h in memory.changes(subject, s.family, tenant=TENANT)
            ],
        )
    with memory.store.read() as unit:
        state["outbox"] = sorted(
            (e.subject, e.family, e.revision, e.op)
            for e in unit.outbox_after(0, limit=1000)
            if e.tenant == TENANT
        )
        state["outcomes"] = [
            getattr(unit.get_outcome(TENANT, f"e{n}"), "outcome", None)
            for n in range(len(SUBJECTS))
        ]
    return state


# -- items 1 and 2: one poisoned job is rolled back alone and retried -------------------------


def test_a_job_whose_commit_raises_is_rolled_back_alone_and_retried(
    tmp_path: Path, clock: FrozenClock
) -> None:
    settings = WorkerSettings(backoff=timedelta(seconds=5))
    reference = _open(tmp_path / "ref.db", clock)
    _queue_three(reference)
    assert reference.process(extractor=FunctionExtractor(fridays), settings=settings).outcomes == {
        "committed": 3
    }
    untouched = _state(reference)
    reference.close()

    poison = Poison("put_outcome", 2)
    memory = _open(tmp_path / "m.db", clock, poison)
    _queue_three(memory)
    poison.armed = True
    report = memory.process(extractor=FunctionExtractor(fridays), settings=settings)
    poison.armed = False
    assert poison.seen >= 2, "the poison never fired: the write steps changed"
    # the other jobs of the batch committed; the poisoned one is queued again
    assert report.outcomes == {"committed": 2, "retry": 1}
    jobs = {j.event_id: j for j in memory.jobs(tenant=TENANT, open_only=False)}
    assert (jobs["e0"].status, jobs["e2"].status) == ("done", "done")
    assert jobs["e1"].status == "queued" and jobs["e1"].attempts == 1
    assert (jobs["e1"].last_error or "").startswith("commit_failed: RuntimeError: poisoned")
    assert jobs["e1"].next_attempt_at == clock.now() + timedelta(seconds=5)
    assert memory.stats(tenant=TENANT) == {"commit:failed": 1}
    # its half-written rows are gone: no slot, record, history, outbox row or outcome
    state = _state(memory)
    assert state["user-2"] == ([], [], [])
    assert [row for row in state["outbox"] if row[0] == "user-2"] == []  # type: ignore[union-attr]
    assert state["outcomes"] == ["committed", "queued", "committed"]
    assert state["user-1"] == untouched["user-1"] and state["user-3"] == untouched["user-3"]
    # the retry commits it once, as if nothing had happened
    clock.advance(timedelta(seconds=5))
    assert memory.process(extractor=FunctionExtractor(fridays), settings=settings).outcomes == {
        "committed": 1
    }
    assert _state(memory) == untouched
    assert memory.timeline("user-2", FAMILY, tenant=TENANT)[0].value == "friday"
    memory.close()


# -- item 5: the default retry budget -----------------------------------------------------------


def test_a_job_that_always_fails_is_tried_exactly_eight_times_by_default(
    tmp_path: Path, clock: FrozenClock
) -> None:
    def down(source: SourceEvent) -> list[Claim]:
        raise ExtractionError("connection refused", reason="endpoint_unreachable")

    extractor = FunctionExtractor(down)
    memory = _open(tmp_path / "m.db", clock)
    memory.ingest(event("e0", TEXT, occurred_at=day(10, 2), sequence=1))
    outcomes: list[str] = []
    for _ in range(12):  # more rounds than attempts: the job must stop on its own
        outcomes.extend(sorted(memory.process(extractor=extractor).outcomes.elements()))
        clock.advance(WorkerSettings().max_backoff)  # every backoff has run out
    assert outcomes == ["retry"] * 7 + ["failed"]
    assert extractor.calls == 8
    (job,) = memory.jobs(tenant=TENANT)
    assert (job.status, job.attempts) == ("failed", 8)
    assert memory.stats(tenant=TENANT) == {"extraction:endpoint_unreachable": 8}
    memory.close()


# -- item 4: the rate limit's boundary ---------------------------------------------------------


def test_the_rate_limit_admits_thirty_turns_a_minute_and_not_thirty_one() -> None:
    calm = "A calm message about Fridays"
    assert PrefilterSettings().max_turns_per_minute == 30
    assert prefilter(calm, turns_last_minute=30) is None
    assert prefilter(calm, turns_last_minute=31) == "rate_limited"
    three = PrefilterSettings(max_turns_per_minute=3)
    assert prefilter(calm, turns_last_minute=3, settings=three) is None
    assert prefilter(calm, turns_last_minute=4, settings=three) == "rate_limited"


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    memory = _open(tmp_path / "m.db", clock)
    yield memory
    memory.close()


def test_the_worker_counts_the_turn_itself_within_the_minute(memory: Memory) -> None:
    """Thirty turns of one subject within one minute are all extracted (each counts the
    thirty, itself included); a thirty-first in that minute is rate limited."""
    for n in range(30):
        at = day(10, 2) + timedelta(seconds=2 * n)
        memory.ingest(event(f"t{n}", f"Turn {n} about Fridays", occurred_at=at, sequence=n))
    report = memory.process(extractor=FunctionExtractor(fridays))
    assert report.outcomes == {"committed": 30}
    memory.ingest(event("t30", "Turn 30 about Fridays", occurred_at=day(10, 2, 12, 1), sequence=30))
    assert memory.process(extractor=FunctionExtractor(fridays)).outcomes == {"prefiltered": 1}
    assert memory.stats(tenant=TENANT) == {"prefilter:rate_limited": 1}
