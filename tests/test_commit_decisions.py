"""Decisions inside one event commit, with caller claims on a real SQLite file."""

from __future__ import annotations

import json

import pytest

from memledger import Actor, Claim, Memory, SourceEvent
from memledger.errors import InvalidClaimError, InvalidInputError
from memledger.store.codec import claims_from_json, claims_to_json
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event
from memledger.wire import claim_to_dict, parse_event_json
from memledger.write.batch import distinct_claims

WHO = actor("likes", actor_id="user-42")


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 1))


def said(n: int, text: str, who: Actor) -> SourceEvent:
    """Event ``e<n>``, sequence ``n``, said by ``who`` at noon on October ``n``."""
    return event(f"e{n}", text, occurred_at=day(10, n), sequence=n, who=who)


def likes(item: str, scope: str, statement: str | None = None) -> Claim:
    return Claim(
        family="likes",
        kind="preference",
        statement=statement or f"Loves {item}",
        value={"item": item, "sentiment": "like"},
        scope=scope,
    )


def test_a_claim_decided_against_a_record_another_claim_replaces_is_decided_again(
    memory: Memory,
) -> None:
    memory.ingest(said(1, "I love sushi", WHO), [likes("sushi", "item:a")])
    receipt = memory.ingest(
        said(2, "Ramen now, and sushi", WHO),
        # the first replaces item:a; the second would be a NOOP of the record it replaces
        [likes("ramen", "item:a"), likes("sushi", "item:b")],
    )
    assert sorted((r.scope, r.decision) for r in receipt.results) == [
        ("item:a", "update"),
        ("item:b", "add"),
    ]
    timeline = memory.timeline("user-42", "likes", tenant=TENANT)
    assert sorted((r.scope, r.value["item"]) for r in timeline) == [  # type: ignore[index]
        ("item:a", "ramen"),
        ("item:a", "sushi"),
        ("item:b", "sushi"),
    ]


def test_one_event_repeating_itself_counts_one_mention(memory: Memory) -> None:
    memory.ingest(said(1, "I love sushi", WHO), [likes("sushi", "item:sushi")])
    receipt = memory.ingest(
        said(2, "Sushi! I love sushi", WHO),
        [likes("sushi", "item:sushi"), likes("sushi", "item:sushi-rolls")],
    )
    assert {r.decision for r in receipt.results} == {"noop"}
    (record,) = memory.timeline("user-42", "likes", tenant=TENANT)
    assert record.mentions == 2


TOOLS = actor("tool", actor_id="user-42")


def uses(name: str, *, statement: str | None = None, retract: bool = False) -> Claim:
    return Claim(
        family="tool",
        kind="fact",
        statement=statement or f"Uses {name}",
        value=name,
        scope=f"tool:{name.casefold()}",
        polarity="retract" if retract else "assert",
    )


def test_the_polarity_decides_a_delete_not_the_words(memory: Memory) -> None:
    memory.ingest(said(1, "I use TensorFlow", TOOLS), [uses("TensorFlow")])
    worded = memory.ingest(
        said(2, "No longer uses TensorFlow", TOOLS),
        [uses("TensorFlow", statement="No longer uses TensorFlow")],  # asserted: a repeat
    )
    assert [r.decision for r in worded.results] == ["noop"]
    retracted = memory.ingest(
        said(3, "Dropped TensorFlow", TOOLS),
        [uses("TensorFlow", retract=True)],
    )
    assert [r.decision for r in retracted.results] == ["delete"]
    assert memory.current("user-42", "tool", tenant=TENANT, valid_at=day(10, 4)) == ()
    nothing = memory.ingest(said(4, "Dropped Keras", TOOLS), [uses("Keras", retract=True)])
    assert [(r.disposition, r.decision, r.memory_id) for r in nothing.results] == [
        ("current", "noop", None)
    ]
    assert {r.value for r in memory.timeline("user-42", "tool", tenant=TENANT)} == {"TensorFlow"}


def test_polarity_travels_through_the_review_queue_the_wire_and_the_batch_key() -> None:
    dropped = uses("Keras", retract=True)
    assert claims_from_json(claims_to_json((dropped,))) == (dropped,)
    old = json.loads(claims_to_json((uses("Keras"),)))
    del old[0]["polarity"]  # written before claims had a polarity
    assert claims_from_json(json.dumps(old)) == (uses("Keras"),)
    assert distinct_claims((dropped, uses("Keras"), dropped)) == (dropped, uses("Keras"))
    shape = {
        "event_id": "w1",
        "subject": "user-42",
        "actor": {"id": "user-42"},
        "channel": "chat",
        "occurred_at": "2026-10-02T09:00:00Z",
        "text": "Dropped Keras",
        "claims": [claim_to_dict(dropped), {**claim_to_dict(dropped), "polarity": None}],
    }
    with pytest.raises(InvalidInputError, match="polarity"):
        parse_event_json(json.dumps(shape), tenant=TENANT)
    del shape["claims"][1]  # type: ignore[attr-defined]
    parsed = parse_event_json(json.dumps(shape), tenant=TENANT)
    assert parsed.claims == (dropped,)
    with pytest.raises(InvalidClaimError, match="polarity"):
        Claim(family="tool", kind="fact", statement="x", value="x", polarity="negate")  # type: ignore[arg-type]


def taste(item: str, sentiment: str = "like") -> Claim:
    return Claim(
        family="likes",
        kind="preference",
        statement=f"{sentiment.capitalize()}s {item}",
        value={"item": item, "sentiment": sentiment},
        scope=f"item:{item}",
        grounding=item,
    )


def test_a_late_event_is_historical_only_where_its_scope_holds_newer_state(
    memory: Memory, clock: FrozenClock
) -> None:
    """A family's position is one point for all its scopes: a late "likes jazz" is not
    overtaken by a newer "likes tea", while a late "dislikes tea" is."""
    clock.set(day(10, 20))
    fan = actor("likes")
    memory.ingest(event("e2", "I like tea.", occurred_at=day(10, 2), who=fan), [taste("tea")])
    late = memory.ingest(
        event("e1", "I like jazz.", occurred_at=day(10, 1), who=fan), [taste("jazz")]
    )
    assert [r.disposition for r in late.results] == ["current"]
    older = memory.ingest(
        event("e0", "I dislike tea.", occurred_at=day(9, 30), who=fan),
        [taste("tea", "dislike")],
    )
    assert [(r.disposition, r.reason) for r in older.results] == [("historical", "older_sequence")]
    now = memory.current(SUBJECT, "likes", tenant=TENANT, valid_at=day(10, 20))
    assert sorted(str(r.value) for r in now) == sorted(
        [str({"item": "jazz", "sentiment": "like"}), str({"item": "tea", "sentiment": "like"})]
    )
    with memory.store.read() as unit:  # the family still stands at its newest event
        (slot,) = [s for s in unit.families(TENANT, SUBJECT) if s.family == "likes"]
    assert slot.position is not None and slot.position.event_id == "e2"
