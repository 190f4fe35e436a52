"""Seed 000, the delivery-preference story, and the order rule."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from memledger.domain.records import Claim, MemoryRecord
from memledger.errors import EventNotFoundError, MemoryNotFoundError, RevisionNotMetError
from memledger.memory import Memory
from memledger.testing import FrozenClock
from memledger.testing.scenarios import (
    FAMILY,
    SEED_000_WINDOWS,
    SUBJECT,
    TENANT,
    UNGRANTED,
    actor,
    day,
    event,
    overlaps,
    pref,
    seed_000,
    snapshot,
)


def values(records: tuple[MemoryRecord, ...]) -> list[object]:
    return [r.value for r in records]


def story(memory: Memory, clock: FrozenClock, *, granted: bool = True) -> None:
    """Seed 000: Oct 2, Friday. Oct 19: one event, daily through Oct 31 and Friday from
    Nov 1."""
    for told in seed_000(actor(FAMILY) if granted else UNGRANTED):
        clock.set(told.at)
        memory.ingest(told.event, told.claims)


class StoryChecks:
    def test_story_valid_time(self, memory: Memory, clock: FrozenClock) -> None:
        story(memory, clock)

        def at(moment: datetime) -> list[object]:
            return values(memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=moment))

        assert at(day(10, 28)) == ["daily"]
        assert at(day(11, 1, 0)) == ["friday"]
        assert at(day(10, 5)) == ["friday"]
        assert at(day(10, 1)) == []  # before the first event's valid time
        timeline = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
        assert [(r.value, r.valid_from, r.valid_until) for r in timeline] == [*SEED_000_WINDOWS]
        assert all(r.claim_faithful_to_source for r in timeline)
        assert not any(r.operational_setting_confirmed for r in timeline)  # chat is no setting
        assert overlaps(memory) == []

    def test_story_record_time(self, memory: Memory, clock: FrozenClock) -> None:
        story(memory, clock)
        before = day(10, 19) - timedelta(microseconds=1)
        old = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 28), as_of=before)
        assert values(old) == ["friday"]
        assert old[0].source_event_id == "evt-oct02"
        new = memory.current(
            SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 28), as_of=day(10, 19)
        )
        assert values(new) == ["daily"]
        old_timeline = memory.timeline(SUBJECT, FAMILY, tenant=TENANT, as_of=before)
        assert [(r.value, r.valid_until) for r in old_timeline] == [("friday", None)]
        # nothing overwritten: the closed belief stays, closed in record time only
        history = memory.history(SUBJECT, FAMILY, tenant=TENANT)
        closed = [r for r in history if r.status == "superseded"]
        assert [(r.value, r.valid_until, r.superseded_at) for r in closed] == [
            ("friday", None, day(10, 19))
        ]
        remnant = next(r for r in history if r.supersedes == closed[0].memory_id)
        assert remnant.source_event_id == "evt-oct02"
        assert (remnant.valid_from, remnant.valid_until) == (day(10, 2, 9), day(10, 19, 9))
        assert [c.action for c in memory.changes(SUBJECT, FAMILY, tenant=TENANT)] == [
            "recorded",
            "closed",
            "recorded",
            "recorded",
            "recorded",
        ]

    def test_story_late_retry_is_historical(self, memory: Memory, clock: FrozenClock) -> None:
        story(memory, clock)
        timeline = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
        before = snapshot(memory, event_ids=["evt-oct02"])
        clock.set(day(10, 28))
        # the Oct 2 extraction retried: the same event again is a duplicate ...
        (oct02, _) = seed_000()
        again = memory.ingest(oct02.event, oct02.claims)
        assert again.duplicate and again.outcome == "committed"
        assert snapshot(memory, event_ids=["evt-oct02"]) == before
        # ... and a redelivery under a new id with the old sequence is kept as historical
        late = memory.ingest(
            replace(oct02.event, event_id="evt-oct02-redelivered"), [pref("friday")]
        )
        assert [(r.disposition, r.reason) for r in late.results] == [
            ("historical", "older_sequence")
        ]
        assert values(memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 28))) == [
            "daily"
        ]
        assert memory.timeline(SUBJECT, FAMILY, tenant=TENANT) == timeline
        assert memory.family_events(SUBJECT, FAMILY, tenant=TENANT) == (
            "evt-oct02",
            "evt-oct19",
            "evt-oct02-redelivered",
        )
        kept = [
            r for r in memory.history(SUBJECT, FAMILY, tenant=TENANT) if r.status == "historical"
        ]
        assert [(r.source_event_id, r.value) for r in kept] == [("evt-oct02-redelivered", "friday")]

    def test_story_without_grant_yields_observations(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        story(memory, clock, granted=False)
        assert memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 28)) == ()
        assert memory.timeline(SUBJECT, FAMILY, tenant=TENANT) == ()
        history = memory.history(SUBJECT, FAMILY, tenant=TENANT)
        assert len(history) == 3
        assert {(r.kind, r.proposed_kind, r.scope_authorized, r.exclusion) for r in history} == {
            ("observation", "preference", False, "no_grant")
        }
        assert not any(r.operational_setting_confirmed for r in history)

    def test_unauthenticated_actor_yields_observation(self, memory: Memory) -> None:
        stranger = actor(FAMILY, authenticated=False)
        receipt = memory.ingest(
            event("evt-anon", "Fridays please", occurred_at=day(10, 2), who=stranger),
            [pref("friday")],
        )
        assert [(r.disposition, r.reason) for r in receipt.results] == [
            ("observation", "unauthenticated")
        ]
        assert memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3)) == ()

    def test_claim_about_another_subject_is_an_observation(self, memory: Memory) -> None:
        receipt = memory.ingest(
            event("evt-x", "My wife wants Mondays", occurred_at=day(10, 2)),
            [
                Claim(
                    family=FAMILY,
                    kind="preference",
                    statement="Mondays",
                    value="monday",
                    subject="user-43",
                )
            ],
        )
        assert [r.reason for r in receipt.results] == ["foreign_subject"]
        assert memory.current("user-43", FAMILY, tenant=TENANT, valid_at=day(10, 3)) == ()

    def test_account_service_outranks_chat(self, memory: Memory) -> None:
        service = actor("*", actor_id="account-service")
        memory.ingest(
            event(
                "acct-1",
                "delivery_preference=weekly",
                occurred_at=day(10, 3),
                who=service,
                channel="account_service",
                sequence=7,
            ),
            [pref("weekly")],
        )
        late_chat = memory.ingest(
            event("chat-9", "Fridays please", occurred_at=day(10, 4), sequence=9),
            [pref("friday")],
        )
        assert [r.reason for r in late_chat.results] == ["lower_precedence"]
        (current,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 5))
        assert current.value == "weekly" and current.operational_setting_confirmed

    def test_equal_precedence_without_order_goes_to_review(self, memory: Memory) -> None:
        memory.ingest(event("a", "Fridays", occurred_at=day(10, 3)), [pref("friday")])
        state = snapshot(memory)
        receipt = memory.ingest(event("b", "Mondays", occurred_at=day(10, 3)), [pref("monday")])
        assert receipt.outcome == "review" and receipt.review_id is not None
        assert snapshot(memory).records == state.records
        (item,) = memory.reviews(tenant=TENANT)
        assert (item.event_id, item.review_id) == ("b", receipt.review_id)
        assert memory.ingest(
            event("b", "Mondays", occurred_at=day(10, 3)), [pref("monday")]
        ).duplicate

    def test_read_your_corrections(self, memory: Memory) -> None:
        first = memory.ingest(
            event("a", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")]
        )
        fix = memory.ingest(
            event("b", "Daily", occurred_at=day(10, 3), sequence=2), [pref("daily")]
        )
        assert fix.revision(FAMILY) == first.revision(FAMILY) + 1
        (now,) = memory.current(
            SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 4), min_revision=fix.revision(FAMILY)
        )
        assert now.value == "daily" and now.revision >= fix.revision(FAMILY)
        with pytest.raises(RevisionNotMetError, match="min_revision 3"):
            memory.current(SUBJECT, FAMILY, tenant=TENANT, min_revision=3)
        with pytest.raises(RevisionNotMetError):
            memory.timeline("nobody", FAMILY, tenant=TENANT, min_revision=1)

    def test_tenants_are_isolated(self, memory: Memory) -> None:
        for tenant, value in (("acme", "friday"), ("globex", "monday")):
            memory.ingest(
                event("evt-1", f"{value} please", occurred_at=day(10, 2), tenant=tenant),
                [pref(value)],
            )
        for tenant, value in (("acme", "friday"), ("globex", "monday")):
            assert values(memory.current(SUBJECT, FAMILY, tenant=tenant, valid_at=day(10, 3))) == [
                value
            ]
            (record,) = memory.history(SUBJECT, FAMILY, tenant=tenant)
            assert memory.get(record.memory_id, tenant=tenant).tenant == tenant
        (acme,) = memory.history(SUBJECT, FAMILY, tenant="acme")
        (globex,) = memory.history(SUBJECT, FAMILY, tenant="globex")
        assert acme.memory_id != globex.memory_id
        with pytest.raises(MemoryNotFoundError):
            memory.get(acme.memory_id, tenant="globex")
        with pytest.raises(EventNotFoundError):
            memory.event("evt-1", tenant="initech")
        assert memory.current(SUBJECT, FAMILY, tenant="initech", valid_at=day(10, 3)) == ()
