"""Resolving the review queue: accept commits a held batch as if the order rule had
applied it, reject changes nothing but the item; both record who, why and when, leave
history entries, and are idempotent."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cli_helpers import snapshot as file_snapshot
from memledger import (
    ConflictError,
    InvalidInputError,
    LimitExceededError,
    Limits,
    Memory,
    ReviewNotFoundError,
)
from memledger.domain.records import CALLER
from memledger.ports import Extraction
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import (
    FAMILY,
    SUBJECT,
    TENANT,
    UNGRANTED,
    day,
    event,
    pref,
    snapshot,
)
from store_helpers import old_sqlite_store

REVIEWED_AT = day(10, 10)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 1))


def _held(memory: Memory, clock: FrozenClock) -> str:
    """Friday accepted at sequence 1; Monday, also sequence 1 of the same stream, held."""
    memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
    held = event("evt-2", "Mondays", occurred_at=day(10, 3), sequence=1)
    receipt = memory.ingest(held, [pref("monday")])
    assert receipt.outcome == "review" and receipt.review_id is not None
    clock.set(REVIEWED_AT)
    return receipt.review_id


def _now(memory: Memory) -> list[str]:
    return [
        str(r.value) for r in memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 20))
    ]


def test_accept_commits_the_held_batch(memory: Memory, clock: FrozenClock) -> None:
    review_id = _held(memory, clock)
    assert _now(memory) == ["friday"]
    done = memory.resolve_review(
        TENANT, review_id, decision="accept", by="ann", reason="the user confirmed by phone"
    )
    assert not done.duplicate and done.receipt is not None
    receipt = done.receipt
    assert (receipt.outcome, receipt.review_id, receipt.event_id) == (
        "committed",
        review_id,
        "evt-2",
    )
    assert [(r.disposition, r.decision) for r in receipt.results] == [("current", "update")]
    token = receipt.revision(FAMILY)
    (now,) = memory.current(
        SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 20), min_revision=token
    )
    assert (now.value, now.source_event_id, now.recorded_at) == ("monday", "evt-2", REVIEWED_AT)
    item = done.item
    assert (item.resolution, item.resolved_by, item.resolved_at) == ("accepted", "ann", REVIEWED_AT)
    assert item.resolution_reason == "the user confirmed by phone"
    assert memory.reviews(tenant=TENANT) == ()
    assert memory.reviews(tenant=TENANT, open_only=False) == (item,)
    changes = memory.changes(SUBJECT, FAMILY, tenant=TENANT)
    assert [(c.action, c.cause, c.revision) for c in changes] == [
        ("recorded", "evt-1", 1),
        ("closed", "evt-2", 2),  # friday's window closes where monday's begins
        ("recorded", "evt-2", 2),  # the remnant: friday from Oct 2 to Oct 3
        ("recorded", "evt-2", 2),
        ("review_accepted", "evt-2", 2),
    ]
    assert (changes[-1].memory_id, changes[-1].note) == (
        review_id,
        "accepted by ann: the user confirmed by phone",
    )
    assert memory.family_events(SUBJECT, FAMILY, tenant=TENANT) == ("evt-1", "evt-2")
    assert memory.stats(tenant=TENANT) == {"review:accepted": 1}
    # the event is decided now: a replay returns the committed receipt
    replay = memory.ingest(
        event("evt-2", "Mondays", occurred_at=day(10, 3), sequence=1), [pref("monday")]
    )
    assert replay.duplicate and replay.outcome == "committed"


def test_reject_changes_nothing_but_the_item(memory: Memory, clock: FrozenClock) -> None:
    review_id = _held(memory, clock)
    before = snapshot(memory, event_ids=("evt-1", "evt-2"))
    done = memory.resolve_review(TENANT, review_id, decision="reject", by="ann", reason="a typo")
    assert done.receipt is None and not done.duplicate
    after = snapshot(memory, event_ids=("evt-1", "evt-2"))
    assert (after.records, after.families, after.outbox) == (
        before.records,
        before.families,
        before.outbox,
    )
    assert after.outcomes == before.outcomes  # the event stays held: outcome "review"
    (entry,) = [c for c in after.changes if c not in before.changes]
    assert (entry.action, entry.memory_id, entry.cause, entry.revision, entry.status) == (
        "review_rejected",
        review_id,
        "evt-2",
        1,
        "historical",
    )
    assert entry.note == "rejected by ann: a typo"
    (item,) = after.reviews
    assert (item.resolution, item.resolved_by, item.resolution_reason, item.resolved_at) == (
        "rejected",
        "ann",
        "a typo",
        REVIEWED_AT,
    )
    assert _now(memory) == ["friday"]
    assert memory.family_events(SUBJECT, FAMILY, tenant=TENANT) == ("evt-1",)
    assert dict(after.counters) == {"review:rejected": 1}


def test_resolving_again_is_acknowledged_and_the_other_way_refused(
    memory: Memory, clock: FrozenClock, db: Path
) -> None:
    accepted = _held(memory, clock)
    first = memory.resolve_review(TENANT, accepted, decision="accept", by="ann", reason="ok")
    before = file_snapshot(db)
    clock.advance(timedelta(hours=1))
    again = memory.resolve_review(TENANT, accepted, decision="accept", by="bo", reason="me too")
    assert again.duplicate and again.item == first.item  # still ann's decision, and time
    assert again.receipt is not None and first.receipt is not None
    assert again.receipt.duplicate and again.receipt.results == first.receipt.results
    with pytest.raises(ConflictError, match="already accepted by 'ann'"):
        memory.resolve_review(TENANT, accepted, decision="reject", by="bo", reason="no")
    assert file_snapshot(db) == before
    rejected = memory.ingest(
        event("evt-3", "Tuesdays", occurred_at=day(10, 3), sequence=1), [pref("tuesday")]
    ).review_id
    assert rejected is not None
    memory.resolve_review(TENANT, rejected, decision="reject", by="ann", reason="no")
    twice = memory.resolve_review(TENANT, rejected, decision="reject", by="ann", reason="no")
    assert twice.duplicate and twice.receipt is None
    with pytest.raises(ConflictError, match="already rejected"):
        memory.resolve_review(TENANT, rejected, decision="accept", by="ann", reason="yes")


def test_a_self_contradictory_batch_cannot_be_accepted(
    memory: Memory, clock: FrozenClock, db: Path
) -> None:
    receipt = memory.ingest(
        event("evt-1", "Mondays. No, Tuesdays.", occurred_at=day(10, 2), sequence=1),
        [pref("monday"), pref("tuesday")],
    )
    assert receipt.review_id is not None
    before = file_snapshot(db)
    with pytest.raises(ConflictError, match="reject the review item and ingest corrected"):
        memory.resolve_review(TENANT, receipt.review_id, decision="accept", by="ann", reason="ok")
    assert file_snapshot(db) == before
    assert [i.review_id for i in memory.reviews(tenant=TENANT)] == [receipt.review_id]
    memory.resolve_review(TENANT, receipt.review_id, decision="reject", by="ann", reason="fix")
    assert memory.reviews(tenant=TENANT) == ()


def test_an_incomplete_batch_is_accepted_as_the_reviewer_vouches(memory: Memory) -> None:
    receipt = memory.ingest(
        event("evt-1", "Mondays and more", occurred_at=day(10, 2), sequence=1),
        [pref("monday")],
        complete=False,
    )
    assert receipt.review_id is not None
    done = memory.resolve_review(
        TENANT, receipt.review_id, decision="accept", by="ann", reason="nothing else was said"
    )
    assert done.receipt is not None and done.receipt.outcome == "committed"
    assert _now(memory) == ["monday"]


def test_a_family_that_moved_on_keeps_the_accepted_claim_historical(
    memory: Memory, clock: FrozenClock
) -> None:
    """The reviewer replaces the order rule only where it cannot decide: an event held
    at sequence 1 never overrides the sequence 2 accepted meanwhile."""
    review_id = _held(memory, clock)
    memory.ingest(event("evt-3", "Daily", occurred_at=day(10, 4), sequence=2), [pref("daily")])
    done = memory.resolve_review(TENANT, review_id, decision="accept", by="ann", reason="ok")
    assert done.receipt is not None
    assert [(r.disposition, r.reason) for r in done.receipt.results] == [
        ("historical", "older_sequence")
    ]
    assert _now(memory) == ["daily"]


def test_a_family_revoked_since_rejects_the_held_claims(memory: Memory, clock: FrozenClock) -> None:
    review_id = _held(memory, clock)
    memory.revoke_family(SUBJECT, FAMILY, tenant=TENANT, reason="user asked")
    done = memory.resolve_review(TENANT, review_id, decision="accept", by="ann", reason="ok")
    assert done.receipt is not None
    assert [(r.disposition, r.reason) for r in done.receipt.results] == [
        ("rejected", "stale_generation")
    ]
    assert _now(memory) == []


def test_accepting_does_not_grant_authority(memory: Memory) -> None:
    """An actor without the grant leaves an observation, whoever accepts its batch."""
    memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
    receipt = memory.ingest(
        event("evt-2", "Mondays, and more", occurred_at=day(10, 3), sequence=2, who=UNGRANTED),
        [pref("monday")],
        complete=False,
    )
    assert receipt.review_id is not None
    done = memory.resolve_review(
        TENANT, receipt.review_id, decision="accept", by="ann", reason="ok"
    )
    assert done.receipt is not None
    assert [(r.disposition, r.reason) for r in done.receipt.results] == [
        ("observation", "no_grant")
    ]
    assert _now(memory) == ["friday"]


def test_a_worker_batch_keeps_its_lineage_when_accepted(db: Path) -> None:
    clock = FrozenClock(day(10, 1))
    with Memory.open(db, clock=clock, limits=Limits(max_claims=3)) as memory:
        memory.ingest(event("evt-1", "Send it on Fridays", occurred_at=day(10, 2)))
        extractor = FunctionExtractor(
            lambda _: Extraction(claims=(pref("friday", grounding="on Fridays"),), complete=False)
        )
        assert memory.process(extractor=extractor).outcomes == {"review": 1}
        (item,) = memory.reviews(tenant=TENANT)
        assert (item.extractor, item.job_id) == (
            extractor.info,
            memory.jobs(tenant=TENANT, open_only=False)[0].job_id,
        )
        done = memory.resolve_review(
            TENANT, item.review_id, decision="accept", by="ann", reason="ok"
        )
        assert done.receipt is not None and done.receipt.job_id == item.job_id
        (now,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
        assert now.extractor == extractor.info
        assert {r.family for r in done.receipt.results} == {FAMILY, "conversation"}


def test_accepting_more_claims_than_the_limit_is_refused(db: Path) -> None:
    with Memory.open(db, clock=FrozenClock(day(10, 1)), limits=Limits(max_claims=2)) as memory:
        memory.ingest(event("evt-1", "Fridays or Mondays", occurred_at=day(10, 2)))
        many = [
            pref("friday", scope="a", grounding="Fridays"),
            pref("monday", scope="b", grounding="Mondays"),
        ]
        assert memory.process(extractor=FunctionExtractor(lambda _: many)).outcomes == {"review": 1}
        (item,) = memory.reviews(tenant=TENANT)
        with pytest.raises(LimitExceededError):
            memory.resolve_review(TENANT, item.review_id, decision="accept", by="a", reason="ok")
        assert memory.reviews(tenant=TENANT) == (item,)


def test_bad_requests_change_nothing(memory: Memory, clock: FrozenClock, db: Path) -> None:
    review_id = _held(memory, clock)
    before = file_snapshot(db)
    with pytest.raises(ReviewNotFoundError):
        memory.resolve_review(TENANT, "rev-nope", decision="accept", by="ann", reason="ok")
    with pytest.raises(ReviewNotFoundError):  # another tenant's item does not exist for globex
        memory.resolve_review("globex", review_id, decision="accept", by="ann", reason="ok")
    with pytest.raises(InvalidInputError, match="decision"):
        memory.resolve_review(TENANT, review_id, decision="maybe", by="ann", reason="ok")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="by"):
        memory.resolve_review(TENANT, review_id, decision="accept", by="", reason="ok")
    with pytest.raises(InvalidInputError, match="reason"):
        memory.resolve_review(TENANT, review_id, decision="accept", by="ann", reason="  ")
    assert file_snapshot(db) == before


def test_an_item_held_before_schema_7_can_be_resolved_after_the_upgrade(db: Path) -> None:
    """Rows written before review decisions were recorded have no extractor, job or
    revocation mark: they are the caller's, and "now" is when their work began."""
    with old_sqlite_store(db, 6) as conn:
        conn.execute(
            "INSERT INTO events VALUES ('acme', 'evt-1', 'hash', 'user-42', 'user-42', 1,"
            " '[[\"delivery_preference\", \"*\"]]', 'chat', NULL, 1, '2026-10-02T12:00:00.000000Z',"
            " 'Mondays', '{}', '2026-10-02T12:00:00.000000Z', NULL)"
        )
        conn.execute(
            "INSERT INTO event_outcomes VALUES ('acme', 'evt-1', 'review', ?, "
            "'2026-10-02T12:00:00.000000Z')",
            (
                '{"event_id":"evt-1","job_id":null,"outcome":"review","reason":"held",'
                '"results":[],"review_id":"rev-1","revisions":[],"tenant":"acme"}',
            ),
        )
        conn.execute(
            "INSERT INTO review_queue VALUES ('acme', 'rev-1', 'evt-1', 'user-42', 'held', ?,"
            " '2026-10-02T12:00:00.000000Z', NULL, NULL)",
            (
                '[{"confidence":0.65,"family":"delivery_preference","grounding":null,'
                '"kind":"preference","scope":"global","statement":"Delivery: monday",'
                '"subject":null,"valid_from":null,"valid_until":null,"value":"monday"}]',
            ),
        )
    with Memory.open(db, clock=FrozenClock(day(10, 3))) as memory:
        (item,) = memory.reviews(tenant=TENANT)
        assert (item.extractor, item.job_id, item.revocation_mark) == (CALLER, None, None)
        done = memory.resolve_review(TENANT, "rev-1", decision="accept", by="ann", reason="ok")
        assert done.receipt is not None and done.receipt.outcome == "committed"
        assert _now(memory) == ["monday"]
        assert memory.create_key(TENANT, SUBJECT)[0].tenant == TENANT  # the new tables too
