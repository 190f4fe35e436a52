"""recall over conversation turns: vectors and their failure, neighbouring turns, people,
question times, the rewriter, and tenant isolation as a property."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embedder_helpers import HashingWrapper
from memledger import Memory
from memledger.domain.text import ends_asking
from memledger.errors import EmbedderError, InvalidQueryError, RewriterError
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder, Vectors
from memledger.read.recall import RecallResult, RecallSettings, recall
from memledger.read.rewrite import Rewrite
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import actor, event
from memledger.write.extract.rules import RuleExtractor

TENANT = "acme"
START = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


class FlakyEmbedder(HashingWrapper):
    """The hashing embedder, failing while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.down:
            raise EmbedderError("embedding endpoint unreachable", reason="unreachable")
        return self.inner.embed(texts)


class Rewriter:
    def __init__(self, *alternatives: str, fail: bool = False) -> None:
        self.alternatives = alternatives
        self.fail = fail

    def rewrite(self, query: str, *, now: datetime) -> Rewrite:
        if self.fail:
            raise RewriterError("endpoint down", reason="endpoint_unreachable")
        return Rewrite(
            queries=(query, *self.alternatives),
            names=(),
            after=None,
            before=None,
            model="test",
            prompt_version="t1",
        )


def say(
    memory: Memory,
    session: str,
    lines: Sequence[tuple[str, str]],
    *,
    at: datetime = START,
    tenant: str = TENANT,
) -> list[str]:
    """Ingest and process one session's turns; returns their event ids."""
    ids = []
    for n, (speaker, text) in enumerate(lines):
        event_id = f"{session}-{n}"
        memory.ingest(
            event(
                event_id,
                text,
                occurred_at=at + timedelta(minutes=n),
                who=actor(actor_id=speaker),
                subject="chat",
                tenant=tenant,
                metadata={"session": session},
            )
        )
        ids.append(event_id)
    memory.process(extractor=RuleExtractor(), tenant=tenant)
    return ids


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START + timedelta(days=400))


def events(result: RecallResult) -> list[str]:
    return list(dict.fromkeys(i.record.source_event_id for i in result.items))


CONCERT = [
    ("alex", "Did you finally get to the Taylor Swift concert last weekend?"),
    ("sam", "Yes! It was amazing, the crowd sang every single song with her."),
    ("alex", "I have been painting sunsets by the lake all month."),
    ("sam", "Your lake paintings always look calm and warm to me."),
]


def test_the_answer_in_the_next_turn_comes_with_its_question(
    memory: Memory, index: DerivedIndex
) -> None:
    ids = say(memory, "s1", CONCERT)
    index.sync(memory.store)
    result = recall(memory.reading, index, "How was the concert?", tenant=TENANT, k=3)
    found = events(result)
    assert found[0] == ids[1]  # the answer first: the question ends asking
    assert ids[0] in found
    reply = next(i for i in result.items if i.record.source_event_id == ids[1])
    assert "context" in reply.sources  # it has none of the question's words
    turn_ids = {i.record.source_event_id: i.record.memory_id for i in result.items}
    question = next(i for i in result.items if i.record.source_event_id == ids[0])
    assert turn_ids[ids[1]] in question.context  # neighbouring turns are handed back


def test_a_revoked_turn_lends_nothing_to_its_neighbours(
    memory: Memory, index: DerivedIndex
) -> None:
    ids = say(memory, "s1", CONCERT)
    index.sync(memory.store)
    (question,) = [
        r
        for r in memory.timeline("chat", "conversation", tenant=TENANT)
        if r.source_event_id == ids[0]
    ]
    memory.revoke(question.memory_id, tenant=TENANT)
    result = recall(memory.reading, index, "Taylor Swift concert", tenant=TENANT, k=3)
    assert result.abstained and result.items == ()  # the reply shares no word of the query
    assert {(e.memory_id, e.reason) for e in result.excluded} >= {(question.memory_id, "revoked")}


def test_the_person_a_question_names_comes_first(memory: Memory, index: DerivedIndex) -> None:
    ids = say(
        memory,
        "s1",
        [
            ("Melanie-Jones", "I started pottery classes on Tuesday evenings."),
            ("Caroline_Smith", "I started pottery classes too, on Saturday mornings."),
        ],
    )
    index.sync(memory.store)
    for query, who in (
        ("When are Caroline's pottery classes?", ids[1]),
        ("When are Mel's pottery classes?", ids[0]),
        ("When are melanie's pottery classes?", ids[0]),
    ):
        result = recall(memory.reading, index, query, tenant=TENANT, k=2)
        assert events(result)[0] == who, query
        assert len(result.understood.people) == 1


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Where was that?", True),
        ("Nice! Where was that?", True),
        ('She said "really?"', True),
        ("Where was that? [a photo of a lake at dusk]", True),
        ("Where was that?) ", True),
        ("Was it? No, it was Tuesday.", False),
        ("We went to the lake. [is this a caption?]", False),
        ("[a photo of a lake]", False),
        ("", False),
        ("?", True),
    ],
)
def test_a_turn_ends_asking_when_its_last_sentence_is_a_question(text: str, asks: bool) -> None:
    assert ends_asking(text) is asks


