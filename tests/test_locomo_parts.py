"""``bench locomo --conversations SPEC --parts DIR`` and ``bench locomo-merge DIR``: a run
in pieces, resumed where it stopped, merged into the report of one run.

The runs are on the first conversations of the real ``locomo-dev.json`` (skipped without
it) with ``bm25`` and ``memledger-lexical`` (a few seconds a conversation); the
mistakes are on a small file written here.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memledger._files import write_private
from memledger.cli import app
from memledger.errors import InvalidInputError
from memledger.eval.locomo import percentile
from memledger.eval.locomo._parts import read_parts
from memledger.eval.locomo._pieces import positions

REPO = Path(__file__).resolve().parents[1]
DEV = next(
    (
        p
        for p in (
            Path("/work/shared/data/locomo-dev.json"),
            REPO.parent / "shared" / "data" / "locomo-dev.json",
        )
        if p.is_file()
    ),
    None,
)
needs_dev = pytest.mark.skipif(DEV is None, reason="locomo-dev.json is not there")
RUN = ["--retriever", "bm25,memledger-lexical", "--k", "1,5,10", "--growth", "5000,10000"]
TIMED = {"prepare_seconds", "turns_per_s", "tokens_per_s", "peak_rss_mb", "latency_ms"}
"""What a second run measures otherwise: times, latencies and the peak RSS."""


def bench(*args: str | Path) -> Any:
    return CliRunner().invoke(app, ["bench", *map(str, args)])


def untimed(body: Any) -> Any:
    """``body`` without the fields that are measured, not computed."""
    if isinstance(body, dict):
        return {k: untimed(v) for k, v in body.items() if k not in TIMED}
    if isinstance(body, list):
        return [untimed(v) for v in body]
    return body


def mtimes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def pieces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Conversations 1 and 2 run by two commands into one folder of parts, that folder
    merged, and one run over both."""
    assert DEV is not None
    root = tmp_path_factory.mktemp("pieces")
    parts, merged, single = root / "parts", root / "merged.json", root / "single.json"
    first = bench("locomo", DEV, *RUN, "--conversations", "1", "--parts", parts)
    assert first.exit_code == 0, first.output
    second = bench("locomo", DEV, *RUN, "--conversations", "2", "--parts", parts)
    assert second.exit_code == 0, second.output
    merge = bench("locomo-merge", parts, "--json", merged, "--expect", "2")
    assert merge.exit_code == 0, merge.output
    one = bench("locomo", DEV, *RUN, "--limit-conversations", "2", "--json", single)
    assert one.exit_code == 0, one.output
    return {
        "parts": parts,
        "outputs": (first.output, second.output, merge.output, one.output),
        "merged": json.loads(merged.read_text()),
        "single": json.loads(single.read_text()),
    }


