"""Current before stale (issue 10, item 7): asked about something that changed, recall
puts the current value first and marks the turn whose statement was overtaken."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from memledger import Memory, SourceEvent
from memledger.read.recall import RecallSettings
from memledger.testing.scenarios import actor, event

ME = actor("*", actor_id="user-9")
OpenIndexed = Callable[[datetime], Memory]


def _said(event_id: str, text: str, at: datetime) -> SourceEvent:
    return event(event_id, text, occurred_at=at, subject="user-9", who=ME, role="user")


def test_where_the_user_lives_now_comes_first(indexed_memory: OpenIndexed) -> None:
    memory = indexed_memory(datetime(2026, 3, 20, tzinfo=UTC))
    memory.ingest(_said("jan", "I live in Lisbon these days.", datetime(2026, 1, 10, tzinfo=UTC)))
    memory.ingest(
        _said("mar", "Actually I moved to Porto last month.", datetime(2026, 3, 12, tzinfo=UTC))
    )
    memory.process()
    result = memory.recall("where does the user live?", tenant="acme", subject="user-9")
    first = result.items[0].record
    assert (first.family, first.value) == ("home_city", "Porto")
    assert first.valid_from == datetime(2026, 2, 1, tzinfo=UTC)  # "last month"
    order = [i.record.source_event_id for i in result.items]
    old = next(i for i in result.items if i.record.source_event_id == "jan")
    assert old.outdated_by == first.memory_id
    assert order.index("jan") > 0 and old.score < result.items[0].score
    assert all(i.outdated_by is None for i in result.items if i.record.source_event_id == "mar")
    # outdated turns keep outdated_weight of their score: with 1.0 they are not lowered
    kept = memory.recall(
        "where does the user live?",
        tenant="acme",
        subject="user-9",
        settings=RecallSettings(outdated_weight=1.0),
    )
    same = next(i for i in kept.items if i.record.source_event_id == "jan")
    assert same.score > old.score


def test_an_expired_record_is_never_named_as_the_replacement(
    indexed_memory: OpenIndexed,
) -> None:
    from memledger import Claim
    from memledger.write.worker import episode_of

    asked = datetime(2026, 3, 20, tzinfo=UTC)
    memory = indexed_memory(datetime(2026, 3, 12, 12, tzinfo=UTC))

    def city(value: str, *, expires_at: datetime | None = None) -> Claim:
        return Claim(family="home_city", kind="fact", statement=f"Lives in {value}",
                     value=value, grounding=value, expires_at=expires_at)  # fmt: skip

    jan = _said("jan", "I live in Lisbon these days.", datetime(2026, 1, 10, tzinfo=UTC))
    memory.ingest(jan, [city("Lisbon"), episode_of(jan)])
    mar = _said("mar", "Staying in Porto until the 15th.", datetime(2026, 3, 12, tzinfo=UTC))
    until = datetime(2026, 3, 15, tzinfo=UTC)  # Porto's record expires before the question
    memory.ingest(mar, [city("Porto", expires_at=until), episode_of(mar)])
    memory.clock.set(asked)  # type: ignore[attr-defined]
    result = memory.recall("where does the user live?", tenant="acme", subject="user-9")
    turns = [i for i in result.items if i.record.source_event_id == "jan"]
    assert turns and turns[0].record.kind == "episode"
    assert turns[0].outdated_by is None  # Porto expired: nothing holds the slot now


def test_a_turn_that_still_holds_one_of_its_claims_is_not_outdated(
    indexed_memory: OpenIndexed,
) -> None:
    memory = indexed_memory(datetime(2026, 3, 20, tzinfo=UTC))
    both = "I live in Lisbon. I'm vegetarian."
    memory.ingest(_said("jan", both, datetime(2026, 1, 10, tzinfo=UTC)))
    memory.ingest(_said("feb", "I live in Faro.", datetime(2026, 2, 10, tzinfo=UTC)))
    memory.ingest(
        _said("mar", "Actually I moved to Porto last month.", datetime(2026, 3, 12, tzinfo=UTC))
    )
    memory.process()
    with memory.store.read() as unit:
        jan = {r.family for r in unit.claims_of_events("acme", ["jan"])}
    assert jan == {"home_city", "attribute"}
    result = memory.recall("Do I live in Lisbon?", tenant="acme", subject="user-9")
    marks = {i.record.source_event_id: i.outdated_by for i in result.items}
    # January's diet still holds: the turn is not outdated; February said only the city
    assert marks["jan"] is None and marks["feb"] is not None, marks
