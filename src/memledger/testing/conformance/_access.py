"""Decay's clock as the store keeps it: when reads last handed a memory out (accesses)
and when another event stated it again (mentions); erasure takes both."""

from __future__ import annotations

from memledger.memory import Memory
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event, fact

ANYONE = actor("*")


def _stated(memory: Memory, event_id: str, family: str, text: str, value: str) -> str:
    """``value`` of ``family``, stated by ``event_id`` (``text``) on March 1st; its id."""
    said = event(event_id, text, occurred_at=day(3, 1), who=ANYONE)
    receipt = memory.ingest(said, [fact(family, text.rstrip("."), value, grounding=value)])
    (result,) = receipt.results
    assert result.memory_id is not None
    return result.memory_id


def _works(memory: Memory, event_id: str, month: int) -> str:
    """``Works at Initech``, stated by ``event_id`` on the 1st of ``month``; its memory id."""
    said = event(event_id, "I work at Initech.", occurred_at=day(month, 1), who=ANYONE)
    claim = fact("employer", "Works at Initech", "Initech", grounding="work at Initech")
    receipt = memory.ingest(said, [claim])
    (result,) = receipt.results
    assert result.memory_id is not None
    return result.memory_id


class AccessChecks:
    def test_accesses_keep_the_latest_time_and_add_the_counts(self, memory: Memory) -> None:
        works = _works(memory, "evt-1", 3)
        with memory.store.write() as unit:
            assert unit.record_accesses(TENANT, {works: (day(5, 1), 2)}) == 1
        with memory.store.write() as unit:  # an older time does not move it back
            unit.record_accesses(TENANT, {works: (day(4, 1), 1)})
        with memory.store.write() as unit:  # a memory the store does not hold gets no row
            assert unit.record_accesses(TENANT, {"mem-nothing": (day(5, 1), 1)}) == 0
            assert unit.record_accesses("other-tenant", {works: (day(5, 1), 1)}) == 0
        with memory.store.read() as unit:
            assert unit.access_counts(TENANT, [works, "mem-nothing"]) == {works: 3}
            assert unit.access_counts("other-tenant", [works]) == {}
            assert unit.last_touched(TENANT, [works], before=day(6, 1)) == {works: day(5, 1)}
            assert unit.last_touched(TENANT, [works], before=day(4, 30)) == {}

    def test_a_flush_of_many_memories_writes_each_of_those_held(self, memory: Memory) -> None:
        """Hundreds of memories in one call (more than one statement's worth): each memory
        the tenant holds gets its own time and count, the others nothing."""
        held = [
            _stated(memory, f"evt-{n}", family, f"I {verb} {value}.", value)
            for n, (family, verb, value) in enumerate(
                [("employer", "work at", "Initech"), ("home_city", "live in", "Porto")]
            )
        ]
        missing = {f"mem-missing-{n:04d}": (day(5, 1), 1) for n in range(900)}
        with memory.store.write() as unit:
            first = {held[0]: (day(5, 1), 2), held[1]: (day(6, 1), 1)}
            assert unit.record_accesses(TENANT, {**missing, **first}) == 2
        with memory.store.write() as unit:  # one later, one older: each kept on its own
            assert (
                unit.record_accesses(
                    TENANT, {held[0]: (day(4, 1), 1), held[1]: (day(7, 1), 3), **missing}
                )
                == 2
            )
        with memory.store.read() as unit:
            assert unit.access_counts(TENANT, [*held, *missing]) == {held[0]: 3, held[1]: 4}
            assert unit.last_touched(TENANT, held, before=day(8, 1)) == {
                held[0]: day(5, 1),
                held[1]: day(7, 1),
            }

    def test_a_mention_touches_at_the_time_its_event_occurred(self, memory: Memory) -> None:
        works = _works(memory, "evt-1", 3)
        assert _works(memory, "evt-2", 7) == works  # stated again: a NOOP mention
        with memory.store.read() as unit:
            assert unit.last_touched(TENANT, [works], before=day(8, 1)) == {works: day(7, 1)}
            assert unit.last_touched(TENANT, [works], before=day(6, 1)) == {}
        with memory.store.write() as unit:  # the later of a read and a mention counts
            unit.record_accesses(TENANT, {works: (day(6, 1), 1)})
        with memory.store.read() as unit:
            assert unit.last_touched(TENANT, [works], before=day(6, 15)) == {works: day(6, 1)}
            assert unit.last_touched(TENANT, [works], before=day(8, 1)) == {works: day(7, 1)}

    def test_erasure_takes_the_access_rows(self, memory: Memory, clock: FrozenClock) -> None:
        works = _works(memory, "evt-1", 3)
        memory.recall("where do I work", tenant=TENANT, subject=SUBJECT)
        memory.flush_accesses()
        with memory.store.read() as unit:
            assert unit.access_counts(TENANT, [works]) == {works: 1}
        memory.erase(subject=SUBJECT, tenant=TENANT, reason="asked")
        with memory.store.read() as unit:
            assert unit.access_counts(TENANT, [works]) == {}
            rows = unit.conn.execute("SELECT * FROM record_access", ()).fetchall()  # type: ignore[attr-defined]
        assert rows == []
