"""``memledger recall`` and ``memledger reindex``, run in-process against SQLite files.

Events are ingested with ``memledger ingest`` (some with claims, most queued) and
the queued ones turned into episodes and facts by ``memledger worker --drain``
with the rule-based extractor. The hashing embedder keeps every run offline and
fast; the default one (MiniLM when installed) is not loaded here.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import assert_one_error, event_json, run, snapshot

GRANTS = ["home_city", "delivery_preference"]
ACME = ["--tenant", "acme"]
HASHING = ["--embedder", "hashing"]
LATER = ["--valid-at", "2026-11-15T00:00:00Z"]
PERU = "What is the capital of Peru?"
VIOLIN = "Who plays the violin in an orchestra?"


def ok(args: Sequence[str], **kwargs: Any) -> str:
    result = run(args, **kwargs)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.stdout


def ok_json(args: Sequence[str], **kwargs: Any) -> Any:
    return json.loads(ok([*args, "--json"], **kwargs))


def event(event_id: str, text: str, *, hour: int, **fields: Any) -> dict[str, Any]:
    """``text`` said at ``hour`` on Oct 2 (its sequence too), in session ``s1``."""
    when = {"sequence": hour, "occurred_at": f"2026-10-02T{hour:02d}:00:00Z"}
    said = {**when, "metadata": {"session": "s1"}, **fields}
    return event_json(event_id, grants=GRANTS, text=text, **said)


def recall(db: Path, query: str, *extra: str, embedder: str = "hashing") -> dict[str, Any]:
    found = ok_json(["recall", query, *ACME, "--db", str(db), "--embedder", embedder, *extra])
    assert isinstance(found, dict)
    return found


def ids(found: dict[str, Any]) -> list[str]:
    return [item["memory_id"] for item in found["items"]]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Turns of two threads for acme (episodes and rule facts from the worker), an
    explicit delivery preference that expired on November 1, and globex's copy of a turn."""
    path = tmp_path_factory.mktemp("seeded") / "mem.db"
    daily = {
        "family": "delivery_preference",
        "kind": "preference",
        "statement": "Wants the digest daily",
        "value": "daily",
        "grounding": "digest daily",
        "valid_until": "2026-11-01T00:00:00Z",
    }
    events = [
        event("evt-1", "I live in Lyon and I love the old town.", hour=9),
        event("evt-2", "My sister plays the violin in an orchestra.", hour=10),
        event("evt-3", "We should book the concert tickets soon.", hour=11),
        event("evt-4", "Send me the digest daily until November.", hour=12, claims=[daily]),
        event(
            "evt-5",
            "The garden needs watering twice a week.",
            hour=13,
            metadata={"session": "s2"},
        ),
        event("evt-1", "My sister plays the violin in an orchestra.", hour=9, tenant="globex"),
    ]
    receipts = ok_json(["ingest", "-", "--db", str(path)], stdin=json.dumps(events))
    outcomes = [r["outcome"] for r in receipts]
    assert outcomes == ["queued", "queued", "queued", "committed", "queued", "queued"]
    report = ok_json(["worker", "--drain", "--db", str(path)])
    assert report["outcomes"]["committed"] == 5
    assert sorted(p.name for p in path.parent.iterdir()) == ["mem.db", "mem.db.lock"]
    return path


@pytest.fixture
def db(seeded: Path, tmp_path: Path) -> Path:
    """A fresh copy of the seeded store (and no index yet) for each test."""
    path = tmp_path / "mem.db"
    shutil.copy(seeded, path)  # with its mode (0600)
    return path


def test_recall_json_gives_canonical_records_with_their_sources(db: Path) -> None:
    found = recall(db, VIOLIN, *LATER)
    assert found["query"] == VIOLIN
    assert (found["mode"], found["degraded"], found["abstained"]) == ("hybrid", None, False)
    assert found["index_lag"] == 0  # recall syncs the index first
    assert found["items"]
    best = found["items"][0]
    assert best["source_event_id"] == "evt-2"
    assert best["record"]["value"]["text"] == "My sister plays the violin in an orchestra."
    for item in found["items"]:
        record = item["record"]
        assert item["memory_id"] == record["memory_id"]
        assert item["revision"] == record["revision"] >= 1
        assert item["source_event_id"] == record["source_event_id"]
        assert record["tenant"] == "acme" and record["status"] == "active"
        assert set(item["sources"]) <= {"lexical", "vector", "slot", "context"}
    assert {"lexical", "vector"} <= set(best["sources"])
    globex = ok_json(
        ["recall", VIOLIN, "--tenant", "globex", "--db", str(db), "--embedder", "hashing"]
    )
    assert [i["record"]["tenant"] for i in globex["items"]] == ["globex"]
    assert not set(ids(globex)) & set(ids(found))
    assert all(set(e) == {"memory_id", "reason"} for e in found["excluded"])
    assert not {e["memory_id"] for e in found["excluded"]} & set(ids(found))


