"""Invariant 7 across records: a revoked claim's words leave every record of its source
event (the turn's episode, other families' claims), forgetting a whole event, and work
queued before another subject's revocation."""

from __future__ import annotations

import pytest

from memledger.domain.records import Claim, MemoryRecord
from memledger.errors import EventNotFoundError
from memledger.memory import Memory
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event, fact, snapshot
from memledger.write.worker import episode_of

ANYONE = actor("*")
TEXT = "I moved to Quorvale last week and I work at Initech."
MOVE = event("evt-move", TEXT, occurred_at=day(3, 1), who=ANYONE)
LATER = day(3, 5)


def _city(value: str = "Quorvale", grounding: str = "moved to Quorvale") -> Claim:
    return fact("home_city", f"Lives in {value}", value, grounding=grounding)


def _employer() -> Claim:
    return fact("employer", "Works at Initech", "Initech", grounding="work at Initech")


def _ingest_move(memory: Memory, *extra: Claim) -> dict[str, str]:
    receipt = memory.ingest(MOVE, [_city(), _employer(), *extra, episode_of(MOVE)])
    assert receipt.outcome == "committed"
    return {r.family: r.memory_id for r in receipt.results if r.memory_id is not None}


def _visible(memory: Memory, event_id: str) -> list[MemoryRecord]:
    """Every record of the event any default view shows: current values, timelines,
    past views and history, in every family it wrote."""
    shown: list[MemoryRecord] = []
    for family in ("home_city", "employer", "relationship", "conversation"):
        for view in (
            memory.current(SUBJECT, family, tenant=TENANT, valid_at=LATER),
            memory.current(SUBJECT, family, tenant=TENANT, valid_at=LATER, as_of=day(3, 2)),
            memory.timeline(SUBJECT, family, tenant=TENANT),
            memory.history(SUBJECT, family, tenant=TENANT),
        ):
            shown.extend(r for r in view if r.source_event_id == event_id)
    return shown


def _says(record: MemoryRecord, word: str) -> bool:
    return word.casefold() in f"{record.claim} {record.value} {record.grounding}".casefold()


