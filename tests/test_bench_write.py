"""``memledger bench write`` on SQLite and on a PostgreSQL server: small runs that check
the shape of what it reports, not its speed (timings are never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memledger.cli import app
from memledger.testing.postgres import PostgresServer


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_bench_write_reports_throughput_and_lag(
    backend: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    scratch_databases: list[str],
) -> None:
    extra: list[str] = []
    if backend == "postgresql":
        postgres: PostgresServer = request.getfixturevalue("postgres")
        extra = ["--store", postgres.url()]
    out = tmp_path / "write.json"
    result = CliRunner().invoke(
        app,
        ["bench", "write", "--events", "30", "--workers", "1,2", "--rate", "40",
         "--seconds", "0.5", "--json", str(out), *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text())
    assert body["store"] == backend
    assert [(r["events"], r["workers"]) for r in body["throughput"]] == [(30, 1), (30, 2)]
    for row in body["throughput"]:
        assert sum(row["outcomes"].values()) == 30  # every job ran, none twice
        assert min(row["ingest_per_s"], row["process_per_s"], row["baseline_insert_per_s"]) > 0
    assert body["lag"]["events"] == 20 and body["lag"]["p50_ms"] <= body["lag"]["max_ms"]
    shown = "PostgreSQL at postgresql://" if backend == "postgresql" else "SQLite"
    assert shown in result.stdout
    # on PostgreSQL: a database per run, per baseline and for the lag run
    assert len(scratch_databases) == (5 if backend == "postgresql" else 0)
    if backend == "postgresql":  # every scratch database was dropped
        left = request.getfixturevalue("postgres").execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'memledger_bench%'"
        )
        assert left == []


def test_bench_write_store_must_be_postgresql() -> None:
    result = CliRunner().invoke(app, ["bench", "write", "--store", "sqlite:///x.db"])
    assert result.exit_code == 2 and "--store takes a postgresql:// URL" in result.output


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_prefill_starts_every_throughput_run_from_a_store_of_that_size(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    extra: list[str] = []
    if backend == "postgresql":
        extra = ["--store", request.getfixturevalue("postgres").url()]
    out = tmp_path / "write.json"
    result = CliRunner().invoke(
        app,
        ["bench", "write", "--events", "20", "--workers", "1,2", "--rate", "40",
         "--seconds", "0.25", "--prefill", "100", "--json", str(out), *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["throughput"]
    held = {row["prefill_records"] for row in rows}
    assert len(held) == 1 and held.pop() >= 100  # the measured tenant's and three others'
    for row in rows:  # each run's store held the prefill, then what the run added
        assert row["records_after"] > row["prefill_records"]
        assert sum(row["outcomes"].values()) == 20
    assert "| records before |" in result.stdout
    if backend == "postgresql":  # copied there once, cloned for each run, then dropped
        left = request.getfixturevalue("postgres").execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'memledger_%'"
        )
        assert left == []


def test_a_prefill_is_copied_to_the_server_once_and_cloned_for_each_run(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memledger.eval import bench_write
    from memledger.write.extract.rules import RuleExtractor

    copies: list[str] = []
    real = bench_write.copy_store

    def counted(source: object, target: object, **kwargs: object) -> dict[str, int]:
        copies.append(str(getattr(target, "url", "")))
        return real(source, target, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bench_write, "copy_store", counted)
    results, _ = bench_write.run(
        [10], RuleExtractor(), rate=40, seconds=0.25, workers=(1, 2),
        server=postgres.url(), prefill=60,
    )  # fmt: skip
    assert len(copies) == 1 and "memledger_prefill" in copies[0]
    assert len(results) == 2
    assert all(r.records_after > r.prefill_records >= 60 for r in results)


def test_runs_can_start_from_a_given_store(tmp_path: Path) -> None:
    from memledger import Memory
    from memledger.store import open_store
    from memledger.testing import FrozenClock
    from memledger.testing.scenarios import day, event, pref

    given = tmp_path / "given.db"
    memory = Memory(open_store(given), clock=FrozenClock(day(10, 2)))
    for n in range(5):
        memory.ingest(event(f"e{n}", "Fridays", occurred_at=day(10, 1, n)), [pref("friday")])
    memory.close()
    out = tmp_path / "write.json"
    result = CliRunner().invoke(
        app,
        ["bench", "write", "--events", "10", "--workers", "1", "--rate", "40",
         "--seconds", "0.25", "--prefill-store", str(given), "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = json.loads(out.read_text())["throughput"]
    assert row["prefill_records"] == 1  # one open record: each Friday merged into it
    assert row["records_after"] > 1
    both = CliRunner().invoke(
        app, ["bench", "write", "--prefill", "10", "--prefill-store", str(given)]
    )
    assert both.exit_code == 2 and "not both" in both.output
