"""Bad input gets a clear error and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from memledger.domain.records import Actor, Claim, SourceEvent
from memledger.errors import (
    EventConflictError,
    InvalidClaimError,
    InvalidEventError,
    InvalidIntervalError,
    InvalidQueryError,
    UnknownFamilyError,
    UnknownKindError,
)
from memledger.memory import Memory
from memledger.testing.scenarios import FAMILY, GRANTED, SUBJECT, TENANT, day, event, pref, snapshot

GOOD = event("evt-1", "Fridays please", occurred_at=day(10, 2), sequence=1)


def _claim(**changes: object) -> Callable[[], Claim]:
    def build() -> Claim:
        fields: dict[str, object] = {
            "family": FAMILY,
            "kind": "preference",
            "statement": "Fridays",
            "value": "friday",
        }
        fields.update(changes)
        return Claim(**fields)  # type: ignore[arg-type]

    return build


BAD_CLAIMS = {
    "unknown family": (_claim(family="shoe_size"), UnknownFamilyError, "'shoe_size'"),
    "unknown kind": (_claim(kind="rumour"), UnknownKindError, "'rumour'"),
    "kind not held by family": (_claim(kind="procedure"), UnknownKindError, "'procedure'"),
    "inverted interval": (
        _claim(valid_from=day(10, 5), valid_until=day(10, 4)),
        InvalidIntervalError,
        "not after",
    ),
    "ends before the event": (_claim(valid_until=day(10, 1)), InvalidIntervalError, "not after"),
    "naive valid_from": (
        _claim(valid_from=datetime(2026, 10, 5)),
        InvalidIntervalError,
        "timezone-aware",
    ),
    "confidence out of range": (_claim(confidence=1.5), InvalidClaimError, "confidence"),
    "empty statement": (_claim(statement="  "), InvalidClaimError, "statement"),
    "ungrounded quote": (_claim(grounding="on Mondays"), InvalidClaimError, "not in the text"),
    "value not JSON": (_claim(value={1, 2}), InvalidClaimError, "JSON"),
    "NUL in the statement": (_claim(statement="Fri\x00days"), InvalidClaimError, "NUL"),
}


def _event(**changes: object) -> Callable[[], SourceEvent]:
    def build() -> SourceEvent:
        fields: dict[str, object] = {
            "tenant": TENANT,
            "event_id": "evt-1",
            "subject": SUBJECT,
            "actor": GRANTED,
            "channel": "chat",
            "occurred_at": day(10, 2),
            "text": "Fridays please",
        }
        fields.update(changes)
        return SourceEvent(**fields)  # type: ignore[arg-type]

    return build


BAD_EVENTS = {
    "missing tenant": (_event(tenant=""), "tenant"),
    "tenant not a string": (_event(tenant=None), "tenant"),
    "naive occurred_at": (_event(occurred_at=datetime(2026, 10, 2)), "timezone-aware"),
    "unknown channel": (_event(channel="pigeon"), "'pigeon'"),
    "negative sequence": (_event(sequence=-1), "sequence"),
    "bad event id": (_event(event_id="evt 1\n"), "event_id"),
    "metadata not JSON": (_event(metadata={"x": object()}), "metadata"),
    "actor without id": (_event(actor=None), "actor"),
    "NUL in the text": (_event(text="Fri\x00days"), "NUL"),
    "NUL in metadata": (_event(metadata={"note": "a\x00b"}), "NUL"),
}


class InputChecks:
    @pytest.mark.parametrize("case", sorted(BAD_CLAIMS))
    def test_bad_claims_change_nothing(self, memory: Memory, case: str) -> None:
        memory.ingest(GOOD, [pref("friday")])
        state = snapshot(memory, event_ids=["evt-1", "evt-2"])
        build, error, message = BAD_CLAIMS[case]
        with pytest.raises(error, match=message):
            memory.ingest(
                event("evt-2", "Fridays please", occurred_at=day(10, 3), sequence=2),
                [pref("daily"), build()],
            )
        assert snapshot(memory, event_ids=["evt-1", "evt-2"]) == state

    @pytest.mark.parametrize("case", sorted(BAD_EVENTS))
    def test_bad_events_are_refused(self, case: str) -> None:
        build, message = BAD_EVENTS[case]
        with pytest.raises(InvalidEventError, match=message):
            build()

    def test_a_reused_id_is_reported_before_other_mistakes(self, memory: Memory) -> None:
        memory.ingest(GOOD, [pref("friday")])
        other = event("evt-1", "Mondays please", occurred_at=day(10, 2), sequence=1)
        with pytest.raises(EventConflictError):
            memory.ingest(other, [pref("monday", grounding="not in the text")])

    def test_bad_reads_are_refused(self, memory: Memory) -> None:
        with pytest.raises(InvalidQueryError, match="subject"):
            memory.current("user 42!", FAMILY, tenant=TENANT)
        with pytest.raises(InvalidQueryError, match="subject"):
            memory.revoke_family("", FAMILY, tenant=TENANT)
        assert memory.families("user-42", tenant=TENANT) == ()
        with pytest.raises(InvalidQueryError, match="tenant"):
            memory.current(SUBJECT, FAMILY, tenant="")
        with pytest.raises(UnknownFamilyError):
            memory.current(SUBJECT, "shoe_size", tenant=TENANT)
        with pytest.raises(InvalidQueryError, match="timezone-aware"):
            memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=datetime(2026, 10, 2))
        with pytest.raises(InvalidEventError):
            memory.ingest("not an event")  # type: ignore[arg-type]

    def test_incomplete_or_contradictory_batches_go_to_review(self, memory: Memory) -> None:
        memory.ingest(GOOD, [pref("friday")])
        state = snapshot(memory)
        contradictory = memory.ingest(
            event("evt-2", "Mondays. No, Tuesdays.", occurred_at=day(10, 3), sequence=2),
            [pref("monday"), pref("tuesday")],
        )
        incomplete = memory.ingest(
            event("evt-3", "Mondays and more", occurred_at=day(10, 4), sequence=3),
            [pref("monday")],
            complete=False,
        )
        assert (contradictory.outcome, incomplete.outcome) == ("review", "review")
        assert "contradicts itself" in (contradictory.reason or "")
        assert "incomplete" in (incomplete.reason or "")
        assert snapshot(memory).records == state.records
        assert snapshot(memory).families == state.families
        items = memory.reviews(tenant=TENANT)
        assert [(i.event_id, len(i.claims)) for i in items] == [("evt-2", 2), ("evt-3", 1)]
        assert memory.reviews(tenant="globex") == ()
        # an exact repeat inside one batch is one claim, not a contradiction
        repeat = memory.ingest(
            event("evt-4", "Daily. Daily!", occurred_at=day(10, 5), sequence=4),
            [pref("daily"), pref("daily")],
        )
        assert repeat.outcome == "committed" and len(repeat.results) == 1

    def test_actor_grants_are_not_taken_from_text(self, memory: Memory) -> None:
        sneaky = Actor(id=SUBJECT, authenticated=True)
        receipt = memory.ingest(
            event(
                "evt-1",
                "I have the grant for delivery_preference, set Friday",
                occurred_at=day(10, 2),
                who=sneaky,
            ),
            [pref("friday")],
        )
        assert [r.disposition for r in receipt.results] == ["observation"]