class ForgettingChecks:
    def test_revoking_a_claim_takes_its_words_out_of_the_turn(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        ids = _ingest_move(memory)
        clock.set(day(3, 2, 13))
        ack = memory.revoke(ids["home_city"], tenant=TENANT, reason="user asked")
        assert ack.revoked == (ids["home_city"],) and ack.redacted == (ids["conversation"],)
        shown = _visible(memory, "evt-move")
        assert shown and not any(_says(r, "Quorvale") for r in shown)
        # the rest of the turn and the event's other facts stay usable
        (turn,) = memory.current(SUBJECT, "conversation", tenant=TENANT, valid_at=LATER)
        assert isinstance(turn.value, dict)
        assert turn.value["text"] == "I [redacted] last week and I work at Initech."
        assert turn.supersedes == ids["conversation"] and turn.source_event_id == "evt-move"
        (employer,) = memory.current(SUBJECT, "employer", tenant=TENANT, valid_at=LATER)
        assert employer.value == "Initech"
        # audits still see what was revoked, when they ask for it
        audit = memory.history(SUBJECT, "home_city", tenant=TENANT, include_revoked=True)
        assert [(r.value, r.status) for r in audit] == [("Quorvale", "revoked")]
        assert memory.get(ids["conversation"], tenant=TENANT).status == "revoked"
        # the episode's generation is untouched: other turns' queued jobs still commit
        (slot,) = [f for f in memory.families(SUBJECT, tenant=TENANT) if f.family == "conversation"]
        assert slot.generation == 0

    def test_revoking_a_family_takes_its_words_out_of_every_source(self, memory: Memory) -> None:
        ids = _ingest_move(memory)
        later = event(
            "evt-again", "Still in Quorvale, all good.", occurred_at=day(3, 3), who=ANYONE
        )
        memory.ingest(later, [_city(grounding="in Quorvale"), episode_of(later)])
        ack = memory.revoke_family(SUBJECT, "home_city", tenant=TENANT)
        assert len(ack.redacted) == 2 and ids["conversation"] in ack.redacted
        for source in ("evt-move", "evt-again"):
            shown = _visible(memory, source)
            assert shown and not any(_says(r, "Quorvale") for r in shown), source

    def test_events_that_said_the_claim_again_lose_the_words_too(self, memory: Memory) -> None:
        ids = _ingest_move(memory)
        later = event(
            "evt-again", "Still in Quorvale, all good.", occurred_at=day(3, 3), who=ANYONE
        )
        again = memory.ingest(later, [_city(grounding="in Quorvale"), episode_of(later)])
        noop = {(r.family, r.decision) for r in again.results}
        assert ("home_city", "noop") in noop  # merged into the first record as a mention
        ack = memory.revoke(ids["home_city"], tenant=TENANT)
        assert len(ack.redacted) == 2
        shown = _visible(memory, "evt-again")
        assert shown and not any(_says(r, "Quorvale") for r in shown)
        # a replay of the later event does not bring it back either
        assert memory.ingest(later, [_city(grounding="in Quorvale")]).duplicate
        assert memory.current(SUBJECT, "home_city", tenant=TENANT, valid_at=LATER) == ()

    def test_a_claim_of_another_family_stating_the_words_goes_too(self, memory: Memory) -> None:
        partner = Claim(
            family="relationship",
            kind="fact",
            statement="Moved to Quorvale with a partner",
            value={"city": "Quorvale"},
        )
        ids = _ingest_move(memory, partner)
        ack = memory.revoke(ids["home_city"], tenant=TENANT)
        assert [(a.family, a.revoked) for a in ack.also] == [
            ("relationship", (ids["relationship"],))
        ]
        assert memory.current(SUBJECT, "relationship", tenant=TENANT, valid_at=LATER) == ()
        assert ack.also[0].generation == 1
        assert not any(_says(r, "Quorvale") for r in _visible(memory, "evt-move"))
        assert memory.current(SUBJECT, "employer", tenant=TENANT, valid_at=LATER) != ()

    def test_revoking_the_episode_forgets_the_turn(self, memory: Memory) -> None:
        # a claim the caller derived from the turn without quoting it goes too: the turn
        # is the whole of what it was derived from
        unquoted = Claim(
            family="language", kind="preference", statement="Wants answers in Dutch", value="nl"
        )
        ids = _ingest_move(memory, unquoted)
        ack = memory.revoke(ids["conversation"], tenant=TENANT)
        assert ack.family == "conversation" and ack.revoked == (ids["conversation"],)
        assert sorted(a.family for a in ack.also) == ["employer", "home_city", "language"]
        for family in ("home_city", "employer", "conversation", "language"):
            assert memory.current(SUBJECT, family, tenant=TENANT, valid_at=LATER) == ()
        assert _visible(memory, "evt-move") == []
        # a replay, or a late job for the same words, writes nothing again
        state = snapshot(memory, event_ids=["evt-move"])
        assert memory.ingest(MOVE, [_city()]).duplicate
        assert snapshot(memory, event_ids=["evt-move"]) == state

    def test_forget_an_event(self, memory: Memory, clock: FrozenClock) -> None:
        _ingest_move(memory)
        forgotten = memory.forget("evt-move", tenant=TENANT, reason="user asked")
        assert sorted(r.family for r in forgotten.revocations) == [
            "conversation",
            "employer",
            "home_city",
        ]
        assert _visible(memory, "evt-move") == []
        state = snapshot(memory, event_ids=["evt-move"])
        again = memory.forget("evt-move", tenant=TENANT)
        assert again.revocations == () and again.event_id == "evt-move"
        assert snapshot(memory, event_ids=["evt-move"]) == state
        # a job for a forgotten event writes nothing, in any family (queued after the
        # revocations above, so only the forgetting stops it)
        queued = memory.ingest(
            event("evt-queued", "I moved to Quorvale.", occurred_at=day(3, 2), who=ANYONE)
        )
        assert queued.job_id is not None
        memory.forget("evt-queued", tenant=TENANT)
        late = memory.commit_job(
            queued.job_id, [_city(grounding="moved to Quorvale")], tenant=TENANT
        )
        assert [(r.disposition, r.reason) for r in late.results] == [("rejected", "revoked_source")]
        assert memory.current(SUBJECT, "home_city", tenant=TENANT, valid_at=LATER) == ()
        # other events are untouched, and new words may set a new value
        memory.ingest(
            event("evt-new", "I live in Brindle now.", occurred_at=day(3, 4), who=ANYONE),
            [_city("Brindle", grounding="live in Brindle")],
        )
        (city,) = memory.current(SUBJECT, "home_city", tenant=TENANT, valid_at=LATER)
        assert city.value == "Brindle"

    def test_forget_errors_change_nothing(self, memory: Memory) -> None:
        _ingest_move(memory)
        state = snapshot(memory, event_ids=["evt-move"])
        with pytest.raises(EventNotFoundError, match="'evt-nope'"):
            memory.forget("evt-nope", tenant=TENANT)
        with pytest.raises(EventNotFoundError):
            memory.forget("evt-move", tenant="globex")
        assert snapshot(memory, event_ids=["evt-move"]) == state

    def test_a_job_queued_before_another_subjects_revocation_is_stale_there(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        other = "user-7"
        said = memory.ingest(
            event(
                "evt-b", "I moved to Quorvale.", occurred_at=day(3, 1), subject=other, who=ANYONE
            ),
            [_city()],
        )
        queued = memory.ingest(event("evt-a", "User 7 lives in Quorvale.", occurred_at=day(3, 2)))
        assert queued.job_id is not None
        clock.set(day(3, 3))
        (kept,) = [r.memory_id for r in said.results if r.memory_id is not None]
        memory.revoke(kept, tenant=TENANT)
        foreign = fact("home_city", "Lives in Quorvale", "Quorvale", subject=other)
        late = memory.commit_job(queued.job_id, [foreign], tenant=TENANT)
        assert [(r.disposition, r.reason) for r in late.results] == [
            ("rejected", "stale_generation")
        ]
        audit = memory.history(other, "home_city", tenant=TENANT, include_revoked=True)
        assert [r.source_event_id for r in audit] == ["evt-b"]
        # a job queued after the revocation may record it (as an observation: another
        # subject's event never sets this subject's values)
        fresh = memory.ingest(event("evt-c", "User 7 lives in Quorvale.", occurred_at=day(3, 4)))
        assert fresh.job_id is not None
        done = memory.commit_job(fresh.job_id, [foreign], tenant=TENANT)
        assert [(r.disposition, r.reason) for r in done.results] == [
            ("observation", "foreign_subject")
        ]
