"""``memledger bench serve``: load on the HTTP API from a second process, on loopback.

The benchmark starts ``memledger serve`` as a child process on a scratch store and a
free loopback port (or drives a server you name with ``--url`` and ``--key``), seeds
it with subjects and memories through the API and warms it up (the first recall
loads the index and the embedding model), then runs its phases from this process:

* **baseline, closed loop**: ``GET /healthz`` (no key, no store) the same way: what
  the HTTP stack and this client give on the machine, the ceiling for the rest.
* **recall, closed loop**: ``concurrency`` clients each send a recall as soon as the
  previous one answered, for ``duration`` seconds: the most the server gives.
* **mixed, open loop**: requests are *scheduled* at ``rate`` per second (``recall_share``
  recalls, the rest ingests of new chat turns that the server's worker extracts),
  and each latency is counted from its scheduled moment, so a server that falls
  behind shows it in the tail instead of hiding it (no coordinated omission).
* **noisy neighbour** and **burst then read** (:mod:`memledger.eval._serve_tenants`):
  a quiet tenant's recalls alone and beside another tenant's flood of large-material
  contexts; a burst of writes, then the first read's latency.

Each phase reports what it sent and what became of it (:mod:`memledger.eval._serve_phase`):
offered and answered (2xx) rates, p50/p95/p99/max of the answered latencies in ms,
errors by kind, requests shed and requests unfinished at its deadline, and of a child
server its resident memory (:mod:`memledger.eval._serve_memory`); the report names the
machine (:mod:`memledger.eval._serve_report`). Traffic goes to loopback
only; every request has a timeout bounded by the time its phase has left, every
connection pool a bound, and every phase ends at most
:data:`~memledger.eval._serve_phase.STOP_S` past its
duration, whatever the server does: a run takes the sum of its phases, the seeding
(at most :data:`SEED_S`) and the child server's start and stop.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memledger.errors import InvalidInputError
from memledger.eval._serve_memory import TreeMemory
from memledger.eval._serve_phase import (
    GRACE_S,
    Phase,
    Status,
    client,
    close,
    in_thread,
    run_phase,
    send,
    wait_until,
)
from memledger.eval._serve_report import markdown, report
from memledger.eval.machine import describe

__all__ = ["Phase", "ServeBenchConfig", "ServeBenchError", "child_server", "markdown", "run"]

Progress = Callable[[str, int, int], None]

_CITIES = ("Lisbon", "Porto", "Berlin", "Delhi", "Osaka", "Quito", "Oslo", "Lima")
_TOOLS = ("PyTorch", "JAX", "Rust", "Go", "Excel", "Figma")
_QUESTIONS = (
    "where does the user live?",
    "which tools does the user work with?",
    "when should the digest be delivered?",
    "what did I say about my trip?",
    "what does the user prefer for meetings?",
)
_URL_LINE = re.compile(r"API\s+(http://\S+)/v1")
_PROCESSES_LINE = re.compile(r"^\s+processes\s+(\d+) request processes")


MAX_IN_FLIGHT = 4096
"""The largest ``max_in_flight`` the benchmark gives a child server."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeBenchConfig:
    duration: float = 10.0
    """Seconds of each phase."""
    concurrency: int = 16
    """Clients of the closed-loop recall phase."""
    rate: float = 500.0
    """Requests per second the mixed phase schedules."""
    recall_share: float = 0.9
    subjects: int = 50
    turns: int = 20
    """Seeded chat turns per subject."""
    quiet_concurrency: int = 2
    """Clients of the quiet tenant's recalls in the noisy-neighbour phases."""
    noisy_concurrency: int = 32
    """Clients of the noisy tenant's flood of context requests."""
    material_chars: int = 200_000
    """Characters of material in each of the flood's context requests."""
    burst: int = 200
    """Writes of the burst-then-read phase."""
    serve_options: tuple[str, ...] = ()
    """More options of the child ``memledger serve`` (``--tenant-in-flight 2`` ...)."""
    processes: int = 1
    """Request processes of the child ``memledger serve`` (``--processes``)."""
    threads: int | None = None
    """Blocking work each request process of the child server runs at once
    (``serve --threads``); ``None``: serve's default, no cap."""
    max_in_flight: int | None = None
    """API requests each request process of the child server admits at once, every
    tenant together (``serve --max-in-flight``); ``None``: serve's default."""
    tenants: int = 4
    """Tenants of a child server the closed-loop recall and mixed phases spread their
    clients and requests over, each with its own key and seeded subjects: a service for
    many agents, not one tenant held to its own share (``serve --tenant-in-flight``)."""

    def __post_init__(self) -> None:
        if not 0 < self.duration <= 600:
            raise InvalidInputError(f"duration must be in (0, 600] seconds, got {self.duration}")
        if not 1 <= self.concurrency <= 256:
            raise InvalidInputError(f"concurrency must be 1-256, got {self.concurrency}")
        if not 0 < self.rate <= 20_000:
            raise InvalidInputError(f"rate must be in (0, 20000] per second, got {self.rate}")
        if not 0 <= self.recall_share <= 1:
            raise InvalidInputError(f"recall_share must be in [0, 1], got {self.recall_share}")
        if self.subjects < 1 or self.turns < 1:
            raise InvalidInputError("subjects and turns must be at least 1")
        optional = {"threads", "max_in_flight"}  # None: serve's default
        for name, most in (
            ("processes", 64),
            ("tenants", 64),
            ("quiet_concurrency", 64),
            ("noisy_concurrency", 256),
            ("material_chars", 2_000_000),
            ("burst", 10_000),
            ("threads", 256),
            ("max_in_flight", MAX_IN_FLIGHT),
        ):
            value = getattr(self, name)
            if value is None and name in optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise InvalidInputError(f"{name} must be a whole number 1-{most}, got {value!r}")


