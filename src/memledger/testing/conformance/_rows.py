"""A record read again is read as it is now: a window a correction closed, a
revocation, a mention counted since, whichever read asks (by id, by ids, by event, by
family, the claims of events) and however often it was read before. The windows of
claims alone (``claim_windows``) are those of the claims of events that may hold."""

from __future__ import annotations

from collections.abc import Callable

from memledger.domain.records import MemoryRecord, SourceEvent
from memledger.memory import Memory
from memledger.ports import ClaimWindow
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, UNGRANTED, actor, day, event, pref

FRIDAY = event("evt-friday", "Send it on Fridays", occurred_at=day(10, 2), sequence=1)
MONDAY = event("evt-monday", "Mondays from now on", occurred_at=day(10, 9), sequence=2)
AGAIN = event(
    "evt-again", "Mondays, as I said", occurred_at=day(10, 12), sequence=3, who=actor("*")
)

Read = Callable[[Memory, str], MemoryRecord]


def _reads(event_id: str) -> dict[str, Read]:
    """Every read of the store that hands back a record, each of ``memory_id`` (of the
    event ``event_id``)."""

    def by_id(memory: Memory, memory_id: str) -> MemoryRecord:
        with memory.store.read() as unit:
            found = unit.get_record(TENANT, memory_id)
        assert found is not None
        return found

    def by_ids(memory: Memory, memory_id: str) -> MemoryRecord:
        with memory.store.read() as unit:
            return unit.get_records(TENANT, [memory_id])[memory_id]

    def by_event(memory: Memory, memory_id: str) -> MemoryRecord:
        with memory.store.read() as unit:
            records = unit.event_records(TENANT, event_id, open_only=False)
        return next(r for r in records if r.memory_id == memory_id)

    def by_family(memory: Memory, memory_id: str) -> MemoryRecord:
        with memory.store.read() as unit:
            records = unit.family_records(TENANT, SUBJECT, FAMILY, open_only=False)
        return next(r for r in records if r.memory_id == memory_id)

    def claims(memory: Memory, memory_id: str) -> MemoryRecord:
        with memory.store.read() as unit:
            records = unit.claims_of_events(TENANT, [event_id])
        return next(r for r in records if r.memory_id == memory_id)

    return {
        "get_record": by_id,
        "get_records": by_ids,
        "event_records": by_event,
        "family_records": by_family,
        "claims_of_events": claims,
    }


def _window(record: MemoryRecord) -> ClaimWindow:
    r = record
    return ClaimWindow(
        r.source_event_id, r.subject, r.family, r.scope,
        r.superseded_at, r.valid_from, r.valid_until, r.expires_at,
    )  # fmt: skip


def _stated(memory: Memory, clock: FrozenClock, said: SourceEvent, value: str) -> str:
    """The memory id of the preference ``value`` that ``said`` states, written as it is said."""
    clock.set(said.occurred_at)
    (memory_id,) = [r.memory_id for r in memory.ingest(said, [pref(value)]).results]
    assert memory_id is not None
    return memory_id


def _read_twice(memory: Memory, event_id: str, memory_id: str) -> dict[str, MemoryRecord]:
    """``memory_id`` as each read hands it back, read twice over (the second read must
    agree with the first)."""
    seen: dict[str, MemoryRecord] = {}
    for name, read in _reads(event_id).items():
        first, second = read(memory, memory_id), read(memory, memory_id)
        assert first == second, name
        seen[name] = second
    return seen


class RowChecks:
    def test_a_closed_window_reads_closed_however_often_it_was_read_open(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        friday = _stated(memory, clock, FRIDAY, "friday")
        before = _read_twice(memory, "evt-friday", friday)
        assert {(r.status, r.superseded_at) for r in before.values()} == {("active", None)}
        _stated(memory, clock, MONDAY, "monday")  # closes Friday's window in record time
        after = _read_twice(memory, "evt-friday", friday)
        assert {(r.status, r.superseded_at) for r in after.values()} == {("superseded", day(10, 9))}
        (closed_by,) = {r.closed_by for r in after.values()}
        assert closed_by is not None
        hits = memory.recall("which day is the delivery", tenant=TENANT, subject=SUBJECT)
        assert friday not in {i.record.memory_id for i in hits.items}

    def test_a_revocation_and_a_mention_read_as_they_are_now(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        monday = _stated(memory, clock, MONDAY, "monday")
        before = _read_twice(memory, "evt-monday", monday)
        assert {(r.mentions, r.revision) for r in before.values()} == {(1, 1)}
        _stated(memory, clock, AGAIN, "monday")  # stated again by another event: a mention
        again = _read_twice(memory, "evt-monday", monday)
        assert {r.mentions for r in again.values()} == {2}
        assert {r.confidence for r in again.values()} != {before["get_record"].confidence}
        clock.set(day(10, 15))
        memory.revoke(monday, tenant=TENANT, reason="user asked to forget")
        gone = _read_twice(memory, "evt-monday", monday)
        assert {(r.status, r.superseded_at) for r in gone.values()} == {("revoked", day(10, 15))}
        hits = memory.recall("which day is the delivery", tenant=TENANT, subject=SUBJECT)
        assert monday not in {i.record.memory_id for i in hits.items}

    def test_claim_windows_are_those_of_the_claims_that_may_hold(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        _stated(memory, clock, FRIDAY, "friday")
        said = event("evt-seen", "Weekly, maybe", occurred_at=day(10, 3), who=UNGRANTED)
        memory.ingest(said, [pref("weekly")])  # not granted: an observation
        monday = _stated(memory, clock, MONDAY, "monday")
        events = ["evt-friday", "evt-seen", "evt-monday", "evt-none"]

        def windows() -> list[ClaimWindow]:
            with memory.store.read() as unit:
                found = sorted(unit.claim_windows(TENANT, events), key=repr)
                claims = unit.claims_of_events(TENANT, events)
            held = [_window(r) for r in claims if r.authorised and r.status != "revoked"]
            assert found == sorted(held, key=repr)
            assert any(not r.authorised for r in claims)  # the observation, left out
            return found

        # Friday's closed original and its remnant up to Monday, and Monday
        before = windows()
        assert [(w.event_id, w.superseded_at, w.valid_until) for w in before] == [
            ("evt-friday", None, day(10, 9)),
            ("evt-friday", day(10, 9), None),
            ("evt-monday", None, None),
        ]
        assert [w.holds(day(10, 10), day(10, 10)) for w in before] == [False, False, True]
        assert [w.holds(day(10, 5), day(10, 10)) for w in before] == [True, False, False]
        assert [w.holds(day(10, 9), day(10, 10)) for w in before] == [False, False, True]
        expiring = before[2]._replace(expires_at=day(10, 20))  # expired from then on
        assert [expiring.holds(day(10, 10), now) for now in (day(10, 19), day(10, 20))] == [
            True,
            False,
        ]
        clock.set(day(10, 15))
        memory.revoke(monday, tenant=TENANT, reason="user asked to forget")
        assert [w.event_id for w in windows()] == ["evt-friday", "evt-friday"]
