"""Questions across sessions and questions about what the assistant said (issue 10,
item 4): the shape of a question, the top k spread over the sessions that match,
the items in time order when the question asks for an order, and the assistant's
turns as the evidence when the question asks what "you" said."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memledger import Actor, Memory, SourceEvent
from memledger.index.derived import DerivedIndex
from memledger.read.recall import RecallSettings, recall, session_of
from memledger.read.understand import Shape, question_shape
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.write.worker import episode_of

AT = datetime(2026, 3, 1, 9, tzinfo=UTC)
NOW = AT + timedelta(days=30)


@pytest.mark.parametrize(
    ("question", "shape"),
    [
        (
            "Can you list the order in which I brought up parts of my budget tracker?",
            Shape(across_sessions=True, ordered=True),
        ),
        ("In what order did I mention the three books?", Shape(across_sessions=True, ordered=True)),
        (
            "How many new columns did I add to the table across my requests?",
            Shape(across_sessions=True, gathers=True),
        ),
        (
            "How many times has Joanna found new hiking trails?",
            Shape(across_sessions=True, gathers=True),
        ),
        (
            "How have my essay goals evolved since the first draft?",
            Shape(across_sessions=True),
        ),
        (
            "Considering my choices across all sessions, what should I read next?",
            Shape(across_sessions=True),
        ),
        ("What approach did you recommend for the hiring process?", Shape(to_agent=True)),
        ("How did you help me balance my spending?", Shape(to_agent=True)),
        ("Remind me of your advice on sleep.", Shape(to_agent=True)),
        ("When does my first sprint end?", Shape(dates=True)),
        # a request, not a recall (of several tools)
        ("What tools would you suggest for drafting?", Shape(gathers=True)),
        ("Could you show me how to implement a login feature?", Shape()),
        ("How many books are on my list?", Shape(gathers=True)),
        ("When did I first mention the tracker?", Shape(dates=True)),
    ],
)
def test_the_shape_of_a_question(question: str, shape: Shape) -> None:
    found = question_shape(question)
    assert replace(found, words=frozenset()) == shape
    # the words that only give it its shape count for no memory's relevance
    assert bool(found.words) == (replace(shape, gathers=False, dates=False) != Shape())


def test_the_words_of_the_shape_are_not_what_it_asks_about() -> None:
    words = question_shape("In what order did I mention the violin and the concert?").words
    assert {"order", "mention"} <= words and not words & {"violin", "concert"}


def turn(n: int, text: str, *, session: str, role: str = "user", day: int = 0) -> SourceEvent:
    return SourceEvent(
        tenant="acme",
        event_id=f"t{n}",
        subject="u1",
        actor=Actor(id=role, authenticated=True),
        channel="chat",
        occurred_at=AT + timedelta(days=day, minutes=n),
        text=text,
        metadata={"session": session},
        role=role,  # type: ignore[arg-type]
    )


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[tuple[Memory, DerivedIndex]]:
    """One session that talks of the budget tracker at length, two later ones that
    bring it up once each, among other talk (enough of it that the tracker's words
    are rare)."""
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(NOW))
    said = [
        ("s1", 0, "My budget tracker needs a transactions table for the budget tracker."),
        ("s1", 0, "The budget tracker transactions table needs an amount column."),
        ("s1", 0, "For the budget tracker, the transactions table also needs a date column."),
        ("s1", 0, "The budget tracker transactions table gets a currency column too."),
        ("s1", 0, "I also want the budget tracker transactions table indexed."),
        ("s2", 7, "Now the budget tracker needs a category column."),
        ("s2", 7, "I adopted a cat called Miso last weekend."),
        ("s3", 14, "Finally, a notes column for the budget tracker."),
        ("s3", 14, "The weather in Porto was lovely this week."),
        *[
            ("s4", 20, f"Other talk, part {n}: the garden, the train, the book club.")
            for n in range(12)
        ],
    ]
    for n, (session, day, text) in enumerate(said):
        event = turn(n, text, session=session, day=day)
        memory.ingest(event, [episode_of(event)])
    index = DerivedIndex(tmp_path / "m.index")
    index.sync(memory.store)
    yield memory, index
    index.close()
    memory.close()


def sessions(memory: Memory, index: DerivedIndex, question: str, **settings: object) -> list[str]:
    found = recall(
        memory.reading,
        index,
        question,
        tenant="acme",
        k=4,
        valid_at=NOW,
        settings=RecallSettings(**settings),  # type: ignore[arg-type]
    )
    return [str(session_of(item.record)).split("\x1f")[1] for item in found.items]


def test_a_question_across_sessions_spreads_its_top_k(chat: tuple[Memory, DerivedIndex]) -> None:
    memory, index = chat
    across = "Which columns did I want for the budget tracker across our conversations?"
    # each further turn of s1 counts half: the once-only sessions join the top 4
    assert sorted(sessions(memory, index, across)) == ["s1", "s1", "s2", "s3"]
    # without the spread (or without the cue) the first session fills the top 4 (its
    # turns lending each other their scores as for any question: the spread alone differs)
    lending = {"stated_context_weight": 1.0}
    assert sessions(memory, index, across, session_spread=1.0, **lending) == ["s1"] * 4
    plain = "Which columns did I want for the budget tracker?"
    assert sessions(memory, index, plain, **lending) == ["s1"] * 4


def test_an_order_question_gives_its_items_in_time_order(
    chat: tuple[Memory, DerivedIndex],
) -> None:
    memory, index = chat
    asked = "In what order did I bring up the columns of my budget tracker?"
    found = recall(memory.reading, index, asked, tenant="acme", k=3, valid_at=NOW)
    assert found.order == "time"
    in_time = found.chronological()
    assert sorted(in_time, key=lambda i: i.score, reverse=True) == list(found.items)
    days = [item.record.valid_from for item in in_time]
    assert days == sorted(days) and days != [i.record.valid_from for i in found.items]
    plain = recall(
        memory.reading, index, "budget tracker columns", tenant="acme", k=3, valid_at=NOW
    )
    assert plain.order == "relevance"


def test_a_question_about_what_you_said_finds_the_assistants_turn(tmp_path: Path) -> None:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(NOW))
    said = [
        ("user", "My sourdough starter smells like acetone, what should I do?"),
        ("assistant", "An acetone smell in a sourdough starter means it is hungry: feed it."),
    ]
    for n, (role, text) in enumerate(said):
        event = turn(n, text, session="s1", role=role)
        memory.ingest(event, [episode_of(event)])
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        about_you = "What did you recommend for the acetone smell of my sourdough starter?"
        found = recall(memory.reading, index, about_you, tenant="acme", valid_at=NOW)
        assert found.items[0].record.source_event_id == "t1"
        # asked about the user's own words, the user's turn ranks first
        about_me = "What did I say about the acetone smell of my sourdough starter?"
        found = recall(memory.reading, index, about_me, tenant="acme", valid_at=NOW)
        assert found.items[0].record.source_event_id == "t0"
    memory.close()


def test_the_spread_setting_is_checked() -> None:
    with pytest.raises(Exception, match="session_spread"):
        RecallSettings(session_spread=-0.5)
