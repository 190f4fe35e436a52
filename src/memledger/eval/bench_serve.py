"""``memledger bench serve``: load on the HTTP API from a second process, on loopback.

The benchmark starts ``memledger serve`` as a child process on a scratch store and a
free loopback port (or drives a server you name with ``--url`` and ``--key``), seeds
it with subjects and memories through the API and warms it up (the first recall
loads the index and the embedding model), then runs three phases from this process:

* **baseline, closed loop**: ``GET /healthz`` (no key, no store) the same way: what
  the HTTP stack and this client give on the machine, the ceiling for the rest.
* **recall, closed loop**: ``concurrency`` clients each send a recall as soon as the
  previous one answered, for ``duration`` seconds: the most the server gives.
* **mixed, open loop**: requests are *scheduled* at ``rate`` per second (``recall_share``
  recalls, the rest ingests of new chat turns that the server's worker extracts),
  and each latency is counted from its scheduled moment, so a server that falls
  behind shows it in the tail instead of hiding it (no coordinated omission).

Each phase reports requests/s, p50/p95/p99/max latency in ms and errors by status.
Traffic goes to loopback only; every loop is bounded in time and count.
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
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memledger.errors import InvalidInputError
from memledger.eval.machine import describe

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


@dataclass(slots=True)
class Phase:
    """What one phase measured."""

    name: str
    seconds: float = 0.0
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)

    def add(self, op: str, ms: float, status: int | str) -> None:
        self.latencies_ms.setdefault(op, []).append(ms)
        if not (isinstance(status, int) and status < 400):
            self.errors[f"{op} {status}"] += 1

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies_ms.values())

    def to_json(self) -> dict[str, object]:
        ops: dict[str, object] = {}
        for op, values in sorted(self.latencies_ms.items()):
            ops[op] = {"requests": len(values), **_percentiles(values)}
        every = [v for values in self.latencies_ms.values() for v in values]
        ok = self.requests - sum(self.errors.values())
        return {
            "phase": self.name,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "requests_per_s": round(self.requests / self.seconds, 1) if self.seconds else 0.0,
            "ok_per_s": round(ok / self.seconds, 1) if self.seconds else 0.0,
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(self.errors),
            "latency_ms": _percentiles(every),
            "by_operation": ops,
        }


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "max": round(ordered[-1], 2)}


# -- the server under test -----------------------------------------------------------------


@contextmanager
def child_server(folder: Path) -> Iterator[tuple[str, str]]:
    """``memledger serve`` on a scratch store and a free loopback port: (base URL, admin key)."""
    key_file = folder / "admin-key"
    command = [
        sys.executable,
        "-m",
        "memledger.cli",
        "serve",
        "--db",
        f"sqlite:///{folder / 'bench.db'}",
        "--port",
        "0",
        "--tenant",
        "bench",
        "--key-file",
        str(key_file),
    ]
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        base = _wait_for_url(child)
        yield base, key_file.read_text(encoding="utf-8").strip()
    finally:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _wait_for_url(child: subprocess.Popen[str], timeout: float = 120.0) -> str:
    assert child.stdout is not None
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = _URL_LINE.search(line)
        if found:
            return found.group(1)
    raise RuntimeError("memledger serve did not start:\n" + "".join(seen[-20:]))


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


async def _seed(base: str, key: str, config: ServeBenchConfig, progress: Progress | None) -> None:
    import httpx

    rng = random.Random(7)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        for s in range(config.subjects):
            subject = f"user-{s}"
            batch = [_turn(rng, subject, n) for n in range(config.turns)]
            response = await client.post("/v1/events/batch", json=batch)
            response.raise_for_status()
            if progress is not None:
                progress("seed", s + 1, config.subjects)
        response = await client.post("/v1/process", json={})
        response.raise_for_status()
        for question in _QUESTIONS * 4:  # warm up: the index and the embedding model load
            response = await client.post("/v1/recall", json={"query": question, "k": 10})
            response.raise_for_status()


async def _request(
    client: object, rng: random.Random, config: ServeBenchConfig, *, recall_only: bool
) -> tuple[str, int | str]:
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    subject = f"user-{rng.randrange(config.subjects)}"
    try:
        if recall_only or rng.random() < config.recall_share:
            body = {"query": rng.choice(_QUESTIONS), "subject": subject, "k": 10}
            response = await client.post("/v1/recall", json=body)
            return "recall", response.status_code
        response = await client.post("/v1/events", json=_turn(rng, subject, rng.getrandbits(30)))
        return "ingest", response.status_code
    except httpx.HTTPError as exc:
        return "recall" if recall_only else "request", type(exc).__name__


async def _closed_loop(
    base: str, key: str, config: ServeBenchConfig, *, baseline: bool = False
) -> Phase:
    import httpx

    phase = Phase("baseline /healthz, closed loop" if baseline else "recall, closed loop")
    limits = httpx.Limits(max_connections=config.concurrency)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=30, limits=limits
    ) as client:
        start = time.perf_counter()
        end = start + config.duration

        async def one(seed: int) -> None:
            rng = random.Random(seed)
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                if baseline:
                    op, status = "healthz", await _health(client)
                else:
                    op, status = await _request(client, rng, config, recall_only=True)
                phase.add(op, (time.perf_counter() - t0) * 1000, status)

        await asyncio.gather(*(one(i) for i in range(config.concurrency)))
        phase.seconds = time.perf_counter() - start
    return phase


async def _health(client: object) -> int | str:
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    try:
        return (await client.get("/healthz")).status_code
    except httpx.HTTPError as exc:
        return type(exc).__name__


GIVE_UP_S = 10.0
"""A request of the open loop not answered this long after its scheduled moment counts
as an error (``timeout``): the phase ends at most this long after its last schedule."""


async def _open_loop(base: str, key: str, config: ServeBenchConfig) -> Phase:
    import httpx

    phase = Phase(f"mixed, open loop at {config.rate:g}/s")
    headers = {"Authorization": f"Bearer {key}"}
    total = int(config.rate * config.duration)
    limits = httpx.Limits(max_connections=64)
    rng = random.Random(11)
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=GIVE_UP_S, limits=limits
    ) as client:
        start = time.perf_counter()

        async def one(scheduled: float, seed: int) -> None:
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                async with asyncio.timeout(max(0.0, scheduled + GIVE_UP_S - time.perf_counter())):
                    op, status = await _request(
                        client, random.Random(seed), config, recall_only=False
                    )
            except TimeoutError:
                op, status = "request", "timeout"
            phase.add(op, (time.perf_counter() - scheduled) * 1000, status)

        tasks = [
            asyncio.create_task(one(start + i / config.rate, rng.getrandbits(32)))
            for i in range(total)
        ]
        await asyncio.gather(*tasks)
        phase.seconds = time.perf_counter() - start
    return phase


def run(
    config: ServeBenchConfig,
    *,
    url: str | None = None,
    key: str | None = None,
    progress: Progress | None = None,
) -> dict[str, object]:
    """Seed, then both phases; the report as JSON data."""
    if (url is None) != (key is None):
        raise InvalidInputError("give both url and key, or neither (a child server is started)")
    with tempfile.TemporaryDirectory(prefix="memledger-bench-serve-") as scratch:
        if url is not None and key is not None:
            return _measure(url.rstrip("/"), key, config, progress, started=False)
        with child_server(Path(scratch)) as (base, admin):
            return _measure(base, admin, config, progress, started=True)


def _measure(
    base: str, key: str, config: ServeBenchConfig, progress: Progress | None, *, started: bool
) -> dict[str, object]:
    asyncio.run(_seed(base, key, config, progress))
    phases: list[Phase] = []
    for name in ("baseline", "recall", "mixed"):
        if progress is not None:
            progress(name, 0, 1)
        if name == "mixed":
            phases.append(asyncio.run(_open_loop(base, key, config)))
        else:
            phases.append(asyncio.run(_closed_loop(base, key, config, baseline=name == "baseline")))
        if progress is not None:
            progress(name, 1, 1)
    return {
        "benchmark": "serve",
        "server": "child memledger serve (SQLite, default embedder)" if started else base,
        "config": {
            "duration_s": config.duration,
            "concurrency": config.concurrency,
            "rate_per_s": config.rate,
            "recall_share": config.recall_share,
            "subjects": config.subjects,
            "seeded_turns": config.subjects * config.turns,
        },
        "machine": describe(),
        "phases": [p.to_json() for p in phases],
    }


def markdown(report: dict[str, object]) -> str:
    """The phases as a Markdown table."""
    rows = [
        "| phase | requests | req/s | answered ok/s | p50 ms | p95 ms | p99 ms | max ms | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    phases = report["phases"]
    assert isinstance(phases, list)
    for phase in phases:
        lat = phase["latency_ms"]
        rows.append(
            f"| {phase['phase']} | {phase['requests']:,} | {phase['requests_per_s']:,} | "
            f"{phase['ok_per_s']:,} | "
            f"{lat['p50']} | {lat['p95']} | {lat['p99']} | {lat['max']} | {phase['errors']} |"
        )
    return "\n".join(rows)
