"""Questions that gather several things of one kind, and the query recall embeds
(issue 10): "What activities does Mel do?" finds each activity in a turn of its own,
so the replies around the best match lend nothing; the vectors see the question
without the names it holds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from embedder_helpers import HashingWrapper
from memledger import Memory
from memledger.errors import InvalidQueryError
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import Vectors
from memledger.read.recall import RecallSettings, recall
from memledger.read.understand import question_shape, understand
from memledger.testing import FrozenClock
from memledger.testing.scenarios import actor, event
from memledger.write.extract.rules import RuleExtractor

TENANT = "acme"
START = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "gathers"),
    [
        ("What activities does Melanie partake in?", True),
        ("Which kinds of books does Nate enjoy?", True),
        ("What pets does Melanie have?", True),
        ("Where has Melanie camped?", True),
        ("What have I painted this year?", True),
        ("What do Jon and Gina both like?", True),
        ("In what ways is Caroline helping the community?", True),
        ("What are some changes she has faced?", True),
        ("How many children does Melanie have?", True),
        ("What is Caroline's identity?", False),
        ("What was the name of the band?", False),
        ("What does Melanie do to relax?", False),
        ("What class did she take on Tuesday?", False),
        ("What status does the order have?", False),
        ("When did Melanie go camping?", False),
    ],
)
def test_a_question_gathers_when_it_asks_for_several_of_a_kind(
    question: str, gathers: bool
) -> None:
    shape = question_shape(question)
    assert shape.gathers is gathers
    assert not shape.words or shape.across_sessions  # gathering adds no shape words


@pytest.mark.parametrize(
    ("question", "dates"),
    [
        ("When did Melanie paint a sunrise?", True),
        ("  when is the final submission due?", True),
        ("What year did John start surfing?", True),
        ("In what month did Tim visit Universal Studios?", True),
        ("What did Melanie paint when she was young?", False),
        ("What is the date format we agreed on?", False),
        ("Where did Melanie camp?", False),
        ("When I ask about libraries, what did we pick?", False),  # a condition
    ],
)
def test_a_question_dates_when_it_asks_when_something_happened(question: str, dates: bool) -> None:
    assert question_shape(question).dates is dates


S1 = {"session": "s1"}


def say(memory: Memory, lines: Sequence[tuple[str, str]]) -> list[str]:
    for n, (speaker, text) in enumerate(lines):
        at, who = START + timedelta(minutes=n), actor(actor_id=speaker)
        memory.ingest(event(f"t{n}", text, occurred_at=at, who=who, subject="chat", metadata=S1))
    memory.process(extractor=RuleExtractor(), tenant=TENANT)
    return [f"t{n}" for n in range(len(lines))]


class RecordingEmbedder(HashingWrapper):
    """The hashing embedder, keeping every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START + timedelta(days=30))


POTTERY = [
    ("Melanie", "I signed up for a pottery class yesterday, it calms me down."),
    ("Caroline", "That sounds lovely, enjoy every minute!"),
    ("Melanie", "Thanks! Swimming with the kids is my other favourite thing."),
]


def _scores(
    memory: Memory, index: DerivedIndex, query: str, **settings: object
) -> dict[str, float]:
    result = recall(
        memory.reading,
        index,
        query,
        tenant=TENANT,
        k=10,
        settings=RecallSettings(floor=0.0, **settings),  # type: ignore[arg-type]
        touch=False,
    )
    return {i.record.source_event_id: i.score for i in result.items if i.record.kind == "episode"}