def test_a_turn_that_ends_asking_ranks_below_one_that_states(
    memory: Memory, index: DerivedIndex
) -> None:
    (asked,) = say(memory, "s1", [("alex", "Sam, you joined the kayak club on the river?")])
    (stated,) = say(memory, "s2", [("sam", "Alex, I joined the kayak club on the river.")])
    index.sync(memory.store)
    query = "Who joined the kayak club on the river?"

    def scores(weight: float) -> dict[str, float]:
        settings = RecallSettings(asking_weight=weight)
        result = recall(
            memory.reading, index, query, tenant=TENANT, k=10, settings=settings, touch=False
        )
        return {
            i.record.source_event_id: i.score for i in result.items if i.record.kind == "episode"
        }

    full, none, default = scores(1.0), scores(0.0), scores(RecallSettings().asking_weight)
    weight = RecallSettings().asking_weight
    assert 0 < weight < 1
    # what the asking turn owes to its window (and vectors) counts ``weight`` times; its
    # own BM25 match in full; the stating turn is untouched
    assert none[asked] < full[asked]
    assert default[asked] - none[asked] == pytest.approx(weight * (full[asked] - none[asked]))
    assert default[stated] == pytest.approx(full[stated])
    assert default[stated] > default[asked]
    with pytest.raises(InvalidQueryError, match="asking_weight"):
        RecallSettings(asking_weight=-0.1)


def test_vector_hits_no_nearer_than_a_typical_entry_are_no_candidates(
    memory: Memory, tmp_path: Path
) -> None:
    lines = [
        ("alex", "We adopted a grey cat called Pepper from the shelter."),
        ("alex", "The quarterly budget review moved to Thursday afternoon."),
        ("alex", "My sister plays the violin in the city orchestra."),
        ("alex", "I am learning to bake sourdough bread on weekends."),
        ("alex", "Our team ships the mobile release every other Tuesday."),
        ("alex", "The garden needs watering twice a day in July."),
        ("alex", "I keep my running shoes by the front door."),
        ("alex", "Grandma's recipe for plum cake uses cardamom."),
    ]
    for n, line in enumerate(lines):  # one session each: no window or neighbour shares
        say(memory, f"s{n}", [line])
    with DerivedIndex(tmp_path / "v.index", embedder=HashingEmbedder()) as index:
        index.sync(memory.store)
        result = recall(
            memory.reading,
            index,
            "grey cat from the shelter",
            tenant=TENANT,
            k=50,
            settings=RecallSettings(floor=0.0),
        )
    by_vector = {i.record.source_event_id for i in result.items if "vector" in i.sources}
    assert "s0-0" in by_vector
    # the median splits the entries: at most half of them are nearer than it
    assert 0 < len(by_vector) <= len(lines) // 2


def test_a_time_in_the_question_prefers_what_was_said_then(
    memory: Memory, index: DerivedIndex
) -> None:
    may = say(memory, "s1", [("dana", "We went hiking up Mount Tam with the dog.")])
    july = say(
        memory,
        "s2",
        [("dana", "We went hiking up Mount Diablo with the dog.")],
        at=datetime(2023, 7, 20, 9, tzinfo=UTC),
    )
    index.sync(memory.store)
    in_july = recall(
        memory.reading, index, "Where did Dana go hiking in July 2023?", tenant=TENANT, k=2
    )
    in_may = recall(
        memory.reading, index, "Where did Dana go hiking in May 2023?", tenant=TENANT, k=2
    )
    assert events(in_july)[0] == july[0] and events(in_may)[0] == may[0]
    assert in_july.understood.time is not None
    assert in_july.understood.time.start == datetime(2023, 7, 1, tzinfo=UTC)


def test_a_broken_embedder_degrades_to_lexical_and_says_so(memory: Memory, tmp_path: Path) -> None:
    flaky = FlakyEmbedder()
    ids = say(memory, "s1", CONCERT)
    with DerivedIndex(tmp_path / "flaky.index", embedder=flaky) as index:
        index.sync(memory.store)
        hybrid = recall(memory.reading, index, "calm warm paintings", tenant=TENANT, k=2)
        flaky.down = True
        lexical = recall(memory.reading, index, "calm warm paintings", tenant=TENANT, k=2)
    assert hybrid.mode == "hybrid" and hybrid.degraded is None
    assert lexical.mode == "lexical"
    assert lexical.degraded is not None and "unreachable" in lexical.degraded
    assert events(lexical)[0] == ids[3]  # still right, only without vectors
    assert all("vector" not in i.sources for i in lexical.items)


