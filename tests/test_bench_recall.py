"""``memledger bench recall``: the report's shape and sanity at small sizes, and the CLI.

Timings are measured, never asserted: only their order (p50 <= p95 <= p99).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memledger.cli import app
from memledger.errors import InvalidInputError
from memledger.eval import bench_recall, recall_population
from memledger.eval.bench_recall import Report, percentiles, population, run
from memledger.testing.postgres import PostgresServer


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    phases: list[str] = []
    done = run(
        [300, 1000],
        ["none", "hashing"],
        queries=30,
        folder=tmp_path_factory.mktemp("bench"),
        progress=lambda phase, n, total: phases.append(phase) if n == total else None,
    )
    assert any(p.startswith("feed") for p in phases)
    assert any(p.startswith("index") for p in phases)
    assert any(p.startswith("queries") for p in phases)
    return done


def test_every_size_runs_every_mode_over_about_the_requested_records(report: Report) -> None:
    rows = [(r.requested, r.embedder) for r in report.results]
    assert rows == [(300, "none"), (300, "hashing"), (1000, "none"), (1000, "hashing")]
    for r in report.results:
        assert abs(r.records - r.requested) <= 0.05 * r.requested
        assert abs(r.other_records - 3 * r.requested / 10) <= 0.15 * r.requested
        assert r.subjects == round(r.requested / recall_population.RECORDS_PER_SUBJECT)
        assert r.queries == 30
        assert r.mode == ("lexical" if r.embedder == "none" else "hybrid")
        assert r.index_seconds > 0 and r.feed_seconds > 0


def test_percentiles_are_ordered_and_answers_are_sane(report: Report) -> None:
    for r in report.results:
        assert 0 < r.recall_ms.p50 <= r.recall_ms.p95 <= r.recall_ms.p99
        assert 0 < r.slot_ms.p50 <= r.slot_ms.p95 <= r.slot_ms.p99
        assert r.hit_rate >= 0.9, r  # stated facts are found among the first ten
        assert r.abstain_rate >= 0.9, r  # what was never said gets no answer


def test_growth_compares_the_largest_size_with_the_smallest(report: Report) -> None:
    assert [g.embedder for g in report.growth] == ["none", "hashing"]
    for g in report.growth:
        assert g.records_from < g.records_to
        assert g.records_ratio == pytest.approx(g.records_to / g.records_from)
        assert g.recall_p50_ratio > 0 and g.slot_p50_ratio > 0


def test_json_body_and_markdown(report: Report) -> None:
    body = json.loads(json.dumps(bench_recall.json_body(report)))
    assert set(body) >= {"machine", "results", "growth"}
    assert body["machine"]["cores"] >= 1
    first = body["results"][0]
    assert set(first) >= {"records", "embedder", "recall_ms", "slot_ms", "index_seconds"}
    assert set(first["recall_ms"]) == {"p50", "p95", "p99"}
    assert set(first["slot_ms"]) >= {"p50", "p95"}
    assert set(body["growth"]) == {"none", "hashing"}
    table = bench_recall.markdown(report)
    assert table.count("\n| ") == 1 + len(report.results)  # the rule line and the rows
    assert "growth (sqlite, hashing)" in table


def test_tenant_wide_rows_and_the_approximate_index(report: Report) -> None:
    for r in report.results:
        assert r.tenant_recall_ms is not None and r.tenant_recall_ms.p50 > 0
        if r.embedder == "none":
            assert r.tenant_vector_ms is None and r.ann_build_seconds is None
            assert r.tenant_recall_ann_ms is None and r.ann_overlap is None
            continue
        assert r.tenant_vector_ms is not None and r.tenant_recall_ann_ms is not None
        assert r.tenant_vector_ann_ms is not None
        assert r.ann_build_seconds is not None and r.ann_build_seconds > 0
        assert r.ann_vectors is not None and 0 < r.ann_vectors <= r.records
        assert r.ann_overlap is not None and r.ann_overlap_ids is not None
        assert 0.9 <= r.ann_overlap <= 1.0 and 0.0 <= r.ann_overlap_ids <= r.ann_overlap
        assert r.ann_overlap_stated is not None and 0.9 <= r.ann_overlap_stated <= 1.0
        assert r.ann_cosine_ratio is not None and 0.95 <= r.ann_cosine_ratio <= 1.0 + 1e-6
    body = json.loads(json.dumps(bench_recall.json_body(report)))
    first = body["results"][1]
    assert set(first) >= {"tenant_recall_ms", "tenant_recall_ann_ms", "ann_overlap"}
    table = bench_recall.tenant_markdown(report)
    assert table.count("\n| ") == 1 + len(report.results)
    assert "| - | - |" in table  # the lexical rows have no vector figures


def test_overlap_counts_equal_cosines_alike() -> None:
    exact = [(["a", "b", "c"], [0.9, 0.5, 0.5]), ([], [])]
    found = [(["a", "b", "d"], [0.9, 0.5, 0.5]), ([], [])]  # d ties with c
    assert bench_recall.overlap(found, exact) == pytest.approx((1.0, 2 / 3))
    worse = [(["a", "e", "b"], [0.9, 0.4, 0.5]), ([], [])]
    assert bench_recall.overlap(worse, exact) == pytest.approx((2 / 3, 2 / 3))


def test_population_is_deterministic_with_many_subjects() -> None:
    first = population("tenant-x", 5000, seed=3)
    assert len(first) == 100
    assert first == population("tenant-x", 5000, seed=3)
    assert first != population("tenant-x", 5000, seed=4)
    assert len({s.subject for s in first}) == 100
    asked = [q for s in first for q in s.questions]
    assert any(q.family is None for q in asked) and any(q.family for q in asked)


def test_percentiles_nearest_rank() -> None:
    p = percentiles([float(n) for n in range(100, 0, -1)])
    assert (p.p50, p.p95, p.p99) == (50.0, 95.0, 99.0)
    assert percentiles([]).p99 == 0.0


def test_run_feeds_in_place_without_tmpfs_and_rejects_bad_input(tmp_path: Path) -> None:
    done = run([120], ["none"], queries=5, folder=tmp_path, fast_feed=False)
    assert done.fed_in == (str(tmp_path),) and done.results[0].records > 100
    assert done.growth == ()
    with pytest.raises(InvalidInputError):
        run([0], ["none"])
    with pytest.raises(InvalidInputError):
        run([10], ["minilm"])  # type: ignore[list-item]


def test_cli_prints_a_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "recall.json"
    args = ["--records", "150", "--queries", "5", "--embedder", "none", "--json", str(out)]
    result = CliRunner().invoke(app, ["bench", "recall", *args])
    assert result.exit_code == 0, result.output
    assert "| records | embedder |" in result.output
    assert "tenant-wide (no subject)" in result.output
    body = json.loads(out.read_text())
    assert [r["embedder"] for r in body["results"]] == ["none"]
    assert body["results"][0]["queries"] == 5


def test_cli_on_postgresql_reads_the_same_answers_as_on_sqlite(
    tmp_path: Path, postgres: PostgresServer, scratch_databases: list[str]
) -> None:
    bodies = {}
    for name, extra in (("sqlite", []), ("postgresql", ["--store", postgres.url()])):
        out = tmp_path / f"{name}.json"
        args = ["--records", "150", "--queries", "8", "--embedder", "none", "--json", str(out)]
        result = CliRunner().invoke(app, ["bench", "recall", *args, *extra])
        assert result.exit_code == 0, result.output
        bodies[name] = json.loads(out.read_text())
    assert "PostgreSQL canonical store" not in bodies["sqlite"]["fed_in"][0]
    assert bodies["postgresql"]["fed_in"][0].startswith("postgresql://")
    assert len(scratch_databases) == 1  # the PostgreSQL run's store was a scratch database
    sqlite, pg = bodies["sqlite"]["results"][0], bodies["postgresql"]["results"][0]
    same = ("records", "other_records", "subjects", "hit_rate", "abstain_rate", "queries")
    assert {k: pg[k] for k in same} == {k: sqlite[k] for k in same}
    left = postgres.execute("SELECT datname FROM pg_database WHERE datname LIKE 'memledger_bench%'")
    assert left == []


def test_cli_feed_copy_measures_sqlite_then_its_copy_in_postgresql(
    tmp_path: Path, postgres: PostgresServer, scratch_databases: list[str]
) -> None:
    out = tmp_path / "both.json"
    args = ["--records", "120,240", "--queries", "8", "--embedder", "none,hashing"]
    extra = ["--store", postgres.url(), "--feed", "copy", "--json", str(out)]
    result = CliRunner().invoke(app, ["bench", "recall", *args, *extra])
    assert result.exit_code == 0, result.output
    assert "then its copy in PostgreSQL" in result.output
    body = json.loads(out.read_text())
    rows = {(r["store"], r["requested"], r["embedder"]): r for r in body["results"]}
    assert len(rows) == 8 and len(scratch_databases) == 2  # one copy per size
    same = ("records", "other_records", "subjects", "hit_rate", "abstain_rate", "feed_seconds")
    for (store, size, mode), row in rows.items():
        if store == "postgresql":
            assert row["copy_seconds"] > 0
            twin = rows[("sqlite", size, mode)]
            assert twin["copy_seconds"] is None
            assert {k: row[k] for k in same} == {k: twin[k] for k in same}  # the same rows
    assert set(body["growth"]) == {
        f"{store}:{mode}" for store in ("sqlite", "postgresql") for mode in ("none", "hashing")
    }
    assert not postgres.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE 'memledger_bench%'"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--feed", "copy"], "--feed copy copies into PostgreSQL"),
        (["--feed", "bulk"], "--feed takes write or copy"),
        (["--store", "sqlite:///x.db"], "--store takes a postgresql:// URL"),
        (["--records", "0"], "--records"),
        (["--records=-5"], "--records"),
        (["--records", "ten"], "--records"),
        (["--records", ","], "--records"),
        (["--embedder", "minilm"], "--embedder"),
        (["--embedder", "none,none"], "--embedder"),
        (["--queries", "0"], "--queries"),
    ],
)
def test_cli_rejects_bad_options_without_a_traceback(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["bench", "recall", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
