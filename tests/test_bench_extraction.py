"""``memledger bench extraction``: the labelled turns are read as the format says, a
claim counts as right, excused or wrong exactly as documented, and the command
reports both splits (and, given a LoCoMo-shaped file, observation coverage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memledger.cli.app import app
from memledger.eval.extraction._coverage import as_said_by
from memledger.eval.extraction._labels import LabelsFormatError, load, load_split, same_value
from memledger.eval.extraction._score import score, summarise
from memledger.testing.openai_server import FakeChatServer, RecordedRequest, Reply
from memledger.write.extract.llm import VERSION
from memledger.write.extract.rules import RuleExtractor


def _file(tmp_path: Path, *turns: dict[str, object]) -> Path:
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")
    return path


def _label(attribute: str, value: str, *, about: str = "self", **more: str) -> dict[str, object]:
    """One labelled claim: ``about`` (the speaker, ``self``, by default) has ``value``."""
    return {"about": about, "attribute": attribute, "values": [value], **more}


def _turn(n: int, text: str, claims: list[dict[str, object]], **more: object) -> dict[str, object]:
    return {
        "id": f"t{n}",
        "voice": "casual",
        "role": "user",
        "text": text,
        "claims": claims,
        **more,
    }


def test_every_figure_by_hand(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        # found, right
        _turn(1, "I'm vegetarian.", [_label("diet", "vegetarian")]),
        # a missed label: recall falls, precision does not
        _turn(2, "Cilantro tastes like soap to me.", [_label("dislikes", "cilantro")]),
        # a wrong value: labelled vegan, the turn says vegetarian
        _turn(3, "I'm vegetarian these days.", [_label("diet", "vegan")]),
        # an optional reading: neither right nor wrong
        _turn(4, "I play the cello.", [], optional=[_label("instrument", "cello")]),
        # a new value closes a labelled retraction of the old one
        _turn(
            5,
            "I went vegan last year.",
            [_label("diet", "vegan"), _label("diet", "vegetarian", polarity="retract")],
        ),
        # another person's attribute given to the speaker would be wrong; theirs is right
        _turn(6, "My sister is a nurse.", [_label("role", "nurse", about="sister")]),
    )
    scored = score(RuleExtractor(), load(path, "dev"))
    summary = summarise(scored)
    assert (summary.labelled, summary.found) == (6, 4)
    assert (summary.right, summary.wrong) == (3, 1)
    assert summary.precision == pytest.approx(3 / 4)
    assert summary.recall == pytest.approx(4 / 6)
    assert [len(s.excused) for s in scored] == [0, 0, 0, 1, 0, 0]
    assert summary.by_attribute["diet"] == (4, 3, 1)


def test_values_match_by_content_words() -> None:
    assert same_value("two cats", "2 cat", free_text=False)
    assert same_value("run a marathon", "run marathon", free_text=True)
    assert not same_value("vegetarian", "vegan", free_text=False)
    assert not same_value("ran", "ran the boston marathon", free_text=True)


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        json.dumps(
            {"id": "a", "text": "x", "claims": [{"attribute": "shoe_size", "values": ["9"]}]}
        ),
        json.dumps({"id": "a", "text": "x", "claims": [{"attribute": "diet", "values": []}]}),
        json.dumps(
            {
                "id": "a",
                "text": "x",
                "claims": [{"attribute": "diet", "values": ["v"], "polarity": "maybe"}],
            }
        ),
        json.dumps({"id": "a", "claims": []}),
    ],
)
def test_a_malformed_file_is_refused(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(LabelsFormatError):
        load(path, "dev")


def test_the_packaged_set_is_large_varied_and_a_third_held_out() -> None:
    dev, held = load_split("dev"), load_split("heldout")
    total = len(dev) + len(held)
    assert total >= 500
    assert 0.3 <= len(held) / total <= 0.36
    attributes = {c.attribute for t in (*dev, *held) for c in t.claims}
    assert len(attributes) >= 30
    assert len({t.voice for t in dev}) >= 5 and len({t.voice for t in held}) >= 5
    assert sum(1 for t in dev if not t.claims) >= 0.15 * len(dev)


def test_a_statement_reads_as_the_speakers() -> None:
    assert as_said_by("Caroline", "Is vegetarian") == "Caroline is vegetarian"
    assert as_said_by("Caroline", "Sister: works as nurse") == "Caroline's sister works as nurse"


def test_the_command_reports_both_splits_and_coverage(tmp_path: Path) -> None:
    labelled = _file(
        tmp_path,
        _turn(1, "I'm vegan.", [_label("diet", "vegan")]),
    )
    locomo = tmp_path / "locomo.json"
    locomo.write_text(
        json.dumps(
            [
                {
                    "sample_id": "s",
                    "conversation": {
                        "speaker_a": "Ana",
                        "speaker_b": "Bo",
                        "session_1": [
                            {
                                "speaker": "Ana",
                                "dia_id": "D1:1",
                                "text": "I'm allergic to peanuts, sadly.",
                            },
                            {
                                "speaker": "Bo",
                                "dia_id": "D1:2",
                                "text": "Oh no, that must be hard.",
                            },
                        ],
                        "session_1_date_time": "1:56 pm on 8 May, 2023",
                    },
                    "observation": {
                        "session_1_observation": {
                            "Ana": [["Ana is allergic to peanuts.", "D1:1"]],
                            "Bo": [["Bo sympathises with Ana.", "D1:2"]],
                        }
                    },
                    "qa": [],
                }
            ]
        )
    )
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "extraction",
            "--labelled",
            str(labelled),
            "--locomo",
            str(locomo),
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text())
    assert body["labelled"]["precision"] == 1.0 and body["labelled"]["recall"] == 1.0
    assert body["observation_coverage"] == {
        "observations": 2,
        "covered": 1,
        "share": 0.5,
        "max_words": 25,
        "min_cosine": 0.6,
    }
    assert "| rules:rules@" in result.output


def test_the_command_refuses_a_missing_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "extraction", "--labelled", str(tmp_path / "no")])
    assert result.exit_code != 0 and "no labelled file" in result.output


def _vegetarian_answer(request: RecordedRequest) -> str | Reply:
    """A model that reads a diet from 'vegetarian' and nothing from anything else."""
    if "vegetarian" not in request.content_of("user"):
        return json.dumps({"claims": [], "complete": True})
    claim = {
        "family": "attribute",
        "kind": "fact",
        "statement": "The speaker is vegetarian.",
        "value": "vegetarian",
        "scope": "diet",
        "valid_from": None,
        "valid_until": None,
        "grounding": "I'm vegetarian",
        "confidence": None,
        "polarity": "assert",
    }
    return json.dumps({"claims": [claim], "complete": True})


@pytest.mark.usefixtures("no_proxies")
def test_the_command_scores_the_llm_extractor_on_its_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    labelled = _file(
        tmp_path,
        _turn(1, "I'm vegetarian.", [_label("diet", "vegetarian")]),
        _turn(2, "I play the cello.", [_label("instrument", "cello")]),
    )
    out = tmp_path / "out.json"
    with FakeChatServer(_vegetarian_answer) as server:
        monkeypatch.setenv("MEMLEDGER_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMLEDGER_LLM_MODEL", "fake-model")
        result = CliRunner().invoke(
            app,
            [
                "bench",
                "extraction",
                "--extractor",
                "llm",
                "--labelled",
                str(labelled),
                "--json",
                str(out),
            ],
        )
        asked = len(server.requests)
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text())
    assert body["extractor"] == f"llm:openai-compatible@{VERSION} (model 'fake-model')"
    assert body["labelled"]["precision"] == 1.0 and body["labelled"]["recall"] == 0.5
    assert asked == 2  # one request a turn


@pytest.mark.usefixtures("no_proxies")
def test_the_command_names_an_llm_endpoint_that_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    labelled = _file(tmp_path, _turn(1, "I'm vegetarian.", []))
    with FakeChatServer(lambda request: Reply(status=503)) as server:
        monkeypatch.setenv("MEMLEDGER_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMLEDGER_LLM_MODEL", "fake-model")
        result = CliRunner().invoke(
            app, ["bench", "extraction", "--extractor", "llm", "--labelled", str(labelled)]
        )
    assert result.exit_code != 0 and "the llm extractor failed" in result.output


def test_the_command_names_the_settings_an_llm_extractor_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLEDGER_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("MEMLEDGER_LLM_MODEL", raising=False)
    labelled = _file(tmp_path, _turn(1, "I'm vegetarian.", []))
    result = CliRunner().invoke(
        app, ["bench", "extraction", "--extractor", "llm", "--labelled", str(labelled)]
    )
    assert result.exit_code != 0 and "MEMLEDGER_LLM_BASE_URL" in result.output
