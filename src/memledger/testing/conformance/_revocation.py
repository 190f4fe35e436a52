"""Invariant 7: no resurrection. Revocation, late jobs and replays."""

from __future__ import annotations

import pytest

from memledger.errors import MemoryNotFoundError, NotFoundError
from memledger.memory import Memory
from memledger.testing import FrozenClock
from memledger.testing.scenarios import (
    FAMILY,
    SUBJECT,
    TENANT,
    actor,
    day,
    event,
    pref,
    snapshot,
)

OLD = event("evt-old", "Send it on Fridays", occurred_at=day(10, 2), sequence=1)


class RevocationChecks:
    def test_late_job_and_replay_never_resurrect(self, memory: Memory, clock: FrozenClock) -> None:
        first = memory.ingest(OLD, [pref("friday")])
        (kept,) = [r.memory_id for r in first.results if r.memory_id is not None]
        # a re-extraction of another old event is queued under generation 0 ...
        queued = memory.ingest(
            event("evt-old-2", "Fridays, as I said", occurred_at=day(10, 3), sequence=2)
        )
        assert queued.outcome == "queued" and queued.job_id is not None
        (job,) = memory.jobs(tenant=TENANT)
        assert job.generations == {FAMILY: 0}
        # ... then the user's memory is revoked, and the revocation acknowledged
        clock.set(day(10, 5))
        ack = memory.revoke(kept, tenant=TENANT, reason="user asked to forget")
        assert ack.revoked == (kept,) and ack.generation == 1
        assert memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 6)) == ()
        assert memory.get(kept, tenant=TENANT).status == "revoked"
        # the late job finishes: its claim is a stale candidate and writes nothing
        late = memory.commit_job(job.job_id, [pref("friday")], tenant=TENANT)
        assert [(r.disposition, r.reason) for r in late.results] == [
            ("rejected", "stale_generation")
        ]
        # replays of both source events change nothing either
        state = snapshot(memory, event_ids=["evt-old", "evt-old-2"])
        assert memory.ingest(OLD, [pref("friday")]).duplicate
        assert memory.ingest(OLD).duplicate
        assert memory.commit_job(job.job_id, [pref("friday")], tenant=TENANT).duplicate
        assert snapshot(memory, event_ids=["evt-old", "evt-old-2"]) == state
        assert memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 6)) == ()
        assert memory.jobs(tenant=TENANT) == ()
        # a new authorised event sets a new value under the new generation
        new = memory.ingest(
            event("evt-new", "Mondays from now on", occurred_at=day(10, 7), sequence=3),
            [pref("monday")],
        )
        (value,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 8))
        assert value.value == "monday" and value.generation == 1
        assert new.revisions[0].generation == 1

    def test_revoking_a_family_closes_everything(self, memory: Memory, clock: FrozenClock) -> None:
        clock.set(day(10, 2))
        memory.ingest(OLD, [pref("friday")])
        memory.ingest(
            event(
                "evt-obs",
                "Mondays!",
                occurred_at=day(10, 3),
                who=actor(authenticated=False, actor_id="someone"),
            ),
            [pref("monday")],
        )
        clock.set(day(10, 5))
        ack = memory.revoke_family(SUBJECT, FAMILY, tenant=TENANT, reason="erasure request")
        assert len(ack.revoked) == 2
        assert memory.history(SUBJECT, FAMILY, tenant=TENANT) == ()  # no value in any view
        history = memory.history(SUBJECT, FAMILY, tenant=TENANT, include_revoked=True)
        assert {r.status for r in history} == {"revoked"} and len(history) == 2
        assert all(r.superseded_at is not None for r in history)
        assert memory.timeline(SUBJECT, FAMILY, tenant=TENANT) == ()
        # audits can still see what was believed before the revocation, marked revoked
        audit = memory.current(
            SUBJECT,
            FAMILY,
            tenant=TENANT,
            valid_at=day(10, 4),
            as_of=day(10, 4),
            include_revoked=True,
        )
        assert [(r.value, r.status) for r in audit] == [("friday", "revoked")]
        assert (
            memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 4), as_of=day(10, 4))
            == ()
        )
        revoked_changes = [
            c for c in memory.changes(SUBJECT, FAMILY, tenant=TENANT) if c.action == "revoked"
        ]
        assert len(revoked_changes) == 2

    def test_revoking_a_cut_claim_revokes_its_remnants(self, memory: Memory) -> None:
        first = memory.ingest(OLD, [pref("friday")])
        memory.ingest(
            event("evt-mid", "Daily in mid October", occurred_at=day(10, 10), sequence=2),
            [pref("daily", valid_from=day(10, 10), valid_until=day(10, 20))],
        )
        timeline = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
        assert [r.value for r in timeline] == ["friday", "daily", "friday"]
        (cut,) = [r.memory_id for r in first.results if r.memory_id is not None]
        memory.revoke(cut, tenant=TENANT)
        assert [r.value for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT)] == ["daily"]

    def test_revoked_claims_leave_past_views_too(self, memory: Memory, clock: FrozenClock) -> None:
        clock.set(day(10, 2))
        first = memory.ingest(OLD, [pref("friday")])
        clock.set(day(10, 10))
        memory.ingest(
            event("evt-mid", "Daily from Oct 10", occurred_at=day(10, 10), sequence=2),
            [pref("daily")],
        )
        (remnant,) = [
            r
            for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
            if r.source_event_id == "evt-old"
        ]
        assert remnant.supersedes == first.results[0].memory_id
        clock.set(day(10, 12))
        memory.revoke(remnant.memory_id, tenant=TENANT)
        # the original record was closed as superseded, not revoked; it still never comes back
        for as_of in (day(10, 3), day(10, 11), None):
            view = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 5), as_of=as_of)
            assert view == (), as_of
        audit = memory.current(
            SUBJECT,
            FAMILY,
            tenant=TENANT,
            valid_at=day(10, 5),
            as_of=day(10, 3),
            include_revoked=True,
        )
        assert [r.value for r in audit] == ["friday"]

    def test_a_retried_revocation_changes_nothing(self, memory: Memory) -> None:
        first = memory.ingest(OLD, [pref("friday")])
        (kept,) = [r.memory_id for r in first.results if r.memory_id is not None]
        ack = memory.revoke(kept, tenant=TENANT)
        state = snapshot(memory)
        again = memory.revoke(kept, tenant=TENANT)
        assert again.revoked == () and (again.revision, again.generation) == (
            ack.revision,
            ack.generation,
        )
        assert snapshot(memory) == state

    def test_revoked_sources_read_together_match_one_by_one(self, memory: Memory) -> None:
        with memory.store.write() as unit:
            unit.add_revoked_source(TENANT, SUBJECT, FAMILY, event_id="evt-a", generation=1)
            unit.add_revoked_source(TENANT, SUBJECT, FAMILY, event_id="evt-b", generation=1)
            unit.add_revoked_source(TENANT, "bob", FAMILY, event_id="evt-c", generation=1)
            unit.add_revoked_source(TENANT, SUBJECT, "likes", event_id="evt-d", generation=1)
            unit.add_revoked_source("other", "bob", FAMILY, event_id="evt-e", generation=1)
        keys = [(SUBJECT, FAMILY), ("bob", FAMILY), ("bob", "likes"), (SUBJECT, FAMILY)]
        with memory.store.read() as unit:
            together = unit.revoked_sources_of(TENANT, keys)
            alone = {key: unit.revoked_sources(TENANT, *key) for key in keys}
            assert unit.revoked_sources_of(TENANT, []) == {}
        assert together == alone
        assert together == {
            (SUBJECT, FAMILY): {"evt-a", "evt-b"},
            ("bob", FAMILY): {"evt-c"},
            ("bob", "likes"): frozenset(),
        }

    def test_a_decided_event_leaves_no_job_open(self, memory: Memory) -> None:
        queued = memory.ingest(OLD)
        assert queued.outcome == "queued" and len(memory.jobs(tenant=TENANT)) == 1
        assert memory.ingest(OLD).duplicate  # queueing again queues nothing more
        assert len(memory.jobs(tenant=TENANT, open_only=False)) == 1
        committed = memory.ingest(OLD, [pref("friday")])  # a caller decides it directly
        assert committed.outcome == "committed" and not committed.duplicate
        assert memory.jobs(tenant=TENANT) == ()
        assert queued.job_id is not None
        late = memory.commit_job(queued.job_id, [pref("monday")], tenant=TENANT)
        assert late.duplicate and late.results == committed.results
        (value,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
        assert value.value == "friday"

    def test_revoke_errors_change_nothing(self, memory: Memory) -> None:
        memory.ingest(OLD, [pref("friday")])
        state = snapshot(memory)
        with pytest.raises(MemoryNotFoundError, match="'mem-nope'"):
            memory.revoke("mem-nope", tenant=TENANT)
        (record,) = memory.history(SUBJECT, FAMILY, tenant=TENANT)
        with pytest.raises(MemoryNotFoundError):
            memory.revoke(record.memory_id, tenant="globex")
        with pytest.raises(NotFoundError):
            memory.commit_job("job-nope", [pref("x")], tenant=TENANT)
        assert snapshot(memory) == state
