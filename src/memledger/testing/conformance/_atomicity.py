"""Invariants 1 and 2: idempotent events, atomic events, no lost updates.

Atomicity is checked on every write transaction the library runs: ingesting an
event with its claims, queueing one (``claims=None``), a worker's lease and batch
commit, both revocations and both review decisions
(:data:`~memledger.testing.scenarios.OPERATIONS`). A
failure (a store error) or a kill (``os._exit``) before any write step leaves the
store exactly as before the transaction the step belongs to, and a retry then
gives the state an uninterrupted run gives.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from memledger.domain.records import Claim, SourceEvent
from memledger.errors import EventConflictError, StoreError
from memledger.memory import Memory
from memledger.ports import Store, UnitOfWork
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.conformance._base import SPAWN, UrlFactory
from memledger.testing.scenarios import (
    FAMILY,
    OPERATIONS,
    SUBJECT,
    TENANT,
    Operation,
    Snapshot,
    StepFailpoint,
    crash_operation,
    crash_worker,
    day,
    event,
    ingest_worker,
    overlaps,
    pref,
    snapshot,
)

FIRST = event("evt-1", "Fridays", occurred_at=day(10, 2), sequence=1)
SECOND = event("evt-2", "Daily to Oct 31, Friday from Nov 1", occurred_at=day(10, 19), sequence=2)
SECOND_CLAIMS = (pref("daily", valid_until=day(11, 1, 0)), pref("friday", valid_from=day(11, 1, 0)))
EVENTS = ["evt-1", "evt-2"]


def _run(procs: list[SPAWN.Process]) -> list[int | None]:  # type: ignore[name-defined]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(180)
    return [proc.exitcode for proc in procs]


class InjectedFailure(StoreError):
    """A store failing in the middle of a transaction (a store error: the worker treats
    other exceptions of one job's commit as that job's own, see ``test_guards_worker``)."""


class _Transactions:
    """A store that notes, before each write transaction, the state it starts from.

    With a failpoint that reads ``current``, every write step is tied to the
    transaction it belongs to.
    """

    def __init__(self, store: Store, state: list[Snapshot]) -> None:
        self._store = store
        self.url = store.url
        self.before = state

    @property
    def current(self) -> int:
        return len(self.before) - 1

    def attach(self, memory: Memory, operation: Operation) -> None:
        self._memory, self._operation = memory, operation

    @contextmanager
    def _write(self) -> Iterator[UnitOfWork]:
        self.before.append(_snapshot(self._memory, self._operation))
        with self._store.write() as unit:
            yield unit

    def write(self) -> AbstractContextManager[UnitOfWork]:
        return self._write()

    def read(self) -> AbstractContextManager[UnitOfWork]:
        return self._store.read()

    def scrub(self) -> None:
        self._store.scrub()

    def close(self) -> None:
        self._store.close()


def _snapshot(memory: Memory, operation: Operation) -> Snapshot:
    return snapshot(memory, subjects=operation.subjects, event_ids=operation.event_ids)


def _settled(state: Snapshot) -> Snapshot:
    """``state`` without job attempt counts: an interrupted attempt is rightly counted."""
    jobs = tuple(dataclasses.replace(job, attempts=0) for job in state.job_details)
    return dataclasses.replace(state, job_details=jobs)


def _kill_points(steps: list[tuple[int, str]]) -> list[tuple[int, tuple[int, str]]]:
    """The 1-based steps at which the kill checks kill a child process: the first step of
    each name in each transaction and each transaction's last step, or every step when
    ``HYPOTHESIS_PROFILE=nightly`` (a child process each: spawning is what is slow; the
    in-process failure checks cover every step on every run)."""
    numbered = list(enumerate(steps, start=1))
    if os.environ.get("HYPOTHESIS_PROFILE") == "nightly":
        return numbered
    chosen: dict[int, tuple[int, str]] = {}
    for n, (transaction, step) in numbered:
        if (transaction, step) not in chosen.values():
            chosen[n] = (transaction, step)
    for n, (transaction, step) in numbered:
        if n == len(steps) or steps[n][0] != transaction:  # the transaction's last step
            chosen[n] = (transaction, step)
    return sorted(chosen.items())


def _reference(
    fresh_url: UrlFactory, operation: Operation
) -> tuple[list[tuple[int, str]], list[Snapshot], Snapshot]:
    """An uninterrupted run: its write steps, each with the index of its transaction;
    the state before each transaction; the state after the run."""
    steps: list[tuple[int, str]] = []
    before: list[Snapshot] = []
    holder: list[_Transactions] = []
    clock = FrozenClock(operation.setup_at)
    store = open_store(fresh_url(), failpoint=lambda step: steps.append((holder[0].current, step)))
    recorder = _Transactions(store, before)
    holder.append(recorder)
    memory = Memory(recorder, clock=clock)
    recorder.attach(memory, operation)
    operation.setup(memory)
    steps.clear()
    before.clear()
    clock.set(operation.run_at)
    operation.run(memory)
    after = _snapshot(memory, operation)
    memory.close()
    return steps, before, after


def _set_up(
    url: str, operation: Operation, failpoint: StepFailpoint | None = None
) -> tuple[Memory, FrozenClock]:
    """A memory over the store at ``url`` (with ``failpoint``) holding ``operation``'s
    setup, and its clock, at the setup's time."""
    clock = FrozenClock(operation.setup_at)
    memory = Memory(open_store(url, failpoint=failpoint), clock=clock)
    operation.setup(memory)
    return memory, clock