def test_recall_excludes_what_the_canonical_store_no_longer_holds(db: Path) -> None:
    question = "How often is the digest sent?"
    before = recall(db, question, "--valid-at", "2026-10-15T00:00:00Z")
    (daily,) = [i for i in before["items"] if i["record"]["family"] == "delivery_preference"]
    assert daily["source_event_id"] == "evt-4" and daily["record"]["value"] == "daily"
    after = recall(db, question, *LATER)
    assert daily["memory_id"] not in ids(after)
    assert {"memory_id": daily["memory_id"], "reason": "expired"} in after["excluded"]


def test_a_question_without_support_abstains(db: Path) -> None:
    found = recall(db, PERU, *LATER)
    assert found["abstained"] is True and found["items"] == []
    table = ok(["recall", PERU, *ACME, "--db", str(db), "--embedder", "hashing"])
    assert "no relevant memory" in table


def test_subject_and_k_narrow_the_answer(db: Path) -> None:
    assert len(recall(db, "sister violin concert tickets Lyon", "--k", "1")["items"]) == 1
    other = recall(db, VIOLIN, "--subject", "user-7")
    assert other["items"] == [] and other["abstained"] is True


def test_lexical_only_says_so(db: Path) -> None:
    found = recall(db, VIOLIN, embedder="none")
    assert found["mode"] == "lexical"
    assert found["degraded"] == "no embedder: lexical only"
    assert found["items"][0]["source_event_id"] == "evt-2"
    assert all("vector" not in item["sources"] for item in found["items"])
    table = ok(["recall", VIOLIN, *ACME, "--db", str(db), "--embedder", "none"])
    assert "no embedder: lexical only" in table
    assert "[yellow]" not in table  # the console prints data, never markup


def test_switching_back_to_vectors_after_a_lexical_run_uses_vectors(db: Path) -> None:
    """The index file records its embedder: a lexical run followed by a hashing run
    must rebuild it with vectors, not keep serving the lexical-only file."""
    recall(db, VIOLIN, embedder="none")
    found = recall(db, VIOLIN)
    assert found["mode"] == "hybrid"
    assert "vector" in found["items"][0]["sources"]