@pytest.fixture
def parts(pieces: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the folder of parts, for a test to change."""
    copied = tmp_path / "parts"
    shutil.copytree(pieces["parts"], copied)
    return copied


@needs_dev
def test_two_commands_merged_give_the_json_of_one_run(pieces: dict[str, Any]) -> None:
    merged, single = copy.deepcopy(pieces["merged"]), copy.deepcopy(pieces["single"])
    assert [b["retriever"] for b in merged] == ["bm25", "memledger-lexical"]
    assert merged[0]["questions"] == 302 and merged[0]["costs"]["turns"] == 788
    assert [g["tokens"] for g in merged[0]["costs"]["growth"]] == [5000, 10000]
    # the memledger store of one run holds both conversations; a part's holds its own
    for body in (merged[1], single[1]):
        assert body["costs"].pop("footprint_bytes") > 1_000_000
    assert untimed(merged) == untimed(single)
    tables = [
        [line for line in output.splitlines() if line.startswith(("|", "memledger bench"))]
        for output in (pieces["outputs"][2], pieces["outputs"][3])
    ]
    assert tables[0] == tables[1] and len(tables[0]) > 10


@needs_dev
def test_merged_costs_add_up_the_parts(pieces: dict[str, Any]) -> None:
    files = sorted(pieces["parts"].glob("conversation-*.memledger-lexical.json"))
    bodies = [json.loads(f.read_text()) for f in files]
    assert [b["conversation"]["position"] for b in bodies] == [1, 2]
    costs = pieces["merged"][1]["costs"]
    assert costs["footprint_bytes"] == sum(b["costs"]["footprint_bytes"] for b in bodies)
    assert costs["peak_rss_mb"] == round(max(b["costs"]["peak_rss_mb"] for b in bodies), 1)
    seconds = sum(b["costs"]["prepare_seconds"] for b in bodies)
    assert costs["prepare_seconds"] == round(seconds, 6)
    assert costs["turns_per_s"] == round(788 / seconds, 2)
    pooled = [q["latency_ms"] for b in bodies for q in b["questions"]]
    latency = pieces["merged"][1]["latency_ms"]
    assert latency == {
        "p50": round(percentile(pooled, 50), 3),
        "p95": round(percentile(pooled, 95), 3),
    }
    grown = [v for b in bodies for v in b["costs"]["growth"][1]["latencies_ms"]]
    assert costs["growth"][1]["latency_ms"]["p95"] == round(percentile(grown, 95), 3)


@needs_dev
def test_a_rerun_skips_the_parts_there_and_runs_the_missing_one(
    pieces: dict[str, Any], parts: Path, tmp_path: Path
) -> None:
    (parts / "conversation-002.bm25.json").unlink()  # as if killed before this part
    before = mtimes(parts)
    again = bench("locomo", DEV, *RUN, "--conversations", "1-2", "--parts", parts)
    assert again.exit_code == 0, again.output
    assert "1 written, 3 already there (skipped)" in again.output
    after = mtimes(parts)
    assert set(after) == {*before, "conversation-002.bm25.json"}
    assert all(after[name] == at for name, at in before.items())  # not prepared again
    merged = tmp_path / "merged.json"
    assert bench("locomo-merge", parts, "--json", merged).exit_code == 0
    assert untimed(json.loads(merged.read_text())) == untimed(pieces["merged"])


@needs_dev
def test_parts_of_another_run_are_refused_by_name(parts: Path, tmp_path: Path) -> None:
    before = mtimes(parts)
    other_k = [*RUN[:2], "--k", "1,5", *RUN[4:]]
    refused = bench("locomo", DEV, *other_k, "--conversations", "3", "--parts", parts)
    assert refused.exit_code == 2
    assert "conversation-001.bm25.json" in refused.output
    assert "ks [1, 5, 10] (here [1, 5])" in refused.output
    assert mtimes(parts) == before  # nothing run, nothing written
    # another input file: the same conversations, one question less
    assert DEV is not None
    samples = json.loads(DEV.read_text())[:2]
    samples[0]["qa"].pop()
    shorter = tmp_path / "shorter.json"
    shorter.write_text(json.dumps(samples))
    refused = bench("locomo", shorter, *RUN, "--conversations", "1", "--parts", parts)
    assert refused.exit_code == 2 and "input" in refused.output
    assert mtimes(parts) == before
    # a part of another k list among the others: merge names it
    stray = tmp_path / "stray"
    made = bench("locomo", DEV, *other_k, "--conversations", "3", "--parts", stray)
    assert made.exit_code == 0, made.output
    shutil.copy(stray / "conversation-003.bm25.json", parts)
    mixed = bench("locomo-merge", parts)
    assert mixed.exit_code == 2
    assert "conversation-003.bm25.json" in mixed.output and "ks" in mixed.output


@needs_dev
def test_merge_expect_names_the_missing_conversations(parts: Path, tmp_path: Path) -> None:
    (parts / "conversation-001.memledger-lexical.json").unlink()
    out = tmp_path / "out.json"
    short = bench("locomo-merge", parts, "--expect", "4", "--json", out)
    assert short.exit_code == 2
    assert "bm25 3-4; memledger-lexical 1,3-4" in short.output
    assert not out.exists()
    assert bench("locomo-merge", parts).exit_code == 0  # what is there, without --expect


@needs_dev
def test_a_part_that_is_not_one_is_named(parts: Path) -> None:
    broken = parts / "conversation-002.bm25.json"
    broken.write_text(broken.read_text()[:1000])
    result = bench("locomo-merge", parts)
    assert result.exit_code == 2 and "conversation-002.bm25.json" in result.output
    renamed = parts / "conversation-005.bm25.json"
    shutil.copy(parts / "conversation-001.bm25.json", renamed)
    broken.unlink()
    result = bench("locomo-merge", parts)
    assert result.exit_code == 2 and "not what its name says" in result.output


def test_a_failed_write_leaves_the_old_part_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "conversation-001.bm25.json"
    write_private(path, "old\n")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("os.fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_private(path, "new " * 10_000)
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_process_killed_while_writing_leaves_no_part(tmp_path: Path) -> None:
    """Killed outright after the whole text is in the temporary file, before the rename:
    the part is not there, and the hidden temporary file is not read as one."""
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from memledger._files import write_private\n"
        "os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        'write_private(Path(sys.argv[1]), \'{"format": "memledger-locomo-part/1"\' * 1000)\n'
    )
    path = tmp_path / "conversation-001.bm25.json"
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == -9
    assert not path.exists()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".conversation-001.bm25.json.")
    assert read_parts(tmp_path) == []


def test_positions_spec() -> None:
    assert positions("1-5,9,12-14", 14) == [1, 2, 3, 4, 5, 9, 12, 13, 14]
    assert positions(" 3 , 1-2,2", 3) == [1, 2, 3]
    for spec in ("0", "2-1", "1-", "x", "1,,2", "", "-3", "1-2-3"):
        with pytest.raises(InvalidInputError):
            positions(spec, 14)
    with pytest.raises(InvalidInputError, match="past the file's 14 conversations"):
        positions("12-15", 14)


def two_chats(tmp_path: Path) -> Path:
    def chat(sample: str, word: str) -> dict[str, Any]:
        return {
            "sample_id": sample,
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": f"I like {word}."},
                    {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice weather today."},
                ],
            },
            "qa": [{"question": f"{word}?", "answer": "x", "evidence": ["D1:1"], "category": 4}],
        }

    path = tmp_path / "two.json"
    path.write_text(json.dumps([chat("a", "tea"), chat("b", "jazz")]))
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--conversations", "0"], "not a range of positions from 1 up"),
        (["--conversations", "2-1"], "not a range of positions from 1 up"),
        (["--conversations", "1;2"], "takes 1-based positions and ranges"),
        (["--conversations", "1-"], "takes 1-based positions and ranges"),
        (["--conversations", "2-3"], "position 3 is past the file's 2 conversations"),
        (
            ["--conversations", "1", "--limit-conversations", "1"],
            "--conversations and --limit-conversations cannot be combined",
        ),
        (["--retriever", "bm25,nope"], "unknown retriever 'nope'"),
    ],
)
def test_bad_selections_exit_2_and_write_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    path = two_chats(tmp_path)
    parts, out = tmp_path / "parts", tmp_path / "out.json"
    result = bench("locomo", path, *args, "--parts", parts, "--json", out)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not parts.exists() and not out.exists()


def test_conversations_chooses_what_one_run_covers(tmp_path: Path) -> None:
    path = two_chats(tmp_path)
    out = tmp_path / "out.json"
    result = bench("locomo", path, "--conversations", "2", "--json", out)
    assert result.exit_code == 0, result.output
    assert "1 conversations, 2 turns" in result.output
    body = json.loads(out.read_text())
    assert body["questions"] == 1 and body["recall"]["overall"]["1"] == 1.0


def test_merge_of_an_empty_or_missing_folder_is_refused(tmp_path: Path) -> None:
    missing = bench("locomo-merge", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "no folder of parts" in missing.output
    empty = bench("locomo-merge", tmp_path, "--expect", "3")
    assert empty.exit_code == 2 and "no parts in" in empty.output
