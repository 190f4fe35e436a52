"""Long turns are shown as their best passage: what to put in front of a model, with
offsets into the turn, and what the benchmark counts as its tokens."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memledger import Actor, Memory, SourceEvent
from memledger.domain.gates import content_words
from memledger.domain.passages import best_passage
from memledger.domain.text import sentences
from memledger.eval.locomo._harness import Passages
from memledger.eval.locomo._memledger import MemledgerRetriever
from memledger.index.derived import DerivedIndex
from memledger.read.recall import recall
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.write.worker import episode_of

FILLER = "The weather was grey and the train was late again that morning. " * 8
LONG = FILLER + "My sourdough starter smells like acetone after feeding. " + FILLER


def test_a_short_turn_is_shown_whole() -> None:
    passage = best_passage("I live in Lyon.", "where do I live", words=60)
    assert (passage.start, passage.end, passage.whole) == (0, 15, True)


def test_a_long_turn_is_shown_as_the_sentences_that_answer() -> None:
    passage = best_passage(LONG, "Why does the sourdough starter smell of acetone?", words=30)
    assert not passage.whole
    assert "sourdough starter smells like acetone" in passage.text
    assert LONG[passage.start : passage.end] == passage.text
    assert len(passage.text.split()) <= 30


def test_a_turn_without_the_questions_words_is_shown_by_its_start() -> None:
    passage = best_passage(LONG, "kiln temperature", words=12)
    assert passage.start == 0 and passage.text == " ".join(LONG.split()[:12])


def test_a_single_long_sentence_is_cut_to_its_first_words() -> None:
    text = " ".join(f"word{n}" for n in range(100))
    passage = best_passage(text, "word3", words=10)
    assert passage.text == " ".join(f"word{n}" for n in range(10)) and passage.start == 0


def _every_run(text: str, question: str, words: int) -> tuple[int, int]:
    """The passage's span by its definition, every run of sentences weighed: the most of
    the question's words, then the shortest, then the earliest; a sentence past the
    budget alone is cut to its first words; with none of the words, the first words."""

    def first_words(start: int, end: int) -> int:
        found = [m.end() for m in re.finditer(r"\S+", text[start:end])]
        return end if len(found) <= words else start + found[words - 1]

    wanted = content_words(question)
    spans = sentences(text)
    best: tuple[int, int, int] | None = None  # (covered, -length, -start)
    for first in range(len(spans)):
        for last in range(first, len(spans)):
            start, end = spans[first].start, spans[last].end
            if sum(len(s.text.split()) for s in spans[first : last + 1]) > words:
                if last == first:
                    end = first_words(start, end)
                else:
                    break
            covered = len(content_words(text[start:end]) & wanted)
            if best is None or (covered, start - end, -start) > best:
                best = (covered, start - end, -start)
            if last == first and end < spans[first].end:
                break
    if best is None or best[0] == 0:
        return 0, first_words(0, len(text))
    return -best[2], -best[2] - best[1]


@given(
    st.lists(
        st.sampled_from(
            [
                "Cats purr.",
                "Dogs bark loudly at night!",
                "Do cats bark?",
                "Rain falls; the night is long.",
                "Dr. Smith owns two dogs.",
                "It rained on the cats and the dogs all night and all day long, said Ann.",
                "x" * 30,
                "\n",
            ]
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["cats", "dogs night", "rain", "do cats bark at night", "nothing here"]),
    st.integers(min_value=1, max_value=30),
)
def test_a_passage_is_the_best_run_of_sentences_within_the_budget(
    parts: list[str], question: str, words: int
) -> None:
    text = " ".join(parts)
    passage = best_passage(text, question, words=words)
    assert text[passage.start : passage.end] == passage.text
    assert passage.whole == (len(text.split()) <= words)
    if not passage.whole:
        assert len(passage.text.split()) <= words
        assert (passage.start, passage.end) == _every_run(text, question, words)


def test_recall_hands_back_the_passage(tmp_path: Path) -> None:
    at = datetime(2026, 3, 1, 9, tzinfo=UTC)
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(at + timedelta(days=1)))
    event = SourceEvent(
        tenant="acme",
        event_id="t0",
        subject="u1",
        actor=Actor(id="u1", authenticated=True),
        channel="chat",
        occurred_at=at,
        text=LONG,
    )
    memory.ingest(event, [episode_of(event)])
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        (item,) = recall(memory.reading, index, "sourdough starter acetone", tenant="acme").items
    assert item.passage is not None and not item.passage.whole
    assert "acetone" in item.passage.text and len(item.passage.text) < len(LONG) / 4
    memory.close()


def test_the_benchmark_counts_what_the_retriever_shows() -> None:
    retriever = MemledgerRetriever()
    try:
        assert isinstance(retriever, Passages)
        assert retriever.passage("D1:1") is None  # nothing searched yet
    finally:
        retriever.close()