def test_reindex_rebuilds_the_file_and_recall_answers_the_same(db: Path) -> None:
    index = Path(f"{db}.index")
    assert not index.exists()
    first = recall(db, VIOLIN, *LATER)
    assert index.exists()
    out = ok(["reindex", "--db", str(db), "--embedder", "hashing"])
    conn = sqlite3.connect(db)
    try:
        (rows,) = conn.execute("SELECT count(*) FROM outbox").fetchone()
    finally:
        conn.close()
    (line,) = out.splitlines()
    assert line.startswith(f"reindexed {rows} outbox rows of every tenant: ")
    assert "hashing:char3+word:384:v1" in line
    found = re.search(r"holds (\d+) entries, (\d+) vectors", line)
    assert found is not None
    entries, vectors = int(found[1]), int(found[2])
    assert entries == vectors > 0
    conn = sqlite3.connect(db)
    try:
        (acme_rows,) = conn.execute("SELECT count(*) FROM outbox WHERE tenant = 'acme'").fetchone()
    finally:
        conn.close()
    one = ok(["reindex", "--db", str(db), "--embedder", "hashing", *ACME])
    assert 0 < acme_rows < rows  # globex's rows are left as they are
    assert one.startswith(f"reindexed {acme_rows} outbox rows of tenant 'acme': ")
    assert f"holds {entries} entries" in one
    assert index.exists()
    again = recall(db, VIOLIN, *LATER)
    assert ids(again) == ids(first)
    assert [i["score"] for i in again["items"]] == pytest.approx(
        [i["score"] for i in first["items"]]
    )
    lexical = ok(["reindex", "--db", str(db), "--embedder", "none"])
    assert lexical.rstrip().endswith(f"{entries} entries, 0 vectors (lexical only)")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["recall", "", *ACME, *HASHING], ["query must be a non-empty string"]),
        (["recall", "   ", *ACME, *HASHING], ["query must be a non-empty string"]),
        (["recall", VIOLIN, "--k", "0", *ACME, *HASHING], ["k must", "got 0"]),
        (["recall", VIOLIN, "--k", "101", *ACME, *HASHING], ["k must", "got 101"]),
        (["recall", VIOLIN, "--k", "ten", *ACME, *HASHING], ["--k"]),
        (["recall", VIOLIN, "--embedder", "bert", *ACME], ["--embedder", "'bert'"]),
        (["reindex", "--embedder", "bert"], ["--embedder", "'bert'"]),
        (
            ["recall", VIOLIN, "--valid-at", "2026-10-05", *ACME, *HASHING],
            ["--valid-at", "no time zone"],
        ),
        (["recall", VIOLIN, "--subject", "", *ACME, *HASHING], ["subject"]),
    ],
)
def test_bad_input_is_one_error_line_and_changes_nothing(
    db: Path, args: list[str], fragments: list[str]
) -> None:
    before = snapshot(db)
    assert_one_error(run([*args, "--db", str(db)]), *fragments)
    if args[0] == "recall":
        assert_one_error(run([*args, "--db", str(db), "--json"]), *fragments)
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "args",
    [
        ["recall", "", *ACME],  # the default embedder: MiniLM, loaded before the check
        ["recall", "", *ACME, "--embedder", "hashing"],
        ["recall", VIOLIN, "--k", "0", *ACME, "--embedder", "hashing"],
        ["recall", VIOLIN, "--k", "101", *ACME, "--embedder", "hashing"],
    ],
)
def test_a_refused_query_builds_no_index(db: Path, args: list[str]) -> None:
    """Arguments are checked before the index is opened and fed: a typo must not first
    load a model and embed the whole store (minutes with a real model), printing the
    model's progress bars on stderr, and only then fail."""
    assert_one_error(run([*args, "--db", str(db)]))
    assert not Path(f"{db}.index").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["recall", VIOLIN, *ACME, "--embedder", "hashing"],
        ["recall", VIOLIN, *ACME, "--embedder", "none", "--json"],
        ["reindex", "--embedder", "hashing"],
    ],
)
def test_a_missing_store_is_one_error_line_and_creates_nothing(
    tmp_path: Path, args: list[str]
) -> None:
    missing = tmp_path / "never.db"
    assert_one_error(run([*args, "--db", str(missing)]), "no memledger store")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_store_in_a_missing_folder_is_a_store_failure(tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "x.db"
    assert_one_error(
        run(["recall", VIOLIN, *ACME, "--db", str(db), "--embedder", "none"]),
        "folder does not exist",
        code=1,
    )
    assert not (tmp_path / "no").exists()


def test_tenant_from_the_environment(db: Path) -> None:
    env = {"MEMLEDGER_TENANT": "acme", "MEMLEDGER_URL": f"sqlite:///{db}"}
    found = ok_json(["recall", VIOLIN, "--embedder", "hashing"], env=env)
    assert found["items"] and found["items"][0]["record"]["tenant"] == "acme"
    # neither --tenant nor the variable: tenant 'default', which holds nothing here
    alone = {"MEMLEDGER_URL": env["MEMLEDGER_URL"]}
    bare = ok_json(["recall", VIOLIN, "--embedder", "hashing"], env=alone)
    assert bare["abstained"] and bare["items"] == []


def test_an_order_question_is_shown_in_the_order_things_happened(db: Path) -> None:
    asked = "In what order did I mention the violin and the concert tickets?"
    found = recall(db, asked)
    assert found["order"] == "time"
    assert found["understood"]["shape"] == {
        "across_sessions": True,
        "ordered": True,
        "to_agent": False,
        "gathers": False,
        "dates": False,
    }
    printed = ok(["recall", asked, *ACME, "--db", str(db), *HASHING])
    assert "in the order they happened" in printed
    assert {"evt-2", "evt-3"} <= {i["source_event_id"] for i in found["items"]}
    assert printed.index("evt-2") < printed.index("evt-3")  # 10:00, then 11:00
    plain = recall(db, VIOLIN)
    assert plain["order"] == "relevance" and plain["understood"]["shape"]["ordered"] is False
    gathering = recall(db, "When did I first mention the violin?")
    assert gathering["understood"]["shape"]["dates"] is True
    assert "in the order they happened" not in ok(
        ["recall", VIOLIN, *ACME, "--db", str(db), *HASHING]
    )
