"""``memledger bench write``: write-path throughput and extraction lag, on SQLite or
on a PostgreSQL server (``server``: each run in a scratch database of its own).

Throughput: ingest N synthetic turns (one transaction each, as an API would),
then drain the extraction queue with the worker; events/s for each phase and
end to end. Baseline in the same run: the same N turns as plain one-row
INSERTs into a bare table of the same backend, one transaction each, with the
same durability settings (the floor any store pays).

Lag: a producer ingests at a fixed rate while a worker thread drains; the lag
of an event is the time from its ``ingest`` returning to its commit by the
worker.

Prefill (``prefill=N``): each throughput run starts from a store that already
holds about N open records (``bench recall``'s population, in four tenants of
their own), so the rate is that of a store of that size. It is fed once through
the write path as a SQLite file (on tmpfs when there is room), then copied for
each run: the file, or into the scratch database (``copy-store``).
"""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from memledger.errors import InvalidInputError
from memledger.eval import _scratch
from memledger.eval.bench_recall import open_records
from memledger.eval.synthetic import TENANTS
from memledger.eval.synthetic import events as synthetic_events
from memledger.memory import Memory
from memledger.ports import Extractor
from memledger.store import open_store
from memledger.store.copy import copy_store
from memledger.store.sqlite import SQLiteStore
from memledger.write.worker import Worker, WorkerSettings

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Throughput:
    events: int
    workers: int
    prefill_records: int
    """Open records the store held before the run (0: an empty store)."""
    records_after: int
    """Open records it held after the run, every tenant's."""
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


def baseline_inserts(count: int, folder: Path, *, server: str | None = None) -> float:
    """Plain one-row INSERTs, one transaction each: SQLite in WAL with synchronous=FULL,
    or PostgreSQL with the server's own settings."""
    if server is not None:
        return _baseline_postgres(count, server)
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


def _baseline_postgres(count: int, server: str) -> float:
    import psycopg

    turns = [(e.event_id, e.text) for e in synthetic_events(count)]
    with _scratch.scratch_database(server) as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (id TEXT PRIMARY KEY, body TEXT NOT NULL)")
        started = time.perf_counter()
        for row in turns:
            with conn.transaction():
                conn.execute("INSERT INTO events VALUES (%s, %s)", row)
        return count / (time.perf_counter() - started)


@contextmanager
def _store(
    folder: Path, name: str, server: str | None, template: Path | str | None = None
) -> Iterator[str]:
    """The URL of a new store: a SQLite file in ``folder``, or a scratch database; a
    copy of ``template`` when given (a SQLite store, or on the server a database made
    from one by :func:`_server_template`, cloned at file level: much faster than
    copying rows again for every run)."""
    if server is None:
        path = folder / f"{name}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
            if template is not None and Path(f"{template}{suffix}").exists():
                shutil.copy(f"{template}{suffix}", f"{path}{suffix}")
        yield f"sqlite:///{path}"
        return
    if isinstance(template, str):
        with _scratch.scratch_database(server, template=template) as url:
            yield url
        return
    with _scratch.scratch_database(server) as url:
        if template is not None:
            _copy_into(template, url)
        yield url


def _copy_into(template: Path, url: str) -> None:
    source, target = SQLiteStore(template), open_store(url)
    try:
        copy_store(source, target)
    finally:
        source.close()
        target.close()


@contextmanager
def _server_template(server: str | None, template: Path | None) -> Iterator[Path | str | None]:
    """On a server, the SQLite ``template`` copied once into a database there (its URL),
    for the runs to clone; else ``template`` itself."""
    if server is None or template is None:
        yield template
        return
    with _scratch.scratch_database(server, prefix="memledger_prefill") as url:
        _copy_into(template, url)
        yield url


def prefilled(records: int, folder: Path, *, progress: Progress | None = None) -> Path:
    """A SQLite store in ``folder`` holding about ``records`` open records (``bench
    recall``'s population: a tenant of that many, three of a tenth each), fed through
    the write path."""
    from memledger.eval import bench_recall

    path, _ = bench_recall.build_store(records, folder, progress=progress)
    return path


def _drain(url: str) -> None:
    """A worker process: drain the queue with the rule extractor (``spawn``-safe)."""
    from memledger.write.extract.rules import RuleExtractor

    memory = Memory(open_store(url))
    memory.process(extractor=RuleExtractor())
    memory.close()


def throughput(
    count: int,
    extractor: Extractor,
    *,
    folder: Path,
    workers: int = 1,
    progress: Progress | None = None,
    server: str | None = None,
    template: Path | str | None = None,
    prefill_records: int = 0,
) -> Throughput:
    """Ingest ``count`` turns, then drain them with ``workers`` worker processes
    (``workers=1``: this thread, with progress), into a new store or a copy of
    ``template`` (which holds ``prefill_records``)."""
    with _store(folder, f"write-{count}-{workers}", server, template) as url:
        result = _throughput(
            url, count, extractor, folder=folder, workers=workers, progress=progress, server=server
        )
    return replace(result, prefill_records=prefill_records)