# -- the server under test -----------------------------------------------------------------


NOISY_TENANT = "noisy"


@contextmanager
def child_server(
    folder: Path, options: Sequence[str] = (), *, store: str | None = None, tenants: int = 1
) -> Iterator[tuple[str, tuple[str, ...], str, int, int]]:
    """``memledger serve`` on a scratch store (a SQLite file in ``folder``, else the
    database ``store``) and a free loopback port: (base URL, the keys of ``tenants``
    tenants: the admin key of ``bench`` first, then write keys of ``bench-2``...; a write
    key of tenant :data:`NOISY_TENANT`, the request processes it announced, its pid)."""
    from memledger.memory import Memory

    key_file = folder / "admin-key"
    url = store or f"sqlite:///{folder / 'bench.db'}"
    with Memory.open(url) as memory:
        _, noisy = memory.create_key(NOISY_TENANT, "flood", role="write")
        more = [
            memory.create_key(f"bench-{n}", "load", role="write")[1] for n in range(2, tenants + 1)
        ]
    child = start_serve(url, "--tenant", "bench", "--key-file", str(key_file), *options)
    try:
        base, processes = _wait_for_url(child)
        admin = key_file.read_text(encoding="utf-8").strip()
        yield base, (admin, *more), noisy, processes, child.pid
    finally:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def start_serve(url: str, *options: str, group: bool = False) -> subprocess.Popen[str]:
    """``memledger serve --db url --port 0 ...`` as a child process of this Python, its
    output (unbuffered) on a pipe; ``group``: in a process group of its own, as a
    terminal starts a command."""
    return subprocess.Popen(
        [sys.executable, "-m", "memledger.cli", "serve", "--db", url, "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        process_group=0 if group else None,
    )


def _wait_for_url(child: subprocess.Popen[str], timeout: float = 120.0) -> tuple[str, int]:
    """The base URL the child announced, and its request processes (its banner's
    ``processes`` line, else 1), read up to the banner's last line."""
    assert child.stdout is not None
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    base, processes = None, 1
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        seen.append(line)
        if (found := _URL_LINE.search(line)) is not None:
            base = found.group(1)
        elif (count := _PROCESSES_LINE.search(line)) is not None:
            processes = int(count.group(1))
        elif base is not None and line.startswith("stop with"):
            return base, processes
    raise ServeBenchError("memledger serve did not start:\n" + "".join(seen[-20:]))


# -- traffic -----------------------------------------------------------------------------


def _turn(rng: random.Random, subject: str, n: int) -> dict[str, object]:
    text = rng.choice(
        (
            f"I live in {rng.choice(_CITIES)} these days.",
            f"I switched to {rng.choice(_TOOLS)} for work.",
            "Please send my digest on Fridays.",
            f"My trip to {rng.choice(_CITIES)} was great, the food was the best part.",
            "I prefer short meetings in the morning.",
        )
    )
    return {
        "event_id": f"{subject}-{n}-{rng.getrandbits(40):x}",
        "subject": subject,
        "actor": {"id": subject},
        "channel": "chat",
        "occurred_at": "2026-11-01T09:00:00Z",
        "text": text,
    }


SEED_S = 300.0
"""Seconds seeding and warming up may take at most (a server that stops answering
then fails the run with an error)."""


async def _seed(
    base: str, keys: Sequence[str], config: ServeBenchConfig, progress: Progress | None
) -> None:
    """The same subjects and turns under each key's tenant, then a warm-up."""
    import httpx

    for t, key in enumerate(keys):
        rng = random.Random(7)
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(
            base_url=base, headers=headers, timeout=60, trust_env=False
        ) as client:
            for s in range(config.subjects):
                subject = f"user-{s}"
                batch = [_turn(rng, subject, n) for n in range(config.turns)]
                response = await client.post("/v1/events/batch", json=batch)
                response.raise_for_status()
                if progress is not None:
                    progress("seed", t * config.subjects + s + 1, len(keys) * config.subjects)
            response = await client.post("/v1/process", json={})
            response.raise_for_status()
            for question in _QUESTIONS * 4:  # warm up: the index and the embedding model load
                response = await client.post("/v1/recall", json={"query": question, "k": 10})
                response.raise_for_status()


class ServeBenchError(RuntimeError):
    """The server under test did not start, or did not take the seeding."""


def _seeded(
    base: str, keys: Sequence[str], config: ServeBenchConfig, progress: Progress | None
) -> None:
    """Seed within :data:`SEED_S`, else a :class:`ServeBenchError`."""
    try:
        ended = in_thread(
            lambda: _seed(base, keys, config, progress), seconds=SEED_S, name="bench serve: seed"
        )
    except Exception as exc:
        raise ServeBenchError(f"seeding the server at {base} failed: {exc}") from exc
    if not ended:
        raise ServeBenchError(
            f"the server at {base} did not answer the seeding within {SEED_S:g} s"
        )


async def _request(
    client: object,
    rng: random.Random,
    config: ServeBenchConfig,
    *,
    recall_only: bool,
    deadline: float,
) -> tuple[str, Status, str]:
    subject = f"user-{rng.randrange(config.subjects)}"
    if recall_only or rng.random() < config.recall_share:
        body = {"query": rng.choice(_QUESTIONS), "subject": subject, "k": 10}
        return "recall", *await send(client, "POST", "/v1/recall", body, deadline=deadline)
    turn = _turn(rng, subject, rng.getrandbits(30))
    return "ingest", *await send(client, "POST", "/v1/events", turn, deadline=deadline)


def closed_loop(
    base: str,
    key: str | Sequence[str],
    config: ServeBenchConfig,
    *,
    baseline: bool = False,
    concurrency: int | None = None,
    name: str | None = None,
) -> Phase:
    """``concurrency`` clients (``config.concurrency``) each sending a request as soon as
    the last one ended, until ``config.duration``: ``/healthz`` for the ``baseline``,
    else recalls; client ``i`` with the ``i``-th of the keys, in turn."""
    default = "baseline /healthz, closed loop" if baseline else "recall, closed loop"
    phase = Phase(name or default, seconds=config.duration)
    clients = config.concurrency if concurrency is None else concurrency
    keys = [key] if isinstance(key, str) else list(key)

    async def work() -> None:
        https = [client(base, k, clients) for k in keys]
        try:
            end = time.perf_counter() + config.duration
            cut = end + GRACE_S

            async def one(seed: int) -> None:
                rng = random.Random(seed)
                http = https[seed % len(https)]
                while time.perf_counter() < end:
                    t0 = time.perf_counter()
                    phase.start()
                    if baseline:
                        op = "healthz"
                        status, detail = await send(http, "GET", "/healthz", deadline=cut)
                    else:
                        op, status, detail = await _request(
                            http, rng, config, recall_only=True, deadline=cut
                        )
                    phase.add(op, (time.perf_counter() - t0) * 1000, status, detail)

            tasks = [asyncio.create_task(one(i)) for i in range(clients)]
            await wait_until(tasks, phase, deadline=cut)
        finally:
            for http in https:
                await close(http)

    return run_phase(phase, work, seconds=config.duration)


OPEN_LOOP_CONNECTIONS = 64


def open_loop(base: str, key: str | Sequence[str], config: ServeBenchConfig) -> Phase:
    """Requests scheduled at ``config.rate`` for ``config.duration``, each latency
    counted from its scheduled moment; request ``i`` with the ``i``-th of the keys, in
    turn."""
    phase = Phase(f"mixed, open loop at {config.rate:g}/s", seconds=config.duration)
    total = max(1, int(config.rate * config.duration))
    phase.scheduled = total

    keys = [key] if isinstance(key, str) else list(key)

    async def work() -> None:
        share = max(1, OPEN_LOOP_CONNECTIONS // len(keys))
        https = [client(base, k, share) for k in keys]
        try:
            start = time.perf_counter()
            end = start + config.duration
            rng = random.Random(11)

            async def one(scheduled: float, seed: int, http: object) -> None:
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                if time.perf_counter() >= end:
                    return  # this process fell behind its own schedule: not sent
                phase.start()
                op, status, detail = await _request(
                    http, random.Random(seed), config, recall_only=False, deadline=end + GRACE_S
                )
                phase.add(op, (time.perf_counter() - scheduled) * 1000, status, detail)

            tasks = [
                asyncio.create_task(
                    one(start + i / config.rate, rng.getrandbits(32), https[i % len(https)])
                )
                for i in range(total)
            ]
            await wait_until(tasks, phase, deadline=end + GRACE_S)
        finally:
            for http in https:
                await close(http)

    return run_phase(phase, work, seconds=config.duration)


def run(
    config: ServeBenchConfig,
    *,
    url: str | None = None,
    key: str | None = None,
    noisy_key: str | None = None,
    store: str | None = None,
    progress: Progress | None = None,
) -> dict[str, object]:
    """Seed, then every phase; the report as JSON data. With ``url``, the noisy-neighbour
    phases run only given ``noisy_key`` (a key of another tenant than ``key``'s), and
    all the load is ``key``'s tenant's. The
    child server keeps its store in a SQLite file, or with ``store`` (a PostgreSQL
    server) in a scratch database there."""
    if (url is None) != (key is None):
        raise InvalidInputError("give both url and key, or neither (a child server is started)")
    if url is not None and store is not None:
        raise InvalidInputError("store is for a child server; a server at url has its own")
    with tempfile.TemporaryDirectory(prefix="memledger-bench-serve-") as scratch:
        if url is not None and key is not None:
            return _measure(
                url.rstrip("/"), (key,), noisy_key, config, progress, server=url, memory=None
            )
        options = (*config.serve_options, "--processes", str(config.processes))
        if config.threads is not None:
            options += ("--threads", str(config.threads))
        if config.max_in_flight is not None:
            options += ("--max-in-flight", str(config.max_in_flight))
        kind = "PostgreSQL" if store is not None else "SQLite"
        with (
            _store_for(store) as database,
            child_server(Path(scratch), options, store=database, tenants=config.tenants) as (
                base,
                keys,
                noisy,
                count,
                pid,
            ),
            TreeMemory(pid) as memory,
        ):
            many = "es" if count > 1 else ""
            some = "s" if config.tenants > 1 else ""
            caps = "" if config.threads is None else f", {config.threads} threads"
            if config.max_in_flight is not None:
                caps += f", at most {config.max_in_flight} in flight"
            server = (
                f"child memledger serve ({kind}, {count} request process{many}{caps},"
                f" {config.tenants} tenant{some})"
            )
            return _measure(base, keys, noisy, config, progress, server=server, memory=memory)


@contextmanager
def _store_for(server: str | None) -> Iterator[str | None]:
    """A scratch database on the PostgreSQL ``server`` (dropped after), or ``None``."""
    if server is None:
        yield None
        return
    from memledger.eval._scratch import scratch_database

    with scratch_database(server, prefix="memledger_bench_serve") as url:
        yield url


def _measure(
    base: str,
    keys: Sequence[str],
    noisy_key: str | None,
    config: ServeBenchConfig,
    progress: Progress | None,
    *,
    server: str,
    memory: TreeMemory | None,
) -> dict[str, object]:
    """Seed, then run every phase; ``memory``: the child server's, sampled throughout,
    its peak within each phase set on the phases that phase's step ran."""
    from memledger.eval._serve_tenants import burst_then_read, noisy_neighbour

    _seeded(base, keys, config, progress)
    seeded = None if memory is None else memory.window()
    key = keys[0]
    phases: list[Phase] = []
    steps = ["baseline", "recall", "mixed", "noisy", "burst"]
    if noisy_key is None:
        steps.remove("noisy")
    for name in steps:
        if progress is not None:
            progress(name, 0, 1)
        if name == "mixed":
            phases.append(open_loop(base, keys, config))
        elif name == "noisy":
            assert noisy_key is not None
            phases.extend(noisy_neighbour(base, key, noisy_key, config))
        elif name == "burst":
            phases.append(burst_then_read(base, key, config))
        else:
            phases.append(
                closed_loop(
                    base, key if name == "baseline" else keys, config, baseline=name == "baseline"
                )
            )
        if memory is not None:
            step = memory.window()
            for phase in phases:
                if phase.server_memory is None:
                    phase.server_memory = step
        if progress is not None:
            progress(name, 1, 1)
    held = None
    if memory is not None and seeded is not None:
        held = {"after_seeding": seeded.to_json(), **memory.to_json()}
    return report(config, phases, server=server, machine=describe(), server_memory=held)
