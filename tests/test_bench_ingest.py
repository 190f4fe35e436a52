"""``memledger bench ingest``: real turns through the write path and the index, stage by
stage. Timings are measured, never asserted beyond being there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memledger.cli import app
from memledger.eval import bench_ingest
from memledger.index.embedders import HashingEmbedder

LONG = " ".join(f"Paragraph {i} of the design notes covers caching and retries." for i in range(60))


TURNS = (
    ("user", "I moved to Lisbon in June."),
    ("assistant", LONG),
    ("user", "My sister plays the cello."),
)


def sample(sample_id: str) -> dict[str, object]:
    turns = [
        {"speaker": speaker, "dia_id": f"D1:{i}", "text": text}
        for i, (speaker, text) in enumerate(TURNS, start=1)
    ]
    body = {"speaker_a": "user", "speaker_b": "assistant", "session_1": turns}
    body["session_1_date_time"] = "12:00 pm on 15 March, 2024"
    return {"sample_id": sample_id, "conversation": body, "qa": []}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps([sample("c1"), sample("c2")]))
    return path


def test_every_stage_is_timed_and_what_was_embedded_counted(corpus: Path) -> None:
    ticks = iter(range(10_000))
    report = bench_ingest.run(
        corpus, embedder=HashingEmbedder(), turns=2, clock=lambda: float(next(ticks))
    )
    assert (report.conversations, report.turns) == (2, 4)
    # the long assistant turn is indexed as passages: more texts embedded than turns
    assert report.embedded_texts > report.turns
    assert report.embedded_tokens > 1000
    # the fake clock ticks once a call: per conversation ingest and extract span one tick,
    # the sync three (its start, the embed call's two) of which the embed call holds one
    assert report.seconds == {"ingest": 2.0, "extract": 2.0, "embed": 2.0, "index": 4.0}
    body = report.to_json()
    stages = body["stages"]
    assert isinstance(stages, dict) and list(stages) == list(bench_ingest.STAGES)
    total = body["total"]
    assert isinstance(total, dict)
    assert total["seconds"] == round(report.total, 3)
    assert total["turns_per_s"] == round(4 / report.total, 2)


def test_without_an_embedder_nothing_is_embedded(corpus: Path) -> None:
    report = bench_ingest.run(corpus, embedder=None, conversations=1)
    assert (report.conversations, report.turns, report.embedded_texts) == (1, 3, 0)
    assert report.seconds["embed"] == 0.0 and report.embedder == "none"


def test_cli_prints_the_stages_and_writes_json(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "ingest.json"
    result = CliRunner().invoke(
        app, ["bench", "ingest", str(corpus), "--embedder", "hashing", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "| stage | seconds | turns/s | tokens/s | share |" in result.stdout
    assert "| embed |" in result.stdout and "| total |" in result.stdout
    body = json.loads(out.read_text())
    assert body["turns"] == 6 and body["conversations"] == 2
    assert set(body["stages"]) == {"ingest", "extract", "embed", "index"}
    assert "machine" in body


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--embedder", "bert"], "--embedder must be default, hashing or none")],
)
def test_cli_mistakes_exit_2(corpus: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["bench", "ingest", str(corpus), *args])
    assert result.exit_code == 2 and message in result.output


def test_cli_missing_or_malformed_file(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["bench", "ingest", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "no LoCoMo file" in missing.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    malformed = CliRunner().invoke(app, ["bench", "ingest", str(bad)])
    assert malformed.exit_code == 2 and "must hold a JSON list" in malformed.output
