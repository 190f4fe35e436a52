"""``memledger bench serve``: a real child ``memledger serve`` driven from this process,
and a real loopback HTTP server that stops answering. Timings are never asserted as
figures; the wall time of a run against a server that never answers is, generously:
stopping by itself is the behaviour under test."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import assert_one_error, run
from memledger.errors import InvalidInputError
from memledger.eval import _serve_phase, bench_serve
from memledger.eval._serve_phase import STOP_S
from memledger.eval.bench_serve import Phase, ServeBenchConfig, closed_loop, markdown
from memledger.eval.bench_serve import run as bench
from memledger.testing.postgres import PostgresServer

Answer = Callable[[str, str], tuple[int, bytes] | None]
"""(method, path) -> (status, JSON body), or None: read the request, never answer."""


@contextmanager
def loopback_server(answer: Answer, keys: list[str] | None = None) -> Iterator[str]:
    """A tiny HTTP/1.1 server on 127.0.0.1 (keep-alive, Content-Length bodies) in a
    thread; its base URL. ``keys`` gets the bearer token of every request."""
    loop = asyncio.new_event_loop()
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path, _ = head[0].split(" ", 2)
                if keys is not None:
                    keys.extend(
                        line.split("Bearer ", 1)[1]
                        for line in head[1:]
                        if line.lower().startswith("authorization:")
                    )
                length = sum(
                    int(line.split(":", 1)[1])
                    for line in head[1:]
                    if line.lower().startswith("content-length:")
                )
                if length:
                    await reader.readexactly(length)
                got = answer(method, path)
                if got is None:
                    await asyncio.Event().wait()  # holds the connection, never answers
                    return
                status, body = got
                if not status:  # closes the connection without an answer
                    return
                moved = "Location: /healthz\r\n" if 300 <= status < 400 else ""
                writer.write(
                    f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{moved}"
                    f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            handlers.discard(task)
            writer.close()

    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()

    async def stop() -> None:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.sleep(0.05)
        loop.stop()

    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop)
        runner.join(5)
        loop.close()


def stalls_after_seeding() -> Answer:
    """Answers the seeding (200 ``{}``) until the first ``GET /healthz``, the baseline's
    first request; from then on reads every request and never answers."""
    stalled = threading.Event()

    def answer(method: str, path: str) -> tuple[int, bytes] | None:
        if path == "/healthz":
            stalled.set()
        return None if stalled.is_set() else (200, b"{}")

    return answer


def phases_of(report: dict[str, object]) -> list[dict[str, Any]]:
    phases = report["phases"]
    assert isinstance(phases, list)
    return phases


TINY = ServeBenchConfig(
    duration=1.0, concurrency=3, rate=40, subjects=2, turns=1, burst=5, quiet_concurrency=1
)


def test_a_run_against_a_server_that_stops_answering_ends_at_its_duration() -> None:
    with loopback_server(stalls_after_seeding()) as base:
        t0 = time.perf_counter()
        report = bench(TINY, url=base, key="mlk_x.y")
        wall = time.perf_counter() - t0
    phases = phases_of(report)
    baseline, recall, mixed, burst = phases  # no noisy-neighbour phases without --noisy-key
    assert (baseline["phase"], recall["phase"]) == (
        "baseline /healthz, closed loop",
        "recall, closed loop",
    )
    assert (mixed["phase"], burst["phase"]) == (
        "mixed, open loop at 40/s",
        "burst of 5 writes, then the first read",
    )
    # four phases of 1 s, each at most STOP_S (2 s) past it; generous for a busy machine
    assert wall < 4 * (1.0 + STOP_S) + 6, wall
    for phase in phases:
        assert phase["wall_s"] <= 1.0 + STOP_S + 1.0, phase
        assert phase["answered"] == 0 and phase["answered_per_s"] == 0.0, phase
        assert phase["errors"] == 0 and phase["shed"] == 0, phase
        assert phase["unfinished"] == phase["sent"] > 0, phase
        assert phase["latency_ms"] == {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    assert baseline["sent"] == recall["sent"] == 3  # one each of 3 clients, never answered
    assert mixed["sent"] == mixed["scheduled"] == 40 and mixed["offered_per_s"] == 40.0
    assert burst["sent"] == 5  # the read after the burst is never sent
    text = markdown(report)
    assert "| mixed, open loop at 40/s | 40 | 40.0 | 0.0 |" in text
    assert text.endswith("| 0 | 0 | 5 |"), text


def test_requests_past_their_timeout_are_timeouts_and_the_phase_still_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_serve_phase, "REQUEST_TIMEOUT_S", 1.6)
    config = ServeBenchConfig(duration=2.0, concurrency=2, subjects=1, turns=1)
    with loopback_server(lambda method, path: None) as base:
        done = closed_loop(base, "mlk_x.y", config).to_json()
    # each client: a request timed out at 1.6 s, then one sent at 1.6 s whose timeout
    # would come after the phase's deadline and grace (3 s): cut there, unfinished
    assert done["errors_by_kind"] == {"timeout": 2}, done
    assert done["unfinished"] == 2 and done["sent"] == 4 and done["answered"] == 0, done
    assert done["wall_s"] <= 2.0 + STOP_S + 1.0


def test_the_load_phases_spread_their_requests_over_the_tenants_keys() -> None:
    keys = ["mlk_a.1", "mlk_b.2", "mlk_c.3"]
    config = ServeBenchConfig(duration=0.5, concurrency=6, rate=60, subjects=2, turns=1)
    seen: list[str] = []
    with loopback_server(lambda method, path: (200, b"{}"), seen) as base:
        closed = closed_loop(base, keys, config).to_json()
        assert closed["answered"] == len(seen) > 6
        counts = {k: seen.count(k) for k in keys}
        assert set(seen) == set(keys) and min(counts.values()) > 0.2 * len(seen), counts
        seen.clear()
        mixed = bench_serve.open_loop(base, keys, config).to_json()
        assert mixed["answered"] == len(seen) == 30
        assert {k: seen.count(k) for k in keys} == dict.fromkeys(keys, 10)


def test_a_phase_is_cut_at_its_bound_whatever_its_work_does() -> None:
    """The last guard: work stuck where no cancellation reaches it (a blocking call on
    its event loop) is abandoned at the phase's duration plus STOP_S."""
    phase = Phase("stuck")

    async def work() -> None:
        phase.start()
        time.sleep(8)  # blocks the phase's own loop: nothing inside it can stop this
        phase.add("recall", 1.0, 200)

    t0 = time.perf_counter()
    _serve_phase.run_phase(phase, work, seconds=0.5)
    assert time.perf_counter() - t0 < 0.5 + STOP_S + 1.0
    done = phase.to_json()
    assert done["sent"] == done["unfinished"] == 1 and done["seconds"] == 0.5, done


