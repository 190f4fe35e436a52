"""``bench locomo``'s costs: preparation time, size, peak RSS and search latency on
prefixes of each conversation (``--growth``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memledger.cli import app
from memledger.eval.locomo import Conversation, Turn, load, run
from memledger.eval.locomo._costs import Metered
from memledger.eval.locomo._dense import DenseRetriever
from memledger.eval.locomo._memledger import MemledgerRetriever
from memledger.index.embedders import HashingEmbedder, Vectors

AT = datetime(2024, 3, 15, 12, tzinfo=UTC)
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


def sample(sample_id: str, turns: int) -> dict[str, object]:
    """``turns`` turns of 10 words each (10 approximate tokens plus the speaker's 2)."""
    body = [
        {"speaker": "user", "dia_id": f"D1:{i}", "text": " ".join([WORDS[i % 8]] * 10)}
        for i in range(1, turns + 1)
    ]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "user",
            "speaker_b": "assistant",
            "session_1_date_time": "12:00 pm on 15 March, 2024",
            "session_1": body,
        },
        "qa": [
            {"question": "alpha?", "answer": "a", "evidence": ["D1:1"], "category": 4},
            {"question": "golf?", "answer": "g", "evidence": ["D1:7"], "category": 4},
        ],
    }


@pytest.fixture
def two_chats(tmp_path: Path) -> Path:
    path = tmp_path / "grow.json"
    path.write_text(json.dumps([sample("c1", 10), sample("c2", 4)]))
    return path


class Recording:
    """A retriever that records the turns of every prepare and every search."""

    def __init__(self) -> None:
        self.prepared: list[int] = []
        self.searched: list[tuple[int, str]] = []

    def prepare(self, conversation: Conversation, /) -> None:
        self.prepared.append(len(conversation.turns))

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        self.searched.append((self.prepared[-1], question))
        return ["D1:1"]

    def footprint(self) -> int:
        return 1000 + self.prepared[-1]


def test_checkpoints_time_every_question_on_each_prefix_then_the_whole(two_chats: Path) -> None:
    dataset = load(two_chats)
    inner = Recording()
    ticks = iter(range(1000))
    metered = Metered(
        inner, dataset=dataset, checkpoints=[30, 60, 500], clock=lambda: float(next(ticks))
    )
    report = run(metered, dataset, name="rec")
    # c1 (10 turns of 12 tokens): prefixes of 2 (24 tokens <= 30) and 5 turns, then whole;
    # c2 (48 tokens) passes 30 only; 500 is past both, so it is never a prefix
    assert inner.prepared == [2, 5, 10, 2, 4]
    assert [n for n, _ in inner.searched] == [2, 2, 5, 5, 10, 10, 2, 4]  # c2 asks 1
    body = metered.costs().to_json()
    assert body["turns"] == 14 and body["tokens"] == 14 * 12 and body["conversations"] == 2
    assert body["footprint_bytes"] == 1004  # the last conversation's
    # each prepare takes one tick of the fake clock; the searches between are not counted
    assert body["prepare_seconds"] == 5.0
    growth = body["growth"]
    assert isinstance(growth, list)
    assert [(g["tokens"], g["conversations"], g["questions"]) for g in growth] == [
        (30, 2, 3),
        (60, 1, 2),
    ]
    assert growth[0]["turns_mean"] == 2.0
    assert growth[1]["latency_ms"] == {"p50": 1000.0, "p95": 1000.0}
    assert report.questions == 3
    assert body["peak_rss_mb"] > 10  # read when the harness closed the retriever


def test_checkpoints_must_ascend() -> None:
    with pytest.raises(ValueError, match="ascending"):
        Metered(Recording(), dataset=load_empty(), checkpoints=[200, 100])


def load_empty() -> object:
    from memledger.eval.locomo import Dataset

    return Dataset(conversations=(), questions=())


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return super().embed(texts)


def conversation(sample_id: str, turns: int) -> Conversation:
    return Conversation(
        sample_id=sample_id,
        speakers=("user", "assistant"),
        turns=tuple(
            Turn(f"D1:{i}", "user", f"{WORDS[i % 8]} note {i}", None, 1, AT)
            for i in range(1, turns + 1)
        ),
    )


def test_dense_embeds_only_the_turns_a_longer_prefix_adds() -> None:
    embedder = CountingEmbedder()
    dense = DenseRetriever(embedder)
    dense.prepare(conversation("c1", 3))
    dense.prepare(conversation("c1", 5))
    dense.prepare(conversation("c1", 5))
    whole = dense._vectors.copy()
    dense.prepare(conversation("c2", 6))  # another conversation with the same ids: anew
    assert embedder.calls == [3, 2, 6]
    fresh = DenseRetriever(HashingEmbedder())
    fresh.prepare(conversation("c1", 5))
    assert (fresh._vectors == whole).all()
    assert dense.footprint() == 6 * 384 * 4


def test_memledger_ingests_only_the_turns_a_longer_prefix_adds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retriever = MemledgerRetriever()
    ingested: list[str] = []
    ingest = retriever.memory.ingest
    monkeypatch.setattr(
        retriever.memory, "ingest", lambda event: ingested.append(event.event_id) or ingest(event)
    )
    try:
        retriever.prepare(conversation("c1", 3))
        small = retriever.footprint()
        retriever.prepare(conversation("c1", 6))
        with retriever.memory.store.read() as unit:
            events = unit.subject_events("c1", "conversation")
        assert [e.event_id for e in events] == [f"D1:{i}" for i in range(1, 7)]
        assert [e.sequence for e in events] == list(range(1, 7))
        assert ingested == [f"D1:{i}" for i in range(1, 7)]  # each turn once
        found = retriever.search("hotel note", k=5, now=AT)
        assert "D1:7" not in found and found
        assert small is not None and small > 0
    finally:
        retriever.close()


def test_cli_reports_costs_and_growth_in_its_json(two_chats: Path, tmp_path: Path) -> None:
    out = tmp_path / "costs.json"
    result = CliRunner().invoke(
        app,
        ["bench", "locomo", str(two_chats), "--retriever", "bm25,memledger-lexical",
         "--growth", "60,30", "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    bm25, memledger = json.loads(out.read_text())
    for body in (bm25, memledger):
        costs = body["costs"]
        assert costs["turns"] == 14 and costs["tokens"] == 168
        assert costs["prepare_seconds"] > 0 and costs["turns_per_s"] > 0
        assert costs["peak_rss_mb"] > 10
        assert [g["tokens"] for g in costs["growth"]] == [30, 60]
    assert bm25["costs"]["footprint_bytes"] is None
    assert memledger["costs"]["footprint_bytes"] > 10_000
    assert "at 30 tokens (2.0 turns): search p50" in result.stdout
    bad = CliRunner().invoke(app, ["bench", "locomo", str(two_chats), "--growth", "0"])
    assert bad.exit_code == 2 and "--growth needs at least one positive number" in bad.output