def _throughput(
    url: str,
    count: int,
    extractor: Extractor,
    *,
    folder: Path,
    workers: int,
    progress: Progress | None,
    server: str | None,
) -> Throughput:
    memory = Memory(open_store(url))
    turns = list(synthetic_events(count))
    started = time.perf_counter()
    for n, turn in enumerate(turns, start=1):
        memory.ingest(turn)
        if progress is not None and n % 500 == 0:
            progress("ingest", n, count)
    ingested = time.perf_counter()
    outcomes: dict[str, int] = {}
    if workers == 1:
        worker = Worker(memory.writing, extractor, settings=WorkerSettings())
        done = 0
        while (report := worker.drain(limit=512)).jobs:
            for outcome, n in report.outcomes.items():
                outcomes[outcome] = outcomes.get(outcome, 0) + n
            done += report.jobs
            if progress is not None:
                progress("extract", done, count)
        finished = time.perf_counter()
    else:
        context = multiprocessing.get_context("spawn")
        procs = [context.Process(target=_drain, args=(url,)) for _ in range(workers)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
        if any(proc.exitcode != 0 for proc in procs):
            raise RuntimeError(f"a worker process failed: {[p.exitcode for p in procs]}")
        finished = time.perf_counter()  # counting what they did is not their time
        outcomes = {
            "done": sum(
                1
                for t in TENANTS
                for j in memory.jobs(tenant=t, open_only=False)
                if j.status == "done"
            )
        }
    pending = sum(len(memory.jobs(tenant=t)) for t in TENANTS)
    after = sum(open_records(memory).values())
    memory.close()
    if pending:
        raise RuntimeError(f"{pending} jobs were left undone")
    return Throughput(
        events=count,
        workers=workers,
        prefill_records=0,
        records_after=after,
        ingest_per_s=count / (ingested - started),
        process_per_s=count / (finished - ingested),
        end_to_end_per_s=count / (finished - started),
        baseline_insert_per_s=baseline_inserts(count, folder, server=server),
        outcomes=dict(sorted(outcomes.items())),
    )


def lag(
    extractor: Extractor,
    *,
    rate: float,
    seconds: float,
    folder: Path,
    progress: Progress | None = None,
    server: str | None = None,
) -> Lag:
    """Ingest at ``rate`` events/s for ``seconds`` while a worker thread drains."""
    with _store(folder, "lag", server) as url:
        return _lag(url, extractor, rate=rate, seconds=seconds, progress=progress)


def _lag(
    url: str, extractor: Extractor, *, rate: float, seconds: float, progress: Progress | None
) -> Lag:
    memory = Memory(open_store(url))
    count = int(rate * seconds)
    turns = list(synthetic_events(count, seed=11))
    ingested_at: dict[str, float] = {}
    lags: list[float] = []
    stop = threading.Event()
    worker = Worker(memory.writing, extractor, settings=WorkerSettings(batch=16))

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
    server: str | None = None,
    prefill: int = 0,
    prefill_store: Path | None = None,
) -> tuple[list[Throughput], Lag]:
    """Every size with every worker count, then the lag run, in a scratch folder (or in
    scratch databases on the PostgreSQL ``server``); with ``prefill`` each throughput run
    starts from a store of about that many records (the lag run from an empty one)."""
    if prefill < 0:
        raise InvalidInputError(f"prefill must be >= 0, got {prefill!r}")
    if prefill and prefill_store is not None:
        raise InvalidInputError("prefill a store of N records or give one, not both")
    with tempfile.TemporaryDirectory(prefix="memledger-bench-") as scratch:
        where = folder or Path(scratch)
        template: Path | None = None
        held = 0
        if prefill:
            template = prefilled(prefill, Path(scratch) / "prefill", progress=progress)
        elif prefill_store is not None:
            template = prefill_store
        if template is not None:
            held = _open_records(template)  # opening it migrates it to this schema
        with _server_template(server, template) as each:
            results = [
                throughput(
                    n,
                    extractor,
                    folder=where,
                    workers=w,
                    progress=progress,
                    server=server,
                    template=each,
                    prefill_records=held,
                )
                for n in sizes
                for w in workers
            ]
        latency = lag(
            extractor, rate=rate, seconds=seconds, folder=where, progress=progress, server=server
        )
    return results, latency


def _open_records(path: Path) -> int:
    """Open records in the SQLite store at ``path``, every tenant's."""
    store = SQLiteStore(path)
    try:
        return sum(open_records(Memory(store)).values())
    finally:
        store.close()