def test_a_rewriter_adds_phrasings_and_its_failure_is_only_a_note(
    memory: Memory, index: DerivedIndex
) -> None:
    ids = say(memory, "s1", CONCERT)
    index.sync(memory.store)
    plain = recall(memory.reading, index, "What art does Alex make?", tenant=TENANT, k=2)
    helped = recall(
        memory.reading,
        index,
        "What art does Alex make?",
        tenant=TENANT,
        k=2,
        rewriter=Rewriter("Alex painting sunsets"),
    )
    failed = recall(
        memory.reading,
        index,
        "What art does Alex make?",
        tenant=TENANT,
        k=2,
        rewriter=Rewriter(fail=True),
    )
    assert ids[2] not in events(plain)
    assert events(helped)[0] == ids[2]
    assert helped.understood.queries == ("What art does Alex make?", "Alex painting sunsets")
    assert events(failed) == events(plain)
    assert failed.understood.notes and "rewriter failed" in failed.understood.notes[0]


WORDS = ["lake", "paint", "concert", "dog", "hike", "pottery", "coffee", "train", "garden"]
sentences = st.lists(st.sampled_from(WORDS), min_size=3, max_size=6).map(
    lambda words: "I really enjoy " + " and ".join(words) + " these days."
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    mine=st.lists(sentences, min_size=1, max_size=4),
    theirs=st.lists(sentences, min_size=0, max_size=6),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
)
def test_another_tenant_never_changes_a_recall(
    tmp_path_factory: pytest.TempPathFactory, mine: list[str], theirs: list[str], query: str
) -> None:
    """Recall for one tenant is the same, ids and scores, whatever another tenant holds,
    even the very same texts."""

    def run(with_other: bool) -> list[tuple[str, float]]:
        folder = tmp_path_factory.mktemp("iso")
        clock = FrozenClock(START + timedelta(days=30))
        with Memory(open_store(folder / "m.db"), clock=clock) as memory:
            say(memory, "s1", [("pat", text) for text in mine])
            if with_other:
                say(memory, "s1", [("pat", t) for t in mine + theirs], tenant="globex")
            with DerivedIndex(folder / "m.index", embedder=HashingEmbedder()) as index:
                index.sync(memory.store)
                result = recall(memory.reading, index, query, tenant=TENANT, k=10)
                theirs_ids = {
                    r.memory_id
                    for slot in memory.families("chat", tenant="globex")
                    for r in memory.history("chat", slot.family, tenant="globex")
                }
                assert bool(theirs_ids) == with_other  # their turns are stored, with ids
                assert all(i.record.tenant == TENANT for i in result.items)
                named = {i.record.memory_id for i in result.items}
                named |= {e.memory_id for e in result.excluded}
                named |= {c for i in result.items for c in i.context}
                assert not named & theirs_ids  # not returned, excluded nor named as context
                return [(i.record.memory_id, round(i.score, 9)) for i in result.items]

    alone, beside = run(False), run(True)
    assert alone == beside
    assert np.isfinite([score for _, score in alone]).all()


def test_the_facade_keeps_its_index_beside_the_store(tmp_path: Path) -> None:
    clock = FrozenClock(START + timedelta(days=2))
    with Memory.open(tmp_path / "m.db", clock=clock) as memory:
        ids = say(memory, "s1", CONCERT)
        # syncs the index first; touches nothing, so the same read ranks the same later
        first = memory.recall("calm warm paintings", tenant=TENANT, k=1, touch=False)
        assert events(first) == [ids[3]] and first.index_lag == 0
        assert (tmp_path / "m.db.index").exists()
        assert memory.reindex() > 0
        again = memory.recall("calm warm paintings", tenant=TENANT, k=1, touch=False)
        assert again.items == first.items
        more = say(memory, "s2", [("sam", "The lake froze over so we went skating on it.")])
        stale = memory.recall("skating on the lake", tenant=TENANT, k=1, sync=False)
        assert stale.index_lag > 0 and more[0] not in events(stale)
        assert events(memory.recall("skating on the lake", tenant=TENANT, k=1)) == more


def test_an_index_fed_while_the_embedder_was_down_says_so(memory: Memory, tmp_path: Path) -> None:
    flaky = FlakyEmbedder()
    flaky.down = True
    ids = say(memory, "s1", CONCERT)
    with DerivedIndex(tmp_path / "gap.index", embedder=flaky) as index:
        index.sync(memory.store)  # entries stored without vectors
        flaky.down = False
        gap = recall(memory.reading, index, "calm warm paintings", tenant=TENANT, k=1)
        index.sync(memory.store)  # backfills
        whole = recall(memory.reading, index, "calm warm paintings", tenant=TENANT, k=1)
    assert gap.mode == "lexical" and gap.degraded and "unreachable" in gap.degraded
    assert events(gap) == [ids[3]]
    assert whole.mode == "hybrid" and whole.degraded is None and events(whole) == [ids[3]]
