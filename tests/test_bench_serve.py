"""``memledger bench serve``: a real child ``memledger serve`` driven from this process.
Only the shape and the error count are checked: timings are never asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import assert_one_error, run
from memledger.errors import InvalidInputError
from memledger.eval.bench_serve import Phase, ServeBenchConfig, markdown
from memledger.eval.bench_serve import run as bench


def test_the_serve_benchmark_drives_a_child_server_without_errors(tmp_path: Path) -> None:
    config = ServeBenchConfig(
        duration=0.5,
        concurrency=2,
        rate=20,
        subjects=2,
        turns=2,
        quiet_concurrency=1,
        noisy_concurrency=6,
        material_chars=70_000,
        burst=3,
        serve_options=("--tenant-in-flight", "2"),
    )
    report = bench(config)
    phases = report["phases"]
    assert isinstance(phases, list)
    assert [p["phase"] for p in phases] == [
        "baseline /healthz, closed loop",
        "recall, closed loop",
        "mixed, open loop at 20/s",
        "quiet tenant recall alone, 1 clients",
        "quiet tenant recall beside the flood, 1 clients",
        "noisy tenant flood: 6 clients of contexts with 70,000 chars of material",
        "burst of 3 writes, then the first read",
    ]
    flood = phases.pop(5)
    for phase in phases:
        assert phase["requests"] > 0 and phase["errors"] == 0, phase
        assert phase["shed"] == 0 and phase["not_answered"] == 0, phase
        lat = phase["latency_ms"]
        assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    # the flood of 6 heavy contexts at once over a cap of 2 is shed, the quiet tenant is not
    assert flood["shed"] > 0 and flood["errors_by_kind"].keys() == {"context 429"}, flood
    assert flood["ok_per_s"] > 0
    assert set(phases[1]["by_operation"]) == {"recall"}
    assert phases[2]["requests"] == 10  # every scheduled request was sent and counted
    assert set(phases[-1]["by_operation"]) == {"ingest", "first read"}
    assert phases[-1]["by_operation"]["first read"]["requests"] == 1
    text = markdown(report)
    assert "| recall, closed loop |" in text and "the first read after it" in text
    assert text.startswith("machine: ") and "cores" in text
    assert report["machine"]["cores"] >= 1  # type: ignore[index]
    assert json.loads(json.dumps(report)) == report  # what --json writes


def test_a_phase_counts_failures_by_kind() -> None:
    phase = Phase("p", seconds=1.0)
    phase.add("recall", 5.0, 200)
    phase.add("recall", 7.0, 503)
    phase.add("ingest", 9.0, "ConnectError")
    done = phase.to_json()
    assert done["requests"] == 3 and done["errors"] == 2
    assert done["errors_by_kind"] == {"recall 503": 1, "ingest ConnectError": 1}


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    for bad in (
        {"duration": 0},
        {"concurrency": 0},
        {"rate": -1},
        {"recall_share": 2},
        {"noisy_concurrency": 0},
        {"material_chars": 3_000_000},
        {"burst": True},
    ):
        with pytest.raises(InvalidInputError):
            ServeBenchConfig(**bad)  # type: ignore[arg-type]
    assert_one_error(run(["bench", "serve", "--duration", "0"]), "duration")
    assert_one_error(run(["bench", "serve", "--url", "http://127.0.0.1:1"]), "--key")
    assert_one_error(run(["bench", "serve", "--noisy-key", "mlk_x"]), "--noisy-key")
    assert not list(tmp_path.iterdir())


def test_a_phase_stops_at_its_duration_against_a_server_that_never_answers() -> None:
    """A listener that accepts connections and never answers: the open loop still ends
    (bounded by its duration plus the hard stop) and counts every request not answered."""
    import asyncio
    import socket
    import threading

    from memledger.eval.bench_serve import _open_loop

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    found: list[Phase] = []
    config = ServeBenchConfig(duration=0.5, rate=200, subjects=2, turns=1)
    runner = threading.Thread(
        target=lambda: found.append(asyncio.run(_open_loop(base, "mlk_x", config))), daemon=True
    )
    runner.start()
    runner.join(120)
    stop.set()
    acceptor.join(5)
    for conn in held:
        conn.close()
    listener.close()
    assert found, "the phase did not stop by itself"
    done = found[0].to_json()
    assert done["not_answered"] == 100 and done["ok_per_s"] == 0.0, done
    assert done["offered_per_s"] > 0
