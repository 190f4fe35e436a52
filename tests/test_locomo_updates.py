"""Update and contradiction figures of ``memledger bench locomo``: where a file marks the
turn that stated an old value and the turn that changed it (BEAM's knowledge-update
questions), and the turns of each side of a contradiction, the harness scores whether
what is true now ranks above what it replaced. A scripted retriever fixes the rankings,
so every figure is checked by hand."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memledger.eval.locomo import LocomoFormatError, load, run
from memledger.eval.locomo._render import markdown
from test_locomo import Scripted, turn

BEAM = next(
    (
        p
        for p in (
            Path("/work/shared/data/beam-dev.json"),
            Path(__file__).resolve().parents[2] / "shared" / "data" / "beam-dev.json",
        )
        if p.exists()
    ),
    Path("beam-dev.json"),
)


def _file(tmp_path: Path, qa: list[dict[str, Any]]) -> Path:
    sample = {
        "sample_id": "beam-x",
        "conversation": {
            "speaker_a": "user",
            "speaker_b": "assistant",
            "session_1_date_time": "12:00 pm on 15 March, 2024",
            "session_1": [turn(f"D1:{n}", "user", f"turn {n}") for n in range(1, 13)],
        },
        "qa": qa,
    }
    path = tmp_path / "beam-mini.json"
    path.write_text(json.dumps([sample]))
    return path


def _update(question: str, old: list[str], new: list[str]) -> dict[str, Any]:
    return {
        "question": question,
        "answer": "x",
        "evidence": [*old, *new],
        "evidence_original": old,
        "evidence_updated": new,
        "category": 3,
    }


QA = [
    _update("new first", ["D1:1"], ["D1:2"]),  # both in, new above: order yes, strict yes
    _update("old first", ["D1:3"], ["D1:4"]),  # both in, old above: order no, strict no
    _update("old missing", ["D1:5"], ["D1:6"]),  # only new in: strict yes, not in order
    _update("new missing", ["D1:7"], ["D1:8"]),  # only old in: strict no, recall 0
    _update("new past ten", ["D1:9"], ["D1:10"]),  # new at rank 11: as missing
    _update("same turn", ["D1:11"], ["D1:11"]),  # not an update question: sides coincide
    {
        "question": "both sides",
        "answer": "x",
        "evidence": ["D1:1", "D1:3"],
        "evidence_sides": [["D1:1"], ["D1:3"]],
        "category": 3,
    },
    {
        "question": "one side",
        "answer": "x",
        "evidence": ["D1:5", "D1:7"],
        "evidence_sides": [["D1:5"], ["D1:7", "D9:9"]],  # D9:9 names no turn: dropped
        "category": 3,
    },
]
FILLER = [f"F{n}" for n in range(10)]
RANKINGS = {
    "new first": ["D1:2", "D1:1"],
    "old first": ["D1:3", "D1:12", "D1:4"],
    "old missing": ["D1:6"],
    "new missing": ["D1:7"],
    "new past ten": ["D1:9", *FILLER, "D1:10"],
    "same turn": ["D1:11"],
    "both sides": ["D1:3", "D1:1"],
    "one side": ["D1:5"],
}


def test_update_figures_by_hand(tmp_path: Path) -> None:
    report = run(Scripted(RANKINGS), load(_file(tmp_path, QA)), name="scripted")
    u = report.updates()
    assert u["update_questions"] == 5  # "same turn" names one turn for both
    assert u["updated_recall_10"] == pytest.approx(3 / 5)  # new first, old first, old missing
    assert u["both_in_top_10"] == 2 and u["update_order"] == pytest.approx(1 / 2)
    assert u["strict_update_success"] == pytest.approx(2 / 5)  # new first, old missing
    assert u["contradiction_questions"] == 2 and u["both_sides_recall_10"] == pytest.approx(1 / 2)
    body = report.to_json()["updates"]
    assert isinstance(body, dict) and body["strict_update_success"] == 0.4
    table = markdown([report])
    assert "| scripted | 0.600 (5) | 0.500 (2) | 0.400 (5) | 0.500 (2) |" in table


def test_annotations_are_read_and_ids_that_are_not_turns_dropped(tmp_path: Path) -> None:
    questions = load(_file(tmp_path, QA)).questions
    assert questions[0].original == ("D1:1",) and questions[0].updated == ("D1:2",)
    assert questions[0].is_update and not questions[5].is_update
    assert questions[7].sides == (("D1:5",), ("D1:7",))
    assert not questions[6].is_update and questions[6].original == ()


def test_files_without_annotations_report_no_update_table(tmp_path: Path) -> None:
    plain = [{"question": "q", "answer": "a", "evidence": ["D1:1"], "category": 4}]
    report = run(Scripted({"q": ["D1:1"]}), load(_file(tmp_path, plain)), name="plain")
    assert report.updates()["update_questions"] == 0
    assert "update order" not in markdown([report])


@pytest.mark.parametrize(
    ("field", "value"),
    [("evidence_original", "D1:1"), ("evidence_updated", {"a": 1}), ("evidence_sides", ["D1:1"])],
)
def test_malformed_annotations_are_format_errors(tmp_path: Path, field: str, value: Any) -> None:
    question = {"question": "q", "answer": "a", "evidence": ["D1:1"], "category": 3, field: value}
    with pytest.raises(LocomoFormatError, match=field):
        load(_file(tmp_path, [question]))


@pytest.mark.skipif(not BEAM.exists(), reason="../shared/data/beam-dev.json is not here")
def test_beam_dev_marks_its_update_and_contradiction_questions() -> None:
    dataset = load(BEAM)
    updates = [q for q in dataset.questions if q.is_update]
    sided = [q for q in dataset.questions if len(q.sides) >= 2]
    assert len(updates) == 19 and len(sided) == 20


def test_now_is_unchanged_by_annotations(tmp_path: Path) -> None:
    fake = Scripted(RANKINGS)
    run(fake, load(_file(tmp_path, QA)), name="scripted")
    assert set(fake.nows) == {datetime.fromisoformat("2024-03-15T12:00:00+00:00")}
