"""Re-derivation never proposes what a revocation took away, nor anything of a forgotten
event: its dry-run diff is a read path too."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memledger import Claim, Memory, SourceEvent
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import actor, event, fact

AT = datetime(2026, 3, 1, 9, tzinfo=UTC)
ANYONE = actor("*", actor_id="u1")


def _said(event_id: str, text: str, minute: int) -> SourceEvent:
    return event(event_id, text, occurred_at=AT.replace(minute=minute), subject="u1", who=ANYONE)


def _claims(event: SourceEvent) -> list[Claim]:
    if "Quorvale" in event.text:
        return [
            fact("home_city", "Lives in Quorvale", "Quorvale", grounding="moved to Quorvale"),
            fact("employer", "Works at Initech", "Initech", grounding="work at Initech"),
        ]
    return [fact("timezone", "Lives in Oslo time", "Europe/Oslo", grounding="Oslo time")]


def _other_extractor(event: SourceEvent) -> list[Claim]:
    """Files the same words in other families than the first extractor did."""
    if "Quorvale" in event.text:
        return [
            fact("relationship", "Moved to Quorvale", "Quorvale", grounding="moved to Quorvale"),
            fact("role", "Works at Initech", "Initech", grounding="work at Initech"),
        ]
    return [
        Claim(
            family="language",
            kind="preference",
            statement="Oslo time",
            value="nb",
            grounding="Oslo time",
        )
    ]


def test_rederive_leaves_out_revoked_words_and_forgotten_events(tmp_path: Path) -> None:
    memory = Memory.open(f"sqlite:///{tmp_path / 'm.db'}", clock=FrozenClock(AT))
    try:
        move = _said("e1", "I moved to Quorvale last week and I work at Initech.", 0)
        oslo = _said("e2", "Please answer me in Oslo time from now on.", 5)
        for said in (move, oslo):
            memory.ingest(said)
        memory.process(extractor=FunctionExtractor(_claims))
        (city,) = memory.timeline("u1", "home_city", tenant="acme")
        memory.revoke(city.memory_id, tenant="acme")
        memory.forget("e2", tenant="acme")
        diff = memory.rederive("u1", tenant="acme", extractor=FunctionExtractor(_other_extractor))
        assert diff.events == 1  # the forgotten event is not replayed
        added = {(r.family, str(r.value)) for r in diff.added}
        assert added == {("role", "Initech")}  # Initech stays; Quorvale and e2 do not
    finally:
        memory.close()
