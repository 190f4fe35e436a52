"""``memledger bench serve`` over several servers in one run: a child server of each
process count (``--processes 1,2``), on SQLite and, given a PostgreSQL server, on
PostgreSQL, one after the other, each with every phase; then the figures side by side.

The JSON report holds ``benchmark``, ``machine`` and ``runs`` (each a report of one
server, as :func:`memledger.eval._serve_report.report` makes it); the text is the
machine, a table of the recall and mixed phases of every run, then each run's phases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from memledger.errors import InvalidInputError
from memledger.eval.machine import describe

if TYPE_CHECKING:
    from memledger.eval.bench_serve import Progress, ServeBenchConfig

__all__ = ["compare", "side_by_side"]


def compare(
    config: ServeBenchConfig,
    processes: Sequence[int],
    *,
    store: str | None = None,
    progress: Progress | None = None,
) -> dict[str, object]:
    """Every phase against a child server of each count in ``processes``, on SQLite,
    then (with ``store``, a PostgreSQL server) on a scratch database there."""
    from memledger.eval import bench_serve

    if not processes or len(set(processes)) != len(processes):
        raise InvalidInputError(f"processes must be distinct counts, got {list(processes)}")
    runs = [
        bench_serve.run(replace(config, processes=count), store=backend, progress=progress)
        for backend in (None, *([store] if store is not None else []))
        for count in processes
    ]
    return {"benchmark": "serve", "machine": describe(), "runs": runs}


def _phase(run: Mapping[str, object], prefix: str) -> Mapping[str, object] | None:
    phases = run["phases"]
    assert isinstance(phases, list)
    return next((p for p in phases if str(p["phase"]).startswith(prefix)), None)


def side_by_side(report: Mapping[str, object]) -> list[str]:
    """One row per run: its store, its processes, its recall and mixed phases, and the
    peak of its resident memory."""
    rows = [
        "| server | recall answered/s | recall p50 / p95 / p99 ms | mixed offered/s "
        "| mixed answered/s | mixed p50 / p95 / p99 ms | mixed errors | shed | unfinished "
        "| server peak MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    runs = report["runs"]
    assert isinstance(runs, list)
    for run in runs:
        recall, mixed = _phase(run, "recall, closed"), _phase(run, "mixed")
        assert recall is not None and mixed is not None
        held = run.get("server_memory")
        peak = f"{held['peak_mb']:,}" if isinstance(held, dict) else "-"
        rows.append(
            f"| {run['server']} | {recall['answered_per_s']:,} | {_latency(recall)} | "
            f"{mixed['offered_per_s']:,} | {mixed['answered_per_s']:,} | {_latency(mixed)} | "
            f"{mixed['errors']:,} | {mixed['shed']:,} | {mixed['unfinished']:,} | {peak} |"
        )
    return rows


def _latency(phase: Mapping[str, object]) -> str:
    lat = phase["latency_ms"]
    assert isinstance(lat, dict)
    return f"{lat['p50']} / {lat['p95']} / {lat['p99']}"