def _recovers(
    memory: Memory, operation: Operation, *, before: Snapshot, after: Snapshot, where: str
) -> None:
    """``memory``, after ``operation`` was interrupted, holds ``before`` (the state before
    the interrupted transaction), and a retry gives ``after``, the uninterrupted run's
    (but for attempt counts); ``memory`` is closed."""
    assert _snapshot(memory, operation) == before, where
    operation.run(memory)  # the retry
    assert _settled(_snapshot(memory, operation)) == _settled(after), where
    memory.close()


def _raise(error: type[Exception]) -> Callable[[str], None]:
    def act(step: str) -> None:
        raise error(f"injected failure before {step}")

    return act


class AtomicityChecks:
    # -- invariant 1 ---------------------------------------------------------------------

    def test_same_event_1_2_50_times_gives_one_state(self, fresh_url: UrlFactory) -> None:
        states = []
        for times in (1, 2, 50):
            memory = Memory(open_store(fresh_url()), clock=FrozenClock(day(10, 2)))
            receipts = [memory.ingest(FIRST, [pref("friday")]) for _ in range(times)]
            assert [r.duplicate for r in receipts] == [False] + [True] * (times - 1)
            assert len({r.revision(FAMILY) for r in receipts}) == 1
            assert len({r.results for r in receipts}) == 1
            states.append(snapshot(memory, event_ids=["evt-1"]))
            memory.close()
        assert states[0] == states[1] == states[2]
        assert states[0].families == ((SUBJECT, FAMILY, 1, 0),)

    def test_same_event_from_threads(self, memory: Memory) -> None:
        barrier = threading.Barrier(8)
        receipts = []

        def run() -> None:
            barrier.wait()
            receipts.append(memory.ingest(SECOND, SECOND_CLAIMS))

        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r.duplicate for r in receipts) == [False] + [True] * 7
        assert len(memory.history(SUBJECT, FAMILY, tenant=TENANT)) == 2
        assert memory.families(SUBJECT, tenant=TENANT)[0].revision == 1

    def test_same_event_from_processes(self, fresh_url: UrlFactory) -> None:
        once_url, many_url = fresh_url(), fresh_url()
        jobs = [(FIRST, (pref("friday"),)), (SECOND, SECOND_CLAIMS)]
        assert _run([SPAWN.Process(target=ingest_worker, args=(once_url, jobs, day(10, 20)))]) == [
            0
        ]
        procs = [
            SPAWN.Process(target=ingest_worker, args=(many_url, jobs * 3, day(10, 20)))
            for _ in range(3)
        ]
        assert _run(procs) == [0, 0, 0]
        once = Memory(open_store(once_url))
        many = Memory(open_store(many_url))
        assert snapshot(many, event_ids=EVENTS) == snapshot(once, event_ids=EVENTS)
        assert many.families(SUBJECT, tenant=TENANT)[0].revision == 2
        once.close()
        many.close()

    def test_event_id_reused_with_other_content(self, memory: Memory) -> None:
        memory.ingest(FIRST, [pref("friday")])
        before = snapshot(memory, event_ids=["evt-1"])
        other = event("evt-1", "Mondays", occurred_at=day(10, 2), sequence=1)
        with pytest.raises(EventConflictError, match="'evt-1'"):
            memory.ingest(other, [pref("monday")])
        with pytest.raises(EventConflictError):
            memory.ingest(other)
        assert snapshot(memory, event_ids=["evt-1"]) == before

    # -- invariant 2 ---------------------------------------------------------------------

    def _states(self, fresh_url: UrlFactory) -> tuple[list[str], object, object]:
        """The write steps of committing SECOND after FIRST, and the states around it."""
        steps: list[str] = []
        url = fresh_url()
        clock = FrozenClock(day(10, 2))
        memory = Memory(open_store(url, failpoint=steps.append), clock=clock)
        memory.ingest(FIRST, [pref("friday")])
        before = snapshot(memory, event_ids=EVENTS)
        steps.clear()
        clock.set(day(10, 19))
        memory.ingest(SECOND, SECOND_CLAIMS)
        after = snapshot(memory, event_ids=EVENTS)
        memory.close()
        return steps, before, after

    def test_failure_at_every_write_step_is_all_or_nothing(self, fresh_url: UrlFactory) -> None:
        steps, before, after = self._states(fresh_url)
        assert len(steps) >= 10 and before != after
        for crash_at in range(1, len(steps) + 1):
            # counting starts once the pre-state is written
            failpoint = StepFailpoint(crash_at, _raise(RuntimeError), armed=False)

            clock = FrozenClock(day(10, 2))
            memory = Memory(open_store(fresh_url(), failpoint=failpoint), clock=clock)
            memory.ingest(FIRST, [pref("friday")])
            failpoint.arm()
            clock.set(day(10, 19))
            with pytest.raises(RuntimeError, match="injected failure"):
                memory.ingest(SECOND, SECOND_CLAIMS)
            assert snapshot(memory, event_ids=EVENTS) == before, f"failure at {steps[crash_at - 1]}"
            failpoint.disarm()
            memory.ingest(SECOND, SECOND_CLAIMS)  # the retry commits the whole event
            assert snapshot(memory, event_ids=EVENTS) == after, f"retry after {crash_at}"
            memory.close()

    def test_process_killed_at_every_write_step_is_all_or_nothing(
        self, fresh_url: UrlFactory
    ) -> None:
        steps, before, after = self._states(fresh_url)
        for crash_at in range(1, len(steps) + 1):
            url = fresh_url()
            clock = FrozenClock(day(10, 2))
            setup = Memory(open_store(url), clock=clock)
            setup.ingest(FIRST, [pref("friday")])
            setup.close()
            proc = SPAWN.Process(
                target=crash_worker, args=(url, SECOND, SECOND_CLAIMS, crash_at, day(10, 19))
            )
            assert _run([proc]) == [17], "the worker did not reach its crash point"
            clock.set(day(10, 19))
            reopened = Memory(open_store(url), clock=clock)
            assert snapshot(reopened, event_ids=EVENTS) == before, f"killed at {crash_at}"
            reopened.ingest(SECOND, SECOND_CLAIMS)
            assert snapshot(reopened, event_ids=EVENTS) == after
            reopened.close()

    # -- invariants 3 and 4 under concurrency --------------------------------------------

    def test_concurrent_writers_on_one_family_lose_nothing(self, store_url: str) -> None:
        writers, per_writer = 4, 12
        total = writers * per_writer
        events: list[tuple[SourceEvent, tuple[Claim, ...]]] = [
            (
                event(f"evt-{n}", f"value {n}", occurred_at=day(10, 1), sequence=n),
                (pref(f"v{n}"),),
            )
            for n in range(1, total + 1)
        ]
        procs = [
            SPAWN.Process(target=ingest_worker, args=(store_url, events[w::writers], day(10, 1)))
            for w in range(writers)
        ]
        assert _run(procs) == [0] * writers
        memory = Memory(open_store(store_url))
        (slot,) = memory.families(SUBJECT, tenant=TENANT)
        assert slot.revision == total  # every event bumped the revision exactly once
        assert slot.position is not None and slot.position.sequence == total
        history = memory.history(SUBJECT, FAMILY, tenant=TENANT)
        assert sorted(r.source_event_id for r in history) == sorted(e.event_id for e, _ in events)
        assert overlaps(memory) == []
        # whatever the arrival order, the highest sequence wins and is the only open window
        (latest,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
        assert (latest.value, latest.source_event_id) == (f"v{total}", f"evt-{total}")

        def seq(record_event: str) -> int:
            return int(record_event.removeprefix("evt-"))

        applied = sorted(
            (r.revision, seq(r.source_event_id)) for r in history if r.status != "historical"
        )
        sequences = [s for _, s in applied]
        assert sequences == sorted(set(sequences)), "an older sequence changed the current view"
        for r in history:
            if r.status == "historical":  # kept because a later sequence had already applied
                assert any(rev < r.revision and s > seq(r.source_event_id) for rev, s in applied)
        memory.close()

    # -- invariant 2 on every other write transaction -------------------------------------

    @pytest.mark.parametrize("name", sorted(OPERATIONS))
    def test_failure_at_every_step_of_every_write_transaction(
        self, fresh_url: UrlFactory, name: str
    ) -> None:
        operation = OPERATIONS[name]
        steps, before, after = _reference(fresh_url, operation)
        assert steps and before[0] != after, f"{name} writes nothing"
        assert len(before) == operation.transactions, f"{name} split its transaction"
        for crash_at, (transaction, step) in enumerate(steps, start=1):
            # counting starts once the pre-state is written
            failpoint = StepFailpoint(crash_at, _raise(InjectedFailure), armed=False)

            where = f"{name}: failure before step {crash_at} ({step})"
            memory, clock = _set_up(fresh_url(), operation, failpoint)
            failpoint.arm()
            clock.set(operation.run_at)
            with pytest.raises(InjectedFailure):
                operation.run(memory)
            assert failpoint.count == crash_at, where
            failpoint.disarm()
            _recovers(memory, operation, before=before[transaction], after=after, where=where)

    @pytest.mark.parametrize("name", sorted(OPERATIONS))
    def test_process_killed_at_every_step_of_every_write_transaction(
        self, fresh_url: UrlFactory, name: str
    ) -> None:
        operation = OPERATIONS[name]
        steps, before, after = _reference(fresh_url, operation)
        for crash_at, (transaction, step) in _kill_points(steps):
            where = f"{name}: killed before step {crash_at} ({step})"
            url = fresh_url()
            setup, clock = _set_up(url, operation)
            setup.close()
            proc = SPAWN.Process(target=crash_operation, args=(url, name, crash_at))
            assert _run([proc]) == [17], f"{where}: the child did not reach its crash point"
            clock.set(operation.run_at)
            reopened = Memory(open_store(url), clock=clock)
            _recovers(reopened, operation, before=before[transaction], after=after, where=where)
