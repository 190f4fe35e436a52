"""The worker holds an extractor's claims to the same limits as a caller's, and a long
turn's episode (the turn itself) is bounded by the text limit, not the statement one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memledger import Actor, Claim, Grant, Limits, Memory, SourceEvent
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.write.worker import episode_of

AT = datetime(2026, 3, 1, 9, tzinfo=UTC)
SAID = "I moved to Quorvale last week and I really like living there."


def _event(event_id: str, text: str = SAID) -> SourceEvent:
    return SourceEvent(
        tenant="acme",
        event_id=event_id,
        subject="u1",
        actor=Actor(id="u1", authenticated=True, grants=frozenset({Grant(family="*")})),
        channel="chat",
        occurred_at=AT,
        text=text,
    )


def _city(statement: str = "Lives in Quorvale", scope: str = "global") -> Claim:
    return Claim(
        family="home_city",
        kind="fact",
        statement=statement,
        value="Quorvale",
        grounding="moved to Quorvale",
        scope=scope,
    )


def test_an_extracted_claim_over_a_limit_is_dropped_and_counted(tmp_path: Path) -> None:
    memory = Memory.open(
        f"sqlite:///{tmp_path / 'm.db'}",
        clock=FrozenClock(AT),
        limits=Limits(max_statement_chars=60),
    )
    try:
        memory.ingest(_event("e1"))
        long = _city(statement="Lives in Quorvale, " + "which the user said " * 5)
        report = memory.process(extractor=FunctionExtractor(lambda _: [long, _city(scope="home")]))
        assert report.outcomes == {"committed": 1}
        assert memory.stats(tenant="acme")["gate:over_limit"] == 1
        (kept,) = memory.timeline("u1", "home_city", tenant="acme")
        assert kept.scope == "home"
    finally:
        memory.close()


def test_too_many_extracted_claims_go_to_review_whole(tmp_path: Path) -> None:
    memory = Memory.open(
        f"sqlite:///{tmp_path / 'm.db'}", clock=FrozenClock(AT), limits=Limits(max_claims=3)
    )
    try:
        memory.ingest(_event("e1"))
        many = [_city(scope=f"s{n}") for n in range(3)]
        report = memory.process(extractor=FunctionExtractor(lambda _: many))
        assert report.outcomes == {"review": 1}
        (review,) = memory.reviews(tenant="acme")
        assert len(review.claims) == 4  # all three, and the episode: nothing cut off
        assert memory.timeline("u1", "home_city", tenant="acme") == ()
        assert memory.stats(tenant="acme")["gate:too_many_claims"] == 1
    finally:
        memory.close()


def test_a_long_turn_keeps_its_episode(tmp_path: Path) -> None:
    memory = Memory.open(f"sqlite:///{tmp_path / 'm.db'}", clock=FrozenClock(AT))
    try:
        text = SAID + " " + "And then we talked at length about the weather. " * 800
        assert 10_000 < len(text) < 100_000
        memory.ingest(_event("e1", text))
        assert memory.process().outcomes == {"committed": 1}
        direct = _event("e2", text.replace("Quorvale", "Brindle"))
        assert memory.ingest(direct, [episode_of(direct)]).outcome == "committed"
        turns = memory.timeline("u1", "conversation", tenant="acme")
        assert [len(t.claim) for t in turns] == [len(text), len(direct.text)]
    finally:
        memory.close()