def test_shed_is_told_by_the_service_s_problem_code() -> None:
    def answer(method: str, path: str) -> tuple[int, bytes]:
        return {
            "/healthz": (200, b"{}"),
            "/tenant": (429, b'{"code": "tenant_overloaded"}'),
            "/service": (503, b'{"code": "overloaded"}'),
            "/budget": (503, b'{"code": "budget_exceeded"}'),
            "/limited": (429, b"{}"),
            "/missing": (404, b'{"code": "not_found"}'),
            "/moved": (302, b"{}"),
            "/gone": (0, b""),
        }[path]

    async def statuses(base: str) -> list[tuple[_serve_phase.Status, str]]:
        http = _serve_phase.client(base, None, 2)
        deadline = time.perf_counter() + 10
        try:
            return [
                await _serve_phase.send(http, "GET", path, deadline=deadline)
                for path in (
                    "/healthz",
                    "/tenant",
                    "/service",
                    "/budget",
                    "/limited",
                    "/missing",
                    "/moved",
                    "/gone",
                )
            ]
        finally:
            await _serve_phase.close(http)

    with loopback_server(answer) as base:
        found = asyncio.run(statuses(base))
    assert found == [
        (200, "200"),
        ("shed", "429"),
        ("shed", "503"),
        (503, "503 budget_exceeded"),
        (429, "429"),
        (404, "404 not_found"),
        (302, "302"),  # counted as it came, not followed
        ("connection", "ServerDisconnectedError"),
    ]


