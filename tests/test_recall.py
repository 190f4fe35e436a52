"""recall: canonical recheck, overlay, exclusions with reasons, abstention, isolation."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from embedder_helpers import HashingWrapper
from memledger import Claim, InvalidQueryError, Memory, RevisionNotMetError
from memledger.domain.keys import namespace_of
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.read.recall import RecallSettings, recall, time_weight
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, actor, day, event, pref
from memledger.write.worker import episode_of

QUESTION = "When should the digest be delivered?"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 2))


def digest(value: str) -> list[Claim]:
    return [pref(value, statement=f"Digest delivered {value}")]


def test_a_record_whose_source_event_was_revoked_is_never_returned(
    memory: Memory, index: DerivedIndex
) -> None:
    """The canonical recheck reads the revoked sources of every candidate's family, all
    at once: a record still open whose event was revoked for its family (as a late write
    would leave it) is excluded, while other families' records stay."""
    memory.ingest(event("e1", "Fridays", occurred_at=day(10, 2), sequence=1), digest("friday"))
    turn = event("e2", "I like the digest emails", occurred_at=day(10, 2), sequence=2)
    memory.ingest(turn, [episode_of(turn)])
    index.sync(memory.store)
    (friday,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    with memory.store.write() as unit:
        unit.add_revoked_source(TENANT, SUBJECT, FAMILY, event_id="e1", generation=1)
    result = recall(memory.reading, index, "digest friday emails", tenant=TENANT, subject=SUBJECT)
    excluded = {(e.memory_id, e.reason) for e in result.excluded}
    assert (friday.memory_id, "revoked_source") in excluded
    assert friday.memory_id not in {i.record.memory_id for i in result.items}
    assert "e2" in {i.record.source_event_id for i in result.items}  # another family stays


def test_a_stale_index_never_returns_the_corrected_value(
    memory: Memory, index: DerivedIndex, clock: FrozenClock
) -> None:
    first = memory.ingest(
        event("e1", "Fridays", occurred_at=day(10, 2), sequence=1), digest("friday")
    )
    index.sync(memory.store)  # the index holds revision 1
    clock.set(day(10, 5))
    fix = memory.ingest(
        event("e2", "Daily from now", occurred_at=day(10, 5), sequence=2), digest("daily")
    )
    assert index.lag(memory.store) > 0  # the correction is not indexed yet
    result = recall(
        memory.reading,
        index,
        QUESTION,
        tenant=TENANT,
        subject=SUBJECT,
        min_revision=fix.revision(FAMILY),
    )
    values = [(i.record.value, i.sources) for i in result.items]
    assert values == [("daily", ("slot",))]  # from the canonical slot, not the index
    (friday,) = [r.memory_id for r in first.results]
    assert {(e.memory_id, e.reason) for e in result.excluded} == {(friday, "superseded")}
    assert result.index_lag > 0 and not result.abstained
    with pytest.raises(RevisionNotMetError):
        recall(memory.reading, index, QUESTION, tenant=TENANT, subject=SUBJECT, min_revision=99)


def test_revoked_expired_and_future_records_never_come_back(
    memory: Memory, index: DerivedIndex, clock: FrozenClock
) -> None:
    family = "likes"

    def like(n: int, item: str, **window: datetime) -> None:
        memory.ingest(
            event(f"e{n}", f"I love {item}", occurred_at=day(10, 1), sequence=n, who=actor(family)),
            [
                Claim(
                    family=family,
                    kind="preference",
                    statement=f"Loves {item}",
                    value={"item": item, "sentiment": "like"},
                    scope=f"item:{item}",
                    **window,
                )
            ],
        )

    like(1, "sushi")
    like(2, "ramen", valid_until=day(10, 3))
    like(3, "tacos", valid_from=day(11, 1))
    like(4, "olives")
    index.sync(memory.store)
    (olives,) = [
        r for r in memory.timeline(SUBJECT, family, tenant=TENANT) if r.scope == "item:olives"
    ]
    memory.revoke(olives.memory_id, tenant=TENANT)
    clock.set(day(10, 10))
    result = recall(
        memory.reading,
        index,
        "Which food do I love: sushi, ramen, tacos or olives?",
        tenant=TENANT,
        subject=SUBJECT,
    )
    assert [i.record.value["item"] for i in result.items] == ["sushi"]  # type: ignore[index]
    reasons = {e.reason for e in result.excluded}
    assert reasons == {"expired", "not_yet_valid", "revoked"}


def test_abstains_instead_of_returning_the_nearest_thing(
    memory: Memory, index: DerivedIndex
) -> None:
    """The query shares one word of seven with the only memory: it is found, with a
    score, and covers less than the relevance floor, so recall abstains."""
    memory.ingest(event("e1", "Fridays", occurred_at=day(10, 2), sequence=1), digest("friday"))
    index.sync(memory.store)
    query = "Which museums in Lima open early, and does the digest of their exhibitions list them?"
    result = recall(memory.reading, index, query, tenant=TENANT)
    assert result.abstained and result.items == ()
    # the nearest thing is there: without the floor it would have been returned
    floorless = recall(
        memory.reading, index, query, tenant=TENANT, settings=RecallSettings(floor=0.0)
    )
    (nearest,) = floorless.items
    assert nearest.score > 0 and 0 < nearest.relevance < RecallSettings().floor
    assert not floorless.abstained
    assert not recall(memory.reading, index, "digest friday", tenant=TENANT).abstained


def test_a_slot_the_query_names_is_relevant_without_sharing_its_words(
    memory: Memory, index: DerivedIndex
) -> None:
    """A question naming a family ("newsletter": delivery_preference) of a subject gets
    that slot's value even when the value shares none of its words: a slot is relevant
    at 0.5, above the floor; without the subject, no slot is named and recall abstains."""
    memory.ingest(event("e1", "Fridays", occurred_at=day(10, 2), sequence=1), digest("friday"))
    index.sync(memory.store)
    query = "Which newsletter reaches the museums, galleries and theatres of Lima first?"
    (item,) = recall(memory.reading, index, query, tenant=TENANT, subject=SUBJECT).items
    assert (item.record.value, item.sources, item.relevance) == ("friday", ("slot",), 0.5)
    assert recall(memory.reading, index, query, tenant=TENANT).abstained


class SemanticFake(HashingWrapper):
    """The hashing embedder under another name: its cosines then count as meaning."""

    @property
    def name(self) -> str:
        return "semantic-fake:1"


def test_a_semantic_vector_match_is_relevant_and_a_spelling_one_is_not(
    memory: Memory, tmp_path: Path
) -> None:
    """A memory that shares no word with the query but is its nearest vector is relevant
    with a semantic embedder; with the spelling-only hashing one the same cosine is no
    relevance, and recall abstains."""
    memory.ingest(event("e1", "Fridays", occurred_at=day(10, 2), sequence=1), digest("friday"))
    for n, text in enumerate(["Kayaks rented on lakes", "Owns three parrots", "Plays cello"]):
        claim = Claim(family=FAMILY, kind="preference", statement=text, value=str(n))
        memory.ingest(event(f"o{n}", text, occurred_at=day(10, 2), subject=f"s{n}"), [claim])
    query = "fridaydigestdelivered"  # one word, spelt like the memory, that it never says
    semantic = DerivedIndex(tmp_path / "semantic.index", embedder=SemanticFake())
    spelling = DerivedIndex(tmp_path / "spelling.index", embedder=HashingEmbedder())
    for index in (semantic, spelling):
        index.sync(memory.store)
    (item,) = recall(memory.reading, semantic, query, tenant=TENANT).items
    assert (item.record.value, item.sources, item.relevance) == ("friday", ("vector",), 1.0)
    assert recall(memory.reading, spelling, query, tenant=TENANT).abstained
    semantic.close()
    spelling.close()


def test_tenants_never_see_each_other(memory: Memory, index: DerivedIndex) -> None:
    for tenant in ("acme", "globex"):
        memory.ingest(
            event("e1", "Fridays", occurred_at=day(10, 2), tenant=tenant), digest("friday")
        )
    index.sync(memory.store)
    acme = recall(memory.reading, index, "digest friday", tenant="acme", subject=SUBJECT)
    globex = {r.memory_id for r in memory.history(SUBJECT, FAMILY, tenant="globex")}
    assert len(acme.items) == 1 and acme.items[0].record.tenant == "acme"
    assert not globex & {i.record.memory_id for i in acme.items}
    assert not globex & {e.memory_id for e in acme.excluded}
    assert recall(memory.reading, index, "digest friday", tenant="initech").abstained


@pytest.mark.parametrize(
    ("query", "k", "tenant", "message"),
    [
        ("", 5, TENANT, "non-empty"),
        ("x" * 5000, 5, TENANT, "at most"),
        ("digest", 0, TENANT, "k must"),
        ("digest", 101, TENANT, "k must"),
        ("digest", 5, "", "tenant"),
    ],
)
def test_bad_input_is_refused(
    memory: Memory, index: DerivedIndex, query: str, k: int, tenant: str, message: str
) -> None:
    with pytest.raises(InvalidQueryError, match=message):
        recall(memory.reading, index, query, tenant=tenant, k=k)


def test_old_memories_are_down_weighted_not_dropped() -> None:
    assert time_weight(0, tau_days=30) == pytest.approx(1.0)
    assert time_weight(10_000, tau_days=30) == pytest.approx(0.3)
    assert time_weight(30, tau_days=30) > time_weight(60, tau_days=30) > 0.3


def test_old_is_relative_to_how_far_back_the_history_goes(
    memory: Memory, index: DerivedIndex, clock: FrozenClock
) -> None:
    """A turn 400 days old in a history of 400 days keeps 0.3 + 0.7 * exp(-1/10) of its
    score (the constant is 10 x the span); with ``tau_span=0`` the fixed 180 days
    leave it 0.3 + 0.7 * exp(-400/180)."""
    from datetime import timedelta

    from memledger.read.recall import RecallSettings
    from memledger.write.worker import episode_of

    now = day(10, 2)
    for n, age in enumerate((400, 1)):
        said = event(f"t{n}", "The sourdough starter smells of acetone.", occurred_at=now)
        said = replace(said, occurred_at=now - timedelta(days=age))
        memory.ingest(said, [episode_of(said)])
    index.sync(memory.store)
    asked = "sourdough starter acetone"
    weights = {
        i.record.source_event_id: i.time_weight
        for i in recall(
            memory.reading, index, asked, tenant=TENANT, valid_at=now, touch=False
        ).items
    }  # not touched: a read would lift what it hands out (test_decay.py)
    assert RecallSettings().tau_span == 10.0
    assert weights["t0"] == pytest.approx(time_weight(400, tau_days=4000))
    assert weights["t0"] == pytest.approx(0.3 + 0.7 * math.exp(-1 / 10))
    fixed = RecallSettings(tau_span=0.0)
    found = recall(memory.reading, index, asked, tenant=TENANT, valid_at=now, settings=fixed)
    weights = {i.record.source_event_id: i.time_weight for i in found.items}
    assert weights["t0"] == pytest.approx(0.3 + 0.7 * math.exp(-400 / 180))
    assert weights["t1"] > weights["t0"]


def test_a_hit_through_an_entry_older_than_its_record_is_checked(
    memory: Memory, index: DerivedIndex, tmp_path: Path
) -> None:
    """A repeat raises the record's revision (mentions) past its index entry: same words,
    still returned. An entry older than the record with other words is excluded."""
    first = memory.ingest(
        event("e1", "Fridays", occurred_at=day(10, 2), sequence=1), digest("friday")
    )
    index.sync(memory.store)
    memory.ingest(event("e2", "Fridays", occurred_at=day(10, 3), sequence=2), digest("friday"))
    (record,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    (memory_id,) = [r.memory_id for r in first.results]
    assert record.memory_id == memory_id and record.mentions == 2  # a NOOP, revision 2
    kept = recall(memory.reading, index, "digest friday", tenant=TENANT)
    assert [i.record.memory_id for i in kept.items] == [memory_id]
    assert kept.items[0].record.revision == 2 and kept.index_lag > 0

    with sqlite3.connect(index.path) as conn:  # an index copy that held other words
        conn.execute("UPDATE entries SET text = 'Digest delivered on Mondays'")
    # a handle opened on that copy (one already open keeps the vectors and entries it
    # read: a copy changed behind the index's back is not news to it)
    with DerivedIndex(index.path, embedder=index.embedder) as copy:
        stale = recall(memory.reading, copy, "digest friday", tenant=TENANT)
    assert stale.items == ()
    assert [(e.memory_id, e.reason) for e in stale.excluded] == [(memory_id, "stale_index")]


def test_a_revision_floor_without_a_subject_is_refused(memory: Memory, index: DerivedIndex) -> None:
    with pytest.raises(InvalidQueryError, match="needs a subject"):
        recall(memory.reading, index, QUESTION, tenant=TENANT, min_revision=1)


def test_index_lag_counts_only_rows_of_subjects_the_reader_may_see(
    memory: Memory, index: DerivedIndex
) -> None:
    """Another agent's private writes the index has not applied yet are not counted for a
    reader that may not read its namespace: its lag is as if they had not been made."""
    for n, subject in enumerate((SUBJECT, "agent:planner/x", "agent:bo", "agent:bo/y")):
        said = event(f"e{n}", "Fridays", occurred_at=day(10, 2), subject=subject)
        memory.ingest(said, digest("friday"))

    def lag(*namespaces: str) -> int:
        def visible(subject: str) -> bool:
            return namespace_of(subject) in (None, *namespaces)

        return recall(memory.reading, index, "digest", tenant=TENANT, visible=visible).index_lag

    assert recall(memory.reading, index, "digest", tenant=TENANT).index_lag == 4
    assert (lag(), lag("agent:planner"), lag("agent:bo"), lag("agent:bo", "agent:planner")) == (
        1,
        2,
        3,
        4,
    )
