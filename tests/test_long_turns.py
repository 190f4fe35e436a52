"""Long turns (a pasted document, log or file) are passages, not errors: stored whole,
indexed as passages on both index backends, recalled by the passage that matched, and
taken out whole by a revocation, an erasure or a rebuild."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from index_helpers import entries
from memledger import Actor, LimitExceededError, Memory, SourceEvent
from memledger.cli import app
from memledger.eval.bench_long_turn import PHRASE, text_of
from memledger.index.backends import open_index
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.index.passages import LONG_TURN, MAX_CHARS, MAX_WORDS, cut
from memledger.index.postgres import PostgresIndex
from memledger.read.abstain import passage
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.write.extract.rules import LEAD_CHARS, RuleExtractor, lead

AT = datetime(2026, 3, 1, 12, tzinfo=UTC)


def long_text(chars: int, *, seed: int = 7, phrase: str = PHRASE) -> str:
    """Varied generated sentences in paragraphs and lines, ``phrase`` in the middle."""
    return text_of(chars, seed=seed, phrase=phrase)


TWO_MB = long_text(2_000_000)
PASTE = long_text(300_000, seed=11)


@pytest.fixture
def memory(backend_url: str) -> Iterator[Memory]:
    """A store of each backend, its index of the same backend (hashing vectors)."""
    store = open_store(backend_url)
    index = open_index(store, embedder=HashingEmbedder())
    memory = Memory(store, clock=FrozenClock(AT), index=index)
    yield memory
    memory.close()


def turn(event_id: str, text: str, *, minute: int = 0) -> SourceEvent:
    return SourceEvent(
        tenant="acme",
        event_id=event_id,
        subject="user-1",
        actor=Actor(id="user-1", authenticated=True),
        channel="chat",
        occurred_at=AT.replace(hour=11, minute=minute),
        text=text,
        metadata={"session": "s1", "speaker": "user-1"},
    )


def rows_of(memory: Memory, memory_id: str) -> list[tuple[int, int | None, int | None]]:
    """``(part, span_start, span_end)`` of each index entry of ``memory_id``."""
    index = memory.index
    assert isinstance(index, DerivedIndex | PostgresIndex)
    where = "tenant = 'acme' AND memory_id = ? ORDER BY part"
    return entries(index, "part, span_start, span_end", where, (memory_id,))


def episode_id(memory: Memory, event_id: str) -> str:
    (found,) = [
        t for t in memory.timeline("user-1", "conversation", tenant="acme")
        if t.source_event_id == event_id
    ]  # fmt: skip
    return found.memory_id


def ingest_long(memory: Memory, text: str = TWO_MB) -> str:
    memory.ingest(turn("before", "I walked the dog this morning.", minute=1))
    memory.ingest(turn("long", text, minute=2))
    memory.ingest(turn("after", "Then we had lunch by the harbour.", minute=3))
    memory.process()
    memory.index.sync(memory.store)
    return episode_id(memory, "long")


# -- cutting ----------------------------------------------------------------------------


def test_passages_cover_the_text_in_bounded_overlapping_pieces_cut_at_boundaries() -> None:
    text = long_text(60_000, seed=3)
    spans = cut(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text.rstrip())
    for (start, end), (after, _) in itertools.pairwise(spans):
        assert start < after < end  # overlapping, moving on
    for start, end in spans:
        piece = text[start:end]
        assert len(piece.split()) <= MAX_WORDS and len(piece) <= MAX_CHARS
    ends = [text[end - 1] for start, end in spans[:-1]]
    assert sum(c in ".!?" for c in ends) >= 0.9 * len(ends)  # at sentence ends
    assert cut("x" * 5000) == [(0, 2000), (2000, 4000), (4000, 5000)]  # no spaces at all


def test_only_a_long_episode_is_cut(memory: Memory) -> None:
    short = "x " * (LONG_TURN // 2 - 10)
    memory.ingest(turn("short", short))
    memory.ingest(turn("long", long_text(LONG_TURN * 3)))
    memory.process()
    memory.index.sync(memory.store)
    assert rows_of(memory, episode_id(memory, "short")) == [(0, None, None)]
    long_rows = rows_of(memory, episode_id(memory, "long"))
    assert len(long_rows) > 2 and [r[0] for r in long_rows] == list(range(len(long_rows)))


# -- recall -----------------------------------------------------------------------------


def test_a_2_mb_turn_is_recalled_by_a_phrase_from_its_middle(memory: Memory) -> None:
    long_id = ingest_long(memory)
    assert len(rows_of(memory, long_id)) > 1000
    (record,) = [
        t for t in memory.timeline("user-1", "conversation", tenant="acme")
        if t.memory_id == long_id
    ]  # fmt: skip
    assert record.value["text"] == TWO_MB  # type: ignore[index,call-overload]  # stored whole
    result = memory.recall("zeppelin mechanic quantum harmonica", tenant="acme", k=10)
    assert [i.record.memory_id for i in result.items].count(long_id) == 1
    item = result.items[0]
    assert item.record.memory_id == long_id
    assert item.passage is not None and not item.passage.whole
    assert "zeppelin mechanic" in item.passage.text
    assert len(item.passage.text.split()) <= 60  # passage_words
    assert TWO_MB[item.passage.start : item.passage.end] == item.passage.text
    # the turns around it are its context, the long turn counted once
    assert set(item.context) == {episode_id(memory, "before"), episode_id(memory, "after")}
    near = memory.index.neighbours("acme", [episode_id(memory, "before")], window=2)
    assert near[episode_id(memory, "before")] == [(long_id, 1), (episode_id(memory, "after"), 2)]


def test_the_packet_of_a_2_mb_turn_stays_within_its_budget(memory: Memory) -> None:
    ingest_long(memory)
    packet = memory.context(
        "What did the zeppelin mechanic repair?", tenant="acme", subject="user-1", budget=1000,
        k=10,
    )  # fmt: skip
    assert packet.tokens <= 1000
    assert "quantum harmonica" in packet.text


def test_recall_shows_the_best_of_the_passage_that_matched(tmp_path: Path) -> None:
    # the question's words twice: in a short sentence early on, in the phrase later
    text = long_text(6_000, phrase="") + " The harmonica is quantum. " + long_text(6_000)
    with Memory.open(tmp_path / "m.db", clock=FrozenClock(AT)) as memory:
        memory.ingest(turn("e", text))
        memory.process()
        (record,) = memory.timeline("user-1", "conversation", tenant="acme")
    start = text.index(PHRASE) - 300
    shown = passage(record, "quantum harmonica", words=60, span=(start, start + 900))
    assert shown is not None and not shown.whole
    assert start <= shown.start < shown.end <= start + 900  # within the passage that matched
    assert text[shown.start : shown.end] == shown.text and "quantum harmonica" in shown.text


# -- removal ----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["revoke", "forget", "rebuild"])
def test_every_passage_goes_with_its_turn(memory: Memory, how: str) -> None:
    long_id = ingest_long(memory, PASTE)
    before = rows_of(memory, long_id)
    assert len(before) > 100
    if how == "revoke":
        memory.revoke(long_id, tenant="acme")
    elif how == "forget":
        memory.forget("long", tenant="acme")
    else:
        memory.index.rebuild(memory.store)
        assert rows_of(memory, long_id) == before  # rebuilt: every passage again
        return
    memory.index.sync(memory.store)
    assert rows_of(memory, long_id) == []
    found = memory.index.search("zeppelin harmonica", tenant="acme", k=10)
    assert long_id not in [h.memory_id for h in found]
    result = memory.recall("zeppelin mechanic quantum harmonica", tenant="acme", k=10)
    assert long_id not in [i.record.memory_id for i in result.items]


# -- limits and extraction --------------------------------------------------------------


def test_a_turn_past_the_old_limit_is_accepted_and_one_past_the_new_refused(
    tmp_path: Path,
) -> None:
    with Memory.open(tmp_path / "m.db", clock=FrozenClock(AT)) as memory:
        assert memory.ingest(turn("e1", long_text(100_001))).outcome == "queued"
        with pytest.raises(LimitExceededError) as caught:
            memory.ingest(turn("e2", "x" * 8_388_609))
        assert str(caught.value) == (
            "text has 8,388,609 characters; the limit is max_text_chars=8,388,608"
        )


def test_the_rules_read_a_long_turns_leading_part() -> None:
    text = long_text(LEAD_CHARS * 3)
    head = lead(text)
    assert LEAD_CHARS // 2 < len(head) <= LEAD_CHARS and text.startswith(head)
    assert head.endswith((".", "!", "?", "\n"))
    assert lead("short") == "short"
    claims = RuleExtractor().extract(turn("e", "I live in Lyon. " + text)).claims
    assert any(c.family == "home_city" for c in claims)
    ignored = RuleExtractor().extract(turn("e", text + "\n\nI live in Lyon.")).claims
    assert not any(c.family == "home_city" for c in ignored)  # past the leading part


# -- the LoCoMo bench -------------------------------------------------------------------


def test_bench_locomo_runs_on_a_conversation_with_a_350k_character_turn(tmp_path: Path) -> None:
    def said(dia_id: str, speaker: str, text: str) -> dict[str, str]:
        return {"speaker": speaker, "dia_id": dia_id, "text": text}

    pasted = long_text(350_000, phrase="My cat Miso sleeps in the violin case.")
    conversation = {
        "sample_id": "conv-long",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                said("D1:1", "Alice", "Here is the log I mentioned."),
                said("D1:2", "Alice", pasted),
                said("D1:3", "Bob", "Thanks, I moved to Lisbon last week."),
            ],
        },
        "qa": [
            {
                "question": "Where does Miso sleep?",
                "answer": "violin case",
                "evidence": ["D1:2"],
                "category": 4,
            },
        ],
    }
    path = tmp_path / "long.json"
    path.write_text(json.dumps([conversation]))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app,
        ["bench", "locomo", str(path), "--retriever", "memledger-hashing", "--json", str(out)],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["questions"] == 1 and report["recall"]["overall"]["5"] == 1.0


def test_bench_long_turn_times_every_stage_and_shows_the_phrase(tmp_path: Path) -> None:
    from memledger.cli.app import app

    out = tmp_path / "long.json"
    args = ["bench", "long-turn", "--sizes", "0.03,0.06", "--json", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert [t["chars"] for t in report["turns"]] == [30_000, 60_000]
    for turn in report["turns"]:
        assert set(turn["seconds"]) == {"ingest", "process", "sync", "recall"}
        assert turn["found"] and 0 < turn["passage_words"] <= 60
    bad = CliRunner().invoke(app, ["bench", "long-turn", "--sizes", "two"])
    assert bad.exit_code != 0 and "--sizes" in bad.output