def test_a_phase_accounts_for_every_request_it_sent() -> None:
    phase = Phase("p", seconds=2.0)
    outcomes: list[tuple[str, _serve_phase.Status]] = [
        ("recall", 200),
        ("recall", 201),
        ("recall", "shed"),
        ("recall", 503),
        ("ingest", 404),
        ("ingest", 302),
        ("ingest", "timeout"),
        ("ingest", "connection"),
        ("ingest", "unfinished"),
    ]
    for op, status in outcomes:
        phase.start()
        phase.add(op, 5.0, status)
    phase.start()  # sent, never given an outcome: cut at the deadline
    phase.close()
    phase.add("recall", 1.0, 200)  # after the cut: not counted
    done = phase.to_json()
    assert done["sent"] == 10 and done["answered"] == 2 and done["shed"] == 1
    assert done["errors_by_kind"] == {
        "3xx": 1,
        "4xx": 1,
        "5xx": 1,
        "timeout": 1,
        "connection": 1,
    }
    assert done["errors"] == 5 and done["unfinished"] == 2
    assert done["offered_per_s"] == 5.0 and done["answered_per_s"] == 1.0
    assert done["error_details"]["ingest 404"] == 1
    assert done["by_operation"] == {
        "recall": {"answered": 2, "shed": 1, "p50": 5.0, "p95": 5.0, "p99": 5.0, "max": 5.0}
    }


def test_the_cli_reports_the_machine_and_every_phase_in_text_and_json(tmp_path: Path) -> None:
    out = tmp_path / "serve.json"
    with loopback_server(stalls_after_seeding()) as base:
        result = run(
            [
                "bench", "serve", "--url", base, "--key", "mlk_x.y", "--duration", "0.5",
                "--concurrency", "2", "--rate", "20", "--subjects", "1", "--burst", "2",
                "--json", str(out),
            ]
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "machine: " in result.output and " cores" in result.output
    assert "| phase | sent | offered/s | answered/s |" in result.output
    report = json.loads(out.read_text())
    machine = report["machine"]
    assert machine["cores"] >= 1 and machine["python"] and machine["cpu"]
    assert machine["memory"].endswith(" GiB")
    assert len(machine["commit"]) >= 7  # the tests run from a git checkout
    assert [p["unfinished"] for p in report["phases"]] == [2, 2, 10, 2]


def test_the_serve_benchmark_drives_a_child_server_without_errors() -> None:
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
        threads=2,
    )
    report = bench(config)
    assert ", 2 threads, 4 tenants)" in str(report["server"])
    phases = phases_of(report)
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
        assert phase["answered"] == phase["sent"] > 0 and phase["errors"] == 0, phase
        assert phase["shed"] == 0 and phase["unfinished"] == 0, phase
        lat = phase["latency_ms"]
        assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    # the flood of 6 heavy contexts at once over a cap of 2 is shed, the quiet tenant is not
    assert flood["shed"] > 0 and flood["errors"] == 0, flood
    assert flood["answered_per_s"] > 0
    assert set(phases[1]["by_operation"]) == {"recall"}
    assert phases[2]["sent"] == 10  # every scheduled request was sent and counted
    assert set(phases[-1]["by_operation"]) == {"ingest", "first read"}
    assert phases[-1]["by_operation"]["first read"]["answered"] == 1
    text = markdown(report)
    assert "| recall, closed loop |" in text and "the first read after it" in text
    assert text.startswith("machine: ") and "cores" in text
    assert json.loads(json.dumps(report)) == report  # what --json writes
    # the child server's resident memory: after seeding, in every phase, at its peak
    held = report["server_memory"]
    seeded = held["after_seeding"]["end_mb"]
    assert seeded > 30  # a Python process that imported the service
    assert held["peak_mb"] >= max(p["server_memory_mb"]["peak_mb"] for p in phases_of(report))
    for phase in phases_of(report):
        memory = phase["server_memory_mb"]
        assert memory["peak_mb"] >= memory["end_mb"] > 30, phase
    assert held["processes"] == len(held["process_peaks_mb"]) >= 1
    assert "| server MiB |" in text
    assert f"{seeded:,} MiB after seeding, peak {held['peak_mb']:,} MiB" in text


