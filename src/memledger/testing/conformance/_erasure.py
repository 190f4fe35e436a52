"""Invariant 7, the second clock: erasure deletes what memory holds, leaves a receipt
and a tombstone, and nothing of it survives in any table of the canonical store."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from memledger.domain.records import Claim, SourceEvent
from memledger.errors import (
    EventErasedError,
    EventNotFoundError,
    InvalidInputError,
    MemoryNotFoundError,
    NotFoundError,
)
from memledger.memory import Memory
from memledger.read.hot import hot_key
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event, fact, snapshot
from memledger.write.worker import episode_of

ANYONE = actor("*")
SECRET = "Quorvale"
TEXT = f"I moved to {SECRET} last week and I work at Initech."


def _move(memory: Memory, event_id: str = "evt-move", subject: str = SUBJECT) -> dict[str, str]:
    said = event(event_id, TEXT, occurred_at=day(3, 1), who=ANYONE, subject=subject)
    city = fact("home_city", f"Lives in {SECRET}", SECRET, grounding=f"moved to {SECRET}")
    work = fact("employer", "Works at Initech", "Initech", grounding="work at Initech")
    receipt = memory.ingest(said, [city, work, episode_of(said)])
    assert receipt.outcome == "committed"
    return {r.family: r.memory_id for r in receipt.results if r.memory_id is not None}


def _table_text(memory: Memory) -> str:
    """Every row of every table of the canonical store, as text."""
    postgres = memory.store.url.startswith(("postgresql://", "postgres://"))
    listing = (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        if postgres
        else "SELECT name FROM sqlite_master WHERE type = 'table'"
    )
    out: list[str] = []
    with memory.store.read() as unit:
        conn = unit.conn  # type: ignore[attr-defined]
        for (table,) in conn.execute(listing, ()).fetchall():
            for row in conn.execute(f'SELECT * FROM "{table}"', ()).fetchall():
                out.append(f"{table}: {row!r}")
    return "\n".join(out)


class ErasureChecks:
    def test_an_erased_event_leaves_no_content_and_a_receipt(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        ids = _move(memory)
        kept = event("evt-kept", "Fridays suit me.", occurred_at=day(3, 2), who=ANYONE)
        memory.ingest(kept, [episode_of(kept)])
        assert SECRET in _table_text(memory)
        clock.set(day(3, 5))
        receipt = memory.erase(tenant=TENANT, event="evt-move", reason="user asked")
        assert receipt.events == ("evt-move",) and receipt.scope == "event"
        assert set(receipt.memory_ids) >= set(ids.values()) and receipt.subjects == (SUBJECT,)
        assert [s.store for s in receipt.stores] == [
            "ledger", "traces", "ledger_files", "index", "hot_cache"
        ]  # fmt: skip
        assert receipt.complete and receipt.store("ledger").status == "erased"
        assert receipt.store("traces").status == "nothing_held"  # an event's: ids only
        assert receipt.store("ledger").at == day(3, 5)
        assert SECRET not in _table_text(memory)
        with pytest.raises(MemoryNotFoundError):
            memory.get(ids["home_city"], tenant=TENANT)
        with pytest.raises(EventNotFoundError):
            memory.event("evt-move", tenant=TENANT)
        # history keeps that the records existed and were erased, not what they said
        changes = memory.changes(SUBJECT, "home_city", tenant=TENANT)
        assert [c.action for c in changes][-1] == "erased"
        assert {c.memory_id for c in changes if c.action == "erased"} == {ids["home_city"]}
        # the rest stays, and the receipt is kept
        assert memory.event("evt-kept", tenant=TENANT).text == "Fridays suit me."
        (stored,) = memory.erasures(tenant=TENANT)
        assert stored == receipt

    def test_a_replay_of_an_erased_event_is_refused(self, memory: Memory) -> None:
        _move(memory)
        memory.erase(tenant=TENANT, event="evt-move")
        said = event("evt-move", TEXT, occurred_at=day(3, 1), who=ANYONE)
        state = snapshot(memory)
        with pytest.raises(EventErasedError, match="erased"):
            memory.ingest(said)
        with pytest.raises(EventErasedError):
            memory.ingest(said, [fact("home_city", f"Lives in {SECRET}", SECRET)])
        assert snapshot(memory) == state and SECRET not in _table_text(memory)

    def test_erasing_a_memory_erases_the_event_it_came_from(self, memory: Memory) -> None:
        ids = _move(memory)
        receipt = memory.erase(tenant=TENANT, memory_id=ids["employer"])
        assert receipt.events == ("evt-move",) and receipt.scope == "memory"
        assert "Initech" not in _table_text(memory) and SECRET not in _table_text(memory)

    def test_erasing_a_subject_leaves_other_subjects_alone(self, memory: Memory) -> None:
        _move(memory, "evt-a", subject="alice")
        bob = _move(memory, "evt-b", subject="bob")
        about = Claim(
            family="home_city",
            kind="fact",
            statement="Alice lives in Brindlemoor",
            value="Brindlemoor",
            subject="alice",
        )
        told = event(
            "evt-told", "Alice lives in Brindlemoor now.", occurred_at=day(3, 2), who=ANYONE,
            subject="bob",
        )  # fmt: skip
        memory.ingest(told, [about])
        receipt = memory.erase(tenant=TENANT, subject="alice")
        assert receipt.events == ("evt-a", "evt-told")  # its own, and what was said of it
        assert set(receipt.subjects) == {"alice", "bob"}
        text = _table_text(memory)
        assert "Brindlemoor" not in text
        assert memory.get(bob["home_city"], tenant=TENANT).value == SECRET  # bob's stays
        assert memory.erase(tenant=TENANT, subject="alice").events == ()  # nothing left

    def test_the_subjects_an_event_wrote_about_lose_their_cached_values(
        self, memory: Memory
    ) -> None:
        about = Claim(
            family="home_city", kind="fact", statement=f"Alice lives in {SECRET}",
            value=SECRET, subject="alice",
        )  # fmt: skip
        told = event("evt-told", f"Alice lives in {SECRET}.", occurred_at=day(3, 2), who=ANYONE)
        memory.ingest(told, [about])
        memory.hot.current(memory.reading, tenant=TENANT, subject="alice")  # cached (as it stands)
        key = hot_key(memory.store, TENANT, "alice")
        assert memory.hot.cache.get(key) is not None
        receipt = memory.erase(tenant=TENANT, event="evt-told")
        assert receipt.subjects == ("alice", SUBJECT)
        assert memory.hot.cache.get(key) is None

    def test_a_queued_job_of_an_erased_event_is_gone(self, memory: Memory) -> None:
        queued = memory.ingest(event("evt-q", TEXT, occurred_at=day(3, 1), who=ANYONE))
        assert queued.job_id is not None and len(memory.jobs(tenant=TENANT)) == 1
        receipt = memory.erase(tenant=TENANT, event="evt-q")
        assert "1 jobs" in receipt.store("ledger").detail
        assert memory.jobs(tenant=TENANT, open_only=False) == ()
        with pytest.raises(NotFoundError):
            memory.commit_job(queued.job_id, [fact("home_city", "x", SECRET)], tenant=TENANT)
        assert SECRET not in _table_text(memory)

    def test_a_job_in_flight_when_its_event_is_erased_brings_nothing_back(
        self, memory: Memory
    ) -> None:
        """Seed 000's acceptance test with erasure: the job is leased, the event erased
        while the extractor runs, then the job commits. Nothing it proposes is kept."""
        memory.ingest(event("evt-q", TEXT, occurred_at=day(3, 1), who=ANYONE))
        erased: list[str] = []

        def extract(source: SourceEvent) -> list[Claim]:
            erased.append(memory.erase(tenant=TENANT, event=source.event_id).erasure_id)
            return [fact("home_city", f"Lives in {SECRET}", SECRET, grounding=f"to {SECRET}")]

        report = memory.process(extractor=FunctionExtractor(extract))
        assert len(erased) == 1 and report.jobs == 1
        assert memory.current(SUBJECT, "home_city", tenant=TENANT, valid_at=day(3, 5)) == ()
        assert memory.timeline(SUBJECT, "conversation", tenant=TENANT) == ()
        assert SECRET not in _table_text(memory)

    def test_erasing_again_finishes_and_changes_nothing_else(self, memory: Memory) -> None:
        _move(memory)
        first = memory.erase(tenant=TENANT, event="evt-move")
        state = snapshot(memory)
        again = memory.erase(tenant=TENANT, event="evt-move")
        assert again.events == () and again.store("ledger").status == "nothing_held"
        assert again.events == () and first.events == ("evt-move",)
        assert snapshot(memory) == state
        body = json.dumps(again.to_dict())
        assert SECRET not in body and "Initech" not in body  # receipts hold ids only

    def test_bad_erasures_change_nothing(self, memory: Memory) -> None:
        ids = _move(memory)
        state = snapshot(memory)
        with pytest.raises(InvalidInputError):
            memory.erase(tenant=TENANT)
        with pytest.raises(InvalidInputError):
            memory.erase(tenant=TENANT, event="evt-move", subject=SUBJECT)
        with pytest.raises(EventNotFoundError):
            memory.erase(tenant=TENANT, event="evt-nope")
        with pytest.raises(MemoryNotFoundError):
            memory.erase(tenant=TENANT, memory_id="mem-nope")
        with pytest.raises(InvalidInputError):
            memory.erase(tenant=TENANT, event="evt-move", reason=" ")
        with pytest.raises(MemoryNotFoundError):
            memory.erase(tenant="globex", memory_id=ids["home_city"])  # another tenant's
        assert snapshot(memory) == state and memory.erasures(tenant=TENANT) == ()


def _fact(value: str, *, expires_at: datetime | None = None) -> Claim:
    return Claim(
        family="home_city",
        kind="fact",
        statement=f"Lives in {value}",
        value=value,
        expires_at=expires_at,
    )


class ExpiryChecks:
    def test_a_record_past_its_expiry_leaves_every_read_at_once(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        said = event("evt-ttl", f"I am in {SECRET} this week.", occurred_at=day(3, 1), who=ANYONE)
        clock.set(day(3, 1, 13))
        (result,) = memory.ingest(said, [_fact(SECRET, expires_at=day(3, 3))]).results
        assert result.memory_id is not None
        assert memory.get(result.memory_id, tenant=TENANT).expires_at == day(3, 3)
        assert [r.value for r in memory.current(SUBJECT, "home_city", tenant=TENANT)] == [SECRET]
        clock.set(day(3, 3))  # the expiry is due: no read returns it, no erasure yet
        assert memory.current(SUBJECT, "home_city", tenant=TENANT) == ()
        assert memory.timeline(SUBJECT, "home_city", tenant=TENANT) == ()
        assert memory.history(SUBJECT, "home_city", tenant=TENANT) == ()
        audit = memory.history(SUBJECT, "home_city", tenant=TENANT, include_revoked=True)
        assert [r.value for r in audit] == [SECRET]  # an audit still sees it until erased
        held_then = memory.current(SUBJECT, "home_city", tenant=TENANT, as_of=day(3, 2))
        assert [r.value for r in held_then] == [SECRET]  # it was held before its expiry
        assert memory.current(SUBJECT, "home_city", tenant=TENANT, as_of=day(3, 4)) == ()
        assert SECRET in _table_text(memory)

    def test_expiry_erases_records_and_the_events_left_with_none(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        clock.set(day(3, 1, 13))
        memory.set_retention("episode", 2, tenant=TENANT)
        said = event("evt-ttl", f"I live in {SECRET} now.", occurred_at=day(3, 1), who=ANYONE)
        kept = memory.ingest(said, [_fact(SECRET, expires_at=day(3, 10)), episode_of(said)])
        ids = {r.family: r.memory_id for r in kept.results if r.memory_id is not None}
        episode = memory.get(ids["conversation"], tenant=TENANT)
        assert episode.expires_at == day(3, 3, 13)  # written + 2 days of retention
        assert memory.expire() == ()  # nothing is due yet
        clock.set(day(3, 4))
        (first,) = memory.expire()
        assert first.scope == "expiry" and first.memory_ids == (ids["conversation"],)
        assert first.events == ()  # the event still gives the fact: it stays
        assert memory.event("evt-ttl", tenant=TENANT).text == said.text
        with pytest.raises(MemoryNotFoundError):
            memory.get(ids["conversation"], tenant=TENANT)
        clock.set(day(3, 10))
        (second,) = memory.expire(tenant=TENANT)
        assert second.memory_ids == (ids["home_city"],) and second.events == ("evt-ttl",)
        assert SECRET not in _table_text(memory)
        with pytest.raises(EventErasedError):
            memory.ingest(said)
        assert memory.erasures(tenant=TENANT) == (first, second)
        assert memory.expire() == ()

    def test_a_retention_reaches_records_already_held_and_only_shortens(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        clock.set(day(3, 1, 13))
        said = event("evt-ep", f"Hello from {SECRET}.", occurred_at=day(3, 1), who=ANYONE)
        (result,) = memory.ingest(said, [episode_of(said)]).results
        assert result.memory_id is not None
        assert memory.get(result.memory_id, tenant=TENANT).expires_at is None
        assert memory.set_retention("episode", 30, tenant=TENANT) == 1
        assert memory.retention(tenant=TENANT) == {"episode": 30}
        assert memory.get(result.memory_id, tenant=TENANT).expires_at == day(3, 31, 13)
        assert memory.set_retention("episode", 365, tenant=TENANT) == 0  # never extended
        assert memory.get(result.memory_id, tenant=TENANT).expires_at == day(3, 31, 13)
        assert memory.set_retention("episode", None, tenant=TENANT) == 0
        assert memory.retention(tenant=TENANT) == {}
        assert memory.retention(tenant="globex") == {}

    def test_bad_expiries_and_retentions_change_nothing(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        said = event("evt-ttl", f"I am in {SECRET}.", occurred_at=day(3, 1), who=ANYONE)
        state = snapshot(memory, event_ids=["evt-ttl"])
        with pytest.raises(InvalidInputError, match="not after its event"):
            memory.ingest(said, [_fact(SECRET, expires_at=day(3, 1))])
        with pytest.raises(InvalidInputError, match="expires_at"):
            _fact(SECRET, expires_at=datetime(2026, 3, 5))  # no time zone
        for kind, days in (("nonsense", 3), ("episode", 0), ("episode", 2.5), ("fact", True)):
            with pytest.raises(InvalidInputError):
                memory.set_retention(kind, days, tenant=TENANT)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            memory.expire(batch=0)
        assert snapshot(memory, event_ids=["evt-ttl"]) == state
        assert memory.retention(tenant=TENANT) == {}