def test_a_gathering_question_lends_nothing_to_the_replies_around_a_match(
    memory: Memory, tmp_path: Path
) -> None:
    ids = say(memory, POTTERY)
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        gathering = "What classes has Melanie signed up for?"
        assert question_shape(gathering).gathers
        default = _scores(memory, index, gathering)
        lending = _scores(memory, index, gathering, stated_context_weight=1.0)
        single = _scores(
            memory, index, "Did Melanie sign up for a pottery class?", window_weight=0.0
        )
        shares = _scores(memory, index, gathering, stated_context_weight=1.0, window_weight=0.0)
        alone = _scores(memory, index, gathering, window_weight=0.0)
    # the reply holds none of the question's words: it keeps only what BM25 over its
    # window gives it, and gains a share of the match's score only when lent one
    assert default[ids[0]] > default.get(ids[1], 0.0)
    assert lending[ids[1]] > default.get(ids[1], 0.0) + 0.1
    assert alone.get(ids[1], 0.0) == 0.0 < shares[ids[1]]
    assert single[ids[1]] > 0  # a question that does not gather lends as before


def test_a_question_about_when_lends_nothing_either(memory: Memory, tmp_path: Path) -> None:
    ids = say(memory, POTTERY)
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        when = "When did Melanie sign up for a pottery class?"
        assert question_shape(when).dates and not question_shape(when).gathers
        alone = _scores(memory, index, when, window_weight=0.0)
        shares = _scores(memory, index, when, window_weight=0.0, stated_context_weight=1.0)
    assert alone[ids[0]] > 0 and alone.get(ids[1], 0.0) == 0.0 < shares[ids[1]]


def test_the_vectors_see_the_question_without_its_names(memory: Memory, tmp_path: Path) -> None:
    say(memory, POTTERY)
    embedder = RecordingEmbedder()
    with DerivedIndex(tmp_path / "v.index", embedder=embedder) as index:
        index.sync(memory.store)
        embedder.seen.clear()
        recall(
            memory.reading, index, "What does Mel's family do for fun?", tenant=TENANT, touch=False
        )
        assert embedder.seen == ["What does their family do for fun?"]
        embedder.seen.clear()
        settings = RecallSettings(keep_names=True)
        recall(memory.reading, index, "What does Mel do for fun?", tenant=TENANT, settings=settings)
        assert embedder.seen == ["What does Mel do for fun?"]
        embedder.seen.clear()
        recall(memory.reading, index, "Melanie?", tenant=TENANT, touch=False)  # nothing else asked
        assert embedder.seen == ["Melanie?"]


def test_the_words_leave_out_the_one_person_named(memory: Memory, tmp_path: Path) -> None:
    ids = say(
        memory,
        [
            ("Melanie", "The pottery class was calming, I made two bowls."),
            ("Caroline", "Thanks, Melanie! Melanie, your bowls look great, Melanie."),
        ],
    )
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        plain = _scores(memory, index, "What did Melanie make in class?", window_weight=0.0)
        kept = _scores(
            memory, index, "What did Melanie make in class?", window_weight=0.0, keep_names=True
        )
        both = "What did Caroline tell Melanie about the bowls?"
        two = _scores(memory, index, both, window_weight=0.0)
        two_kept = _scores(memory, index, both, window_weight=0.0, keep_names=True)
    # the name no longer counts for the turn that only addresses her by it
    assert plain.get(ids[1], 0.0) < kept[ids[1]]
    assert plain[ids[0]] > plain.get(ids[1], 0.0)
    # with two people named no boost stands for either: BM25 keeps the names
    assert two == pytest.approx(two_kept) and two[ids[1]] > 0


def test_only_words_that_name_someone_are_replaced() -> None:
    names = frozenset({"Melanie", "Caroline", "user-9"})
    at = START
    found = understand("Did Caroline and melanie meet Carol's friend?", names=names, at=at)
    assert found.unnamed == "Did they and they meet their friend?"  # "Carol" starts Caroline
    assert understand("Where does the user live?", names=names, at=at).unnamed == (
        "Where does the user live?"  # a role word is a noun as well as part of a name
    )
    assert understand("Where is the harbour?", names=names, at=at).unnamed is None
    assert understand("Caroline and Melanie?", names=names, at=at).unnamed is None


def test_the_gathering_setting_is_checked() -> None:
    with pytest.raises(InvalidQueryError, match="stated_context_weight"):
        RecallSettings(stated_context_weight=-0.5)