def test_a_server_that_does_not_take_the_seeding_fails_the_run_with_one_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench_serve, "SEED_S", 1.0)
    args = ["bench", "serve", "--key", "mlk_x.y", "--duration", "0.5", "--subjects", "1"]
    with loopback_server(lambda method, path: None) as base:
        t0 = time.perf_counter()
        result = run([*args, "--url", base])
        assert time.perf_counter() - t0 < 10
    assert_one_error(result, "did not answer the seeding within 1 s")
    with loopback_server(lambda method, path: (401, b'{"code": "unauthenticated"}')) as base:
        assert_one_error(run([*args, "--url", base]), "seeding the server at")


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
    assert_one_error(run(["bench", "serve", "--processes", "0"]), "--processes")
    assert_one_error(run(["bench", "serve", "--processes", "1,1"]), "distinct")
    assert_one_error(run(["bench", "serve", "--store", "sqlite:///x.db"]), "postgresql://")
    url = ["--url", "http://127.0.0.1:1", "--key", "mlk_x.y"]
    for extra in (
        ["--processes", "2"],
        ["--store", "postgresql://127.0.0.1/x"],
        ["--tenants", "2"],
        ["--threads", "2"],
        ["--max-in-flight", "8"],
    ):
        assert_one_error(run(["bench", "serve", *url, *extra]), "not --url")
    with pytest.raises(InvalidInputError, match="processes must be a whole number 1-64"):
        ServeBenchConfig(processes=0)
    with pytest.raises(InvalidInputError, match="tenants must be a whole number 1-64"):
        ServeBenchConfig(tenants=65)
    assert_one_error(run(["bench", "serve", "--tenants", "0"]), "tenants")
    assert_one_error(run(["bench", "serve", "--threads", "0"]), "threads")
    assert_one_error(run(["bench", "serve", "--max-in-flight", "0"]), "max_in_flight")
    with pytest.raises(InvalidInputError, match="max_in_flight must be a whole number 1-4096"):
        ServeBenchConfig(max_in_flight=True)
    assert not list(tmp_path.iterdir())


def test_the_serve_benchmark_gives_the_child_server_its_in_flight_cap() -> None:
    """With at most one request in flight, four clients of the closed loop are shed (the
    same load under serve's default is answered whole, above)."""
    config = replace(
        TINY,
        duration=0.5,
        concurrency=4,
        noisy_concurrency=2,
        material_chars=5_000,
        tenants=1,
        max_in_flight=1,
    )
    report = bench(config)
    assert "at most 1 in flight, 1 tenant)" in str(report["server"])
    recall = phases_of(report)[1]
    assert recall["phase"] == "recall, closed loop"
    assert recall["shed"] > 0 and recall["answered"] > 0 and recall["errors"] == 0, recall


def test_the_serve_benchmark_runs_each_process_count_on_each_store_side_by_side(
    postgres: PostgresServer,
) -> None:
    from memledger.eval._serve_compare import compare

    config = replace(
        TINY, duration=0.5, noisy_concurrency=2, material_chars=5_000, quiet_concurrency=1
    )
    report = compare(config, [1, 2], store=postgres.url())
    servers = [r["server"] for r in report["runs"]]
    assert servers == [
        "child memledger serve (SQLite, 1 request process, 4 tenants)",
        "child memledger serve (SQLite, 2 request processes, 4 tenants)",
        "child memledger serve (PostgreSQL, 1 request process, 4 tenants)",
        "child memledger serve (PostgreSQL, 2 request processes, 4 tenants)",
    ]
    for run_report in report["runs"]:
        assert run_report["config"]["processes"] in (1, 2)
        recall = next(p for p in phases_of(run_report) if p["phase"] == "recall, closed loop")
        assert recall["answered"] == recall["sent"] > 0 and recall["errors"] == 0, recall
    text = markdown(report)
    assert text.startswith("machine: ")
    table = [line for line in text.splitlines() if line.startswith("| child memledger serve")]
    assert [line.split(" | ")[0] for line in table] == [f"| {s}" for s in servers]
    assert text.count("| recall, closed loop |") == 4  # each run's phases follow
    assert json.loads(json.dumps(report)) == report
    for line, run_report in zip(table, report["runs"], strict=True):
        held = run_report["server_memory"]
        assert line.endswith(f" | {held['peak_mb']:,} |")
        # one request process is the whole server; two are counted with the worker's
        if run_report["config"]["processes"] == 1:
            assert held["processes"] == 1
        else:
            assert held["processes"] >= 3 and sorted(held["process_peaks_mb"])[-3] > 30
    assert text.count("server memory (resident, 1 process, ") == 2
    assert text.count("server memory (resident") == 4
