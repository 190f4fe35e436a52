"""Decisions inside one event commit, with caller claims on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

from memledger import Claim, Memory
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import TENANT, actor, day, event

WHO = actor("likes", actor_id="user-42")


def likes(item: str, scope: str, statement: str | None = None) -> Claim:
    return Claim(
        family="likes",
        kind="preference",
        statement=statement or f"Loves {item}",
        value={"item": item, "sentiment": "like"},
        scope=scope,
    )


def test_a_claim_decided_against_a_record_another_claim_replaces_is_decided_again(
    tmp_path: Path,
) -> None:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 1)))
    memory.ingest(
        event("e1", "I love sushi", occurred_at=day(10, 1), sequence=1, who=WHO),
        [likes("sushi", "item:a")],
    )
    receipt = memory.ingest(
        event("e2", "Ramen now, and sushi", occurred_at=day(10, 2), sequence=2, who=WHO),
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
    memory.close()


def test_one_event_repeating_itself_counts_one_mention(tmp_path: Path) -> None:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 1)))
    memory.ingest(
        event("e1", "I love sushi", occurred_at=day(10, 1), sequence=1, who=WHO),
        [likes("sushi", "item:sushi")],
    )
    receipt = memory.ingest(
        event("e2", "Sushi! I love sushi", occurred_at=day(10, 2), sequence=2, who=WHO),
        [likes("sushi", "item:sushi"), likes("sushi", "item:sushi-rolls")],
    )
    assert {r.decision for r in receipt.results} == {"noop"}
    (record,) = memory.timeline("user-42", "likes", tenant=TENANT)
    assert record.mentions == 2
    memory.close()
