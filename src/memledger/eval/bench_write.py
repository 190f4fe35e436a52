"""``memledger bench write``: write-path throughput and extraction lag on SQLite.

Throughput: ingest N synthetic turns (one transaction each, as an API would),
then drain the extraction queue with the worker; events/s for each phase and
end to end. Baseline in the same run: the same N turns as plain one-row
INSERTs into a bare SQLite table, one transaction each, with the same
durability settings (the floor any store pays).

Lag: a producer ingests at a fixed rate while a worker thread drains; the lag
of an event is the time from its ``ingest`` returning to its commit by the
worker.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memledger.eval.synthetic import TENANTS
from memledger.eval.synthetic import events as synthetic_events
from memledger.memory import Memory
from memledger.ports import Extractor
from memledger.store.sqlite import SQLiteStore
from memledger.write.worker import Worker, WorkerSettings

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Throughput:
    events: int
    workers: int
    ingest_per_s: float
    process_per_s: float
    end_to_end_per_s: float
    baseline_insert_per_s: float
    outcomes: dict[str, int]


@dataclass(frozen=True, slots=True)
class Lag:
    rate_per_s: float
    events: int
    p50_ms: float
    p95_ms: float
    max_ms: float


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def baseline_inserts(count: int, folder: Path) -> float:
    """Plain one-row INSERTs, one transaction each, WAL + synchronous=FULL."""
    path = folder / f"baseline-{count}.db"
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE events (id TEXT PRIMARY KEY, body TEXT NOT NULL)")
    turns = [(e.event_id, e.text) for e in synthetic_events(count)]
    started = time.perf_counter()
    for row in turns:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO events VALUES (?, ?)", row)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return count / elapsed


def _drain(path: str) -> None:
    """A worker process: drain the queue with the rule extractor (``spawn``-safe)."""
    from memledger.write.extract.rules import RuleExtractor

    memory = Memory(SQLiteStore(Path(path)))
    memory.process(extractor=RuleExtractor())
    memory.close()


def throughput(
    count: int,
    extractor: Extractor,
    *,
    folder: Path,
    workers: int = 1,
    progress: Progress | None = None,
) -> Throughput:
    """Ingest ``count`` turns, then drain them with ``workers`` worker processes
    (``workers=1``: this thread, with progress)."""
    path = folder / f"write-{count}-{workers}.db"
    memory = Memory(SQLiteStore(path))
    turns = list(synthetic_events(count))
    started = time.perf_counter()
    for n, turn in enumerate(turns, start=1):
        memory.ingest(turn)
        if progress is not None and n % 500 == 0:
            progress("ingest", n, count)
    ingested = time.perf_counter()
    outcomes: dict[str, int] = {}
    if workers == 1:
        worker = Worker(memory, extractor, settings=WorkerSettings())
        done = 0
        while (report := worker.drain(limit=512)).jobs:
            for outcome, n in report.outcomes.items():
                outcomes[outcome] = outcomes.get(outcome, 0) + n
            done += report.jobs
            if progress is not None:
                progress("extract", done, count)
    else:
        context = multiprocessing.get_context("spawn")
        procs = [context.Process(target=_drain, args=(str(path),)) for _ in range(workers)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
        if any(proc.exitcode != 0 for proc in procs):
            raise RuntimeError(f"a worker process failed: {[p.exitcode for p in procs]}")
        outcomes = {
            "done": sum(
                1
                for t in TENANTS
                for j in memory.jobs(tenant=t, open_only=False)
                if j.status == "done"
            )
        }
    finished = time.perf_counter()
    pending = sum(len(memory.jobs(tenant=t)) for t in TENANTS)
    memory.close()
    if pending:
        raise RuntimeError(f"{pending} jobs were left undone")
    return Throughput(
        events=count,
        workers=workers,
        ingest_per_s=count / (ingested - started),
        process_per_s=count / (finished - ingested),
        end_to_end_per_s=count / (finished - started),
        baseline_insert_per_s=baseline_inserts(count, folder),
        outcomes=dict(sorted(outcomes.items())),
    )


def lag(
    extractor: Extractor,
    *,
    rate: float,
    seconds: float,
    folder: Path,
    progress: Progress | None = None,
) -> Lag:
    """Ingest at ``rate`` events/s for ``seconds`` while a worker thread drains."""
    memory = Memory(SQLiteStore(folder / "lag.db"))
    count = int(rate * seconds)
    turns = list(synthetic_events(count, seed=11))
    ingested_at: dict[str, float] = {}
    lags: list[float] = []
    stop = threading.Event()
    worker = Worker(memory, extractor, settings=WorkerSettings(batch=16))

    def drain() -> None:
        while not stop.is_set() or len(lags) < count:
            results = worker.run_batch()
            now = time.perf_counter()
            for result in results:
                lags.append(now - ingested_at[result.job.event_id])
            if not results:
                if stop.is_set() and len(lags) >= count:
                    break
                time.sleep(0.002)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    started = time.perf_counter()
    for n, turn in enumerate(turns):
        due = started + n / rate
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        ingested_at[turn.event_id] = time.perf_counter()  # before: the worker may be quicker
        memory.ingest(turn)
        if progress is not None and (n + 1) % 100 == 0:
            progress("lag", n + 1, count)
    stop.set()
    thread.join(timeout=seconds + 120)
    memory.close()
    ms = [v * 1000 for v in lags]
    return Lag(
        rate_per_s=rate,
        events=len(ms),
        p50_ms=_quantile(ms, 0.5),
        p95_ms=_quantile(ms, 0.95),
        max_ms=max(ms, default=0.0),
    )


def run(
    sizes: Sequence[int],
    extractor: Extractor,
    *,
    rate: float = 100.0,
    seconds: float = 20.0,
    workers: Sequence[int] = (1, 2),
    folder: Path | None = None,
    progress: Progress | None = None,
) -> tuple[list[Throughput], Lag]:
    """Every size with every worker count, then the lag run, in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="memledger-bench-") as scratch:
        where = folder or Path(scratch)
        results = [
            throughput(n, extractor, folder=where, workers=w, progress=progress)
            for n in sizes
            for w in workers
        ]
        latency = lag(extractor, rate=rate, seconds=seconds, folder=where, progress=progress)
    return results, latency
