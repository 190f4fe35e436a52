"""``memledger bench beam-convert``: a BEAM tier folder as a LoCoMo-shaped file.

The fixtures are small hand-made BEAM chats written into ``tmp_path``; the real BEAM
files are never read here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memledger.cli import app
from memledger.eval import beam
from memledger.eval.locomo import load


def message(role: str, beam_id: int, content: str, anchor: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, "id": beam_id, "content": content}
    if anchor is not None:
        body.update(time_anchor=anchor, index="1,1", question_type="main_question")
    return body


def chat() -> list[dict[str, Any]]:
    return [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    message("user", 0, "I use Flask 2.2 for my app. ->-> 1,1", "March-15-2024"),
                    message("assistant", 1, "Great, Flask 2.2 it is.  "),
                ],
                [
                    message("user", 2, "My deadline is March 29. ->-> 1,(N/A, a note)\n"),
                    message("assistant", 3, "Noted -> keep it. ->-> 2,2"),
                ],
            ],
        },
        {
            "batch_number": 2,
            "time_anchor": None,
            "turns": [
                [
                    message("user", 4, "I moved the deadline to April 2.", "April-05-2024"),
                    message("assistant", 5, "Updated."),
                ]
            ],
        },
    ]


def questions() -> dict[str, list[dict[str, Any]]]:
    return {
        "abstention": [{"question": "What agenda?", "source_chat_ids": None}],
        "contradiction_resolution": [
            {
                "question": "Do I use Flask?",
                "ideal_answer": "You said both.",
                "difficulty": "clear",
                "source_chat_ids": {"first_statement": [2], "second_statement": [0]},
            }
        ],
        "event_ordering": [
            {"question": "In what order?", "answer": "a, b", "source_chat_ids": [[0, 2], 4, [2]]}
        ],
        "knowledge_update": [
            {
                "question": "When is the deadline?",
                "answer": "April 2",
                "difficulty": "easy",
                "source_chat_ids": {"original_info": [2], "updated_info": [4]},
            }
        ],
        "preference_following": [
            {"question": "No ids?", "expected_compliance": "x", "source_chat_ids": []},
            {"question": "Which stack?", "expected_compliance": "Flask", "source_chat_ids": [1]},
        ],
        "summarization": [{"question": "Summarise.", "source_chat_ids": [0, 1]}],
    }


def write_chat(root: Path, number: int, *, truncated: bool = False) -> Path:
    folder = root / str(number)
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(chat()))
    if truncated:  # the prefix BEAM asks its questions on: the first batch only
        (folder / "chat_trunecated.json").write_text(json.dumps(chat()[:1]))
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions()))
    return folder


@pytest.fixture
def tier(tmp_path: Path) -> Path:
    root = tmp_path / "chats" / "500K"
    write_chat(root, 10)
    write_chat(root, 2)
    (root / "topics.json").write_text("{}")  # files beside the chat folders are ignored
    return root


def test_a_chat_becomes_one_locomo_sample(tier: Path) -> None:
    samples = beam.convert_tier(tier, tier="500K")
    assert [s["sample_id"] for s in samples] == ["beam-500k-2", "beam-500k-10"]  # numeric order
    sample = samples[0]
    assert sample["beam_source"] == {"tier": "500K", "chat": 2, "file": "chats/500K/2/chat.json"}
    body = sample["conversation"]
    assert list(body) == [
        "speaker_a", "speaker_b", "session_1_date_time", "session_1",
        "session_2_date_time", "session_2",
    ]  # fmt: skip
    assert body["session_1_date_time"] == "12:00 pm on 15 March, 2024"
    assert body["session_2_date_time"] == "12:00 pm on 5 April, 2024"
    assert [(t["dia_id"], t["beam_id"], t["speaker"]) for t in body["session_1"]] == [
        ("D1:1", 0, "user"),
        ("D1:2", 1, "assistant"),
        ("D1:3", 2, "user"),
        ("D1:4", 3, "assistant"),
    ]
    assert [t["text"] for t in body["session_1"]] == [
        "I use Flask 2.2 for my app.",
        "Great, Flask 2.2 it is.",
        "My deadline is March 29.",
        "Noted -> keep it.",
    ]
    assert body["session_2"][0] == {
        "speaker": "user",
        "dia_id": "D2:1",
        "text": "I moved the deadline to April 2.",
        "beam_id": 4,
    }


def test_questions_keep_their_evidence_and_drop_what_cannot_score(tier: Path) -> None:
    qa = beam.convert_tier(tier, tier="500K")[0]["qa"]
    assert [(q["beam_type"], q["beam_index"], q["category"]) for q in qa] == [
        ("contradiction_resolution", 0, 3),
        ("event_ordering", 0, 2),
        ("knowledge_update", 0, 3),
        ("preference_following", 1, 4),  # #0 has no source ids; abstention, summarization out
    ]
    contradiction, ordering, update, preference = qa
    assert contradiction["answer"] == "You said both."
    assert contradiction["evidence"] == ["D1:3", "D1:1"]
    assert contradiction["evidence_sides"] == [["D1:3"], ["D1:1"]]
    assert contradiction["beam_difficulty"] == "clear"
    assert ordering["evidence"] == ["D1:1", "D1:3", "D2:1"]  # nested, flattened, distinct
    assert update["evidence_original"] == ["D1:3"] and update["evidence_updated"] == ["D2:1"]
    assert preference["answer"] == "Flask" and preference["beam_difficulty"] is None
    assert list(contradiction) == [
        "question", "answer", "evidence", "evidence_sides", "category", "beam_type",
        "beam_difficulty", "beam_source_chat_ids", "beam_index",
    ]  # fmt: skip


def test_the_truncated_chat_is_read_where_there_is_one(tmp_path: Path) -> None:
    root = tmp_path / "100K"
    write_chat(root, 1, truncated=True)
    (root / "1" / "probing_questions" / "probing_questions.json").write_text(
        json.dumps({"information_extraction": [{"question": "Q?", "answer": "a",
                                                 "source_chat_ids": [3]}]})
    )  # fmt: skip
    (sample,) = beam.convert_tier(root, tier="100K")
    assert sample["sample_id"] == "beam-100k-1"
    assert sample["beam_source"]["file"] == "chats/100K/1/chat_trunecated.json"
    assert "session_2" not in sample["conversation"]
    assert sample["qa"][0]["evidence"] == ["D1:4"]


def test_cli_writes_a_file_bench_locomo_reads(tier: Path, tmp_path: Path) -> None:
    out = tmp_path / "beam.json"
    result = CliRunner().invoke(
        app, ["bench", "beam-convert", str(tier), str(out), "--tier", "500K", "--chats", "10"]
    )
    assert result.exit_code == 0, result.output
    assert "1 chats, 6 turns, 4 questions" in result.stdout
    dataset = load(out)
    assert [c.sample_id for c in dataset.conversations] == ["beam-500k-10"]
    assert [t.speaker for t in dataset.conversations[0].turns[:2]] == ["user", "assistant"]
    update = next(q for q in dataset.questions if q.original)
    assert update.is_update and update.updated == ("D2:1",)
    assert out.read_text().startswith('[\n {\n  "sample_id": "beam-500k-10",\n')
    ran = CliRunner().invoke(app, ["bench", "locomo", str(out), "--retriever", "bm25"])
    assert ran.exit_code == 0, ran.output
    assert "| bm25 | overall (4) |" in ran.stdout


def corrupt(root: Path, how: str) -> None:
    folder = root / "2"
    questions_file = folder / "probing_questions" / "probing_questions.json"
    if how == "dangling evidence":
        body = questions()
        body["event_ordering"][0]["source_chat_ids"] = [0, 99]
        questions_file.write_text(json.dumps(body))
    elif how == "bad anchor":
        body_chat = chat()
        body_chat[1]["turns"][0][0]["time_anchor"] = "15/03/2024"
        (folder / "chat.json").write_text(json.dumps(body_chat))
    elif how == "no chat":
        (folder / "chat.json").unlink()
    elif how == "not json":
        questions_file.write_text("{")


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("dangling evidence", "evidence id 99 names no message"),
        ("bad anchor", "time anchor '15/03/2024'"),
        ("no chat", "has neither chat_trunecated.json nor chat.json"),
        ("not json", "is not JSON"),
    ],
)
def test_a_broken_tier_is_a_clear_error_and_writes_nothing(
    tier: Path, tmp_path: Path, how: str, message: str
) -> None:
    corrupt(tier, how)
    out = tmp_path / "beam.json"
    result = CliRunner().invoke(app, ["bench", "beam-convert", str(tier), str(out)])
    assert result.exit_code == 2
    assert message in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chats", "3"], "has no chat numbered [3]"),
        (["--tier", "a/b"], "--tier takes a tier name"),
    ],
)
def test_cli_mistakes_exit_2(tier: Path, tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "beam.json"
    result = CliRunner().invoke(app, ["bench", "beam-convert", str(tier), str(out), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not out.exists()


def test_a_folder_without_chats_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["bench", "beam-convert", str(tmp_path), str(tmp_path / "o.json")]
    )
    assert result.exit_code == 2
    assert "holds no numbered chat folders" in result.output
