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
* **noisy neighbour** and **burst then read** (:mod:`memledger.eval._serve_tenants`):
  a quiet tenant's recalls alone and beside another tenant's flood of large-material
  contexts; a burst of writes, then the first read's latency.

Each phase reports offered and answered rates, p50/p95/p99/max latency in ms, errors
by status, requests shed (429/503) and requests not answered in time. Traffic goes to
loopback only; every request has a timeout, every connection pool a bound, and every
phase a hard stop past its duration (what is still waiting then is cancelled and
counted as not answered), whatever the server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
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
        for name, most in (
            ("quiet_concurrency", 64),
            ("noisy_concurrency", 256),
            ("material_chars", 2_000_000),
            ("burst", 10_000),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise InvalidInputError(f"{name} must be a whole number 1-{most}, got {value!r}")


@dataclass(slots=True)
class Phase:
    """What one phase measured."""

    name: str
    seconds: float = 0.0
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    offered: int = 0
    """Requests the phase meant to send (the open loop: every scheduled one)."""
    shed: Counter[str] = field(default_factory=Counter)
    """Requests the server refused at once as overloaded (429, 503), by operation."""
    not_answered: int = 0
    """Requests with no answer in time: timed out, or cut at the phase's hard stop."""

    def add(self, op: str, ms: float, status: int | str) -> None:
        self.latencies_ms.setdefault(op, []).append(ms)
        if not (isinstance(status, int) and status < 400):
            self.errors[f"{op} {status}"] += 1
        if status in (429, 503):
            self.shed[op] += 1
        if status in ("timeout", "unanswered") or status in _TIMEOUTS:
            self.not_answered += 1

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies_ms.values())

    def to_json(self) -> dict[str, object]:
        ops: dict[str, object] = {}
        for op, values in sorted(self.latencies_ms.items()):
            ops[op] = {"requests": len(values), **_percentiles(values)}
        every = [v for values in self.latencies_ms.values() for v in values]
        ok = self.requests - sum(self.errors.values())

        def per_s(n: int) -> float:
            return round(n / self.seconds, 1) if self.seconds else 0.0

        return {
            "phase": self.name,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "offered_per_s": per_s(max(self.offered, self.requests)),
            "requests_per_s": per_s(self.requests),
            "ok_per_s": per_s(ok),
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(self.errors),
            "shed": sum(self.shed.values()),
            "shed_by_operation": dict(self.shed),
            "not_answered": self.not_answered,
            "latency_ms": _percentiles(every),
            "by_operation": ops,
        }


_TIMEOUTS = frozenset(
    {"ReadTimeout", "WriteTimeout", "ConnectTimeout", "PoolTimeout", "TimeoutException"}
)


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "max": round(ordered[-1], 2)}


# -- the server under test -----------------------------------------------------------------


NOISY_TENANT = "noisy"


@contextmanager
def child_server(folder: Path, options: Sequence[str] = ()) -> Iterator[tuple[str, str, str]]:
    """``memledger serve`` on a scratch store and a free loopback port: (base URL, admin
    key of tenant ``bench``, a write key of tenant :data:`NOISY_TENANT`)."""
    from memledger.memory import Memory

    key_file = folder / "admin-key"
    with Memory.open(f"sqlite:///{folder / 'bench.db'}") as memory:
        _, noisy = memory.create_key(NOISY_TENANT, "flood", role="write")
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
        *options,
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
        yield base, key_file.read_text(encoding="utf-8").strip(), noisy
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


REQUEST_TIMEOUT_S = 5.0
"""A request not answered this long counts as not answered (``timeout``)."""
GIVE_UP_S = 10.0
"""A request of the open loop not answered this long after its scheduled moment counts
as not answered (``timeout``)."""
HARD_STOP_S = GIVE_UP_S + 2.0
"""Past its duration plus this, a phase stops whatever the server does: what is still
waiting is cancelled and counted as not answered."""


def _client(base: str, key: str | None, connections: int, timeout: float) -> object:
    """A bounded client: at most ``connections`` connections, and a request waits for
    one (and for its answer) at most ``timeout`` seconds."""
    import httpx

    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return httpx.AsyncClient(
        base_url=base,
        headers=headers,
        timeout=httpx.Timeout(timeout, pool=timeout),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        trust_env=False,
    )


async def _close(client: object) -> None:
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    # a pool left busy by cancelled requests is dropped: the phase is over
    with contextlib.suppress(TimeoutError, httpx.HTTPError, RuntimeError):
        await asyncio.wait_for(client.aclose(), timeout=5.0)


async def _bounded(tasks: list[asyncio.Task[None]], phase: Phase, *, until: float) -> None:
    """Wait for ``tasks`` until ``until`` (``time.perf_counter()``); then cancel the rest,
    each counted as not answered."""
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=max(0.0, until - time.perf_counter()))
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=5.0)
    phase.not_answered += len(pending)


_JSON = {"Content-Type": "application/json"}


async def _send(client: object, method: str, path: str, body: object = None) -> int | str:
    """One request's status, or the name of what went wrong (``timeout`` when the
    answer did not come within :data:`REQUEST_TIMEOUT_S`)."""
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    try:
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            if method == "GET":
                return (await client.get(path)).status_code
            if isinstance(body, bytes):  # encoded once by the caller: a large body
                return (await client.post(path, content=body, headers=_JSON)).status_code
            return (await client.post(path, json=body)).status_code
    except TimeoutError:
        return "timeout"
    except httpx.HTTPError as exc:
        return type(exc).__name__


async def _request(
    client: object, rng: random.Random, config: ServeBenchConfig, *, recall_only: bool
) -> tuple[str, int | str]:
    subject = f"user-{rng.randrange(config.subjects)}"
    if recall_only or rng.random() < config.recall_share:
        body = {"query": rng.choice(_QUESTIONS), "subject": subject, "k": 10}
        return "recall", await _send(client, "POST", "/v1/recall", body)
    turn = _turn(rng, subject, rng.getrandbits(30))
    return "ingest", await _send(client, "POST", "/v1/events", turn)


async def _closed_loop(
    base: str,
    key: str,
    config: ServeBenchConfig,
    *,
    baseline: bool = False,
    concurrency: int | None = None,
    into: Phase | None = None,
) -> Phase:
    """``concurrency`` clients (``config.concurrency``) sending one request after another
    for ``config.duration``: ``/healthz`` for the ``baseline``, else recalls; counted in
    ``into`` (a phase of its own by default)."""
    phase = into or Phase("baseline /healthz, closed loop" if baseline else "recall, closed loop")
    clients = config.concurrency if concurrency is None else concurrency
    client = _client(base, key, clients, REQUEST_TIMEOUT_S)
    try:
        start = time.perf_counter()
        end = start + config.duration

        async def one(seed: int) -> None:
            rng = random.Random(seed)
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                if baseline:
                    op, status = "healthz", await _send(client, "GET", "/healthz")
                else:
                    op, status = await _request(client, rng, config, recall_only=True)
                phase.add(op, (time.perf_counter() - t0) * 1000, status)

        tasks = [asyncio.create_task(one(i)) for i in range(clients)]
        await _bounded(tasks, phase, until=end + HARD_STOP_S)
        phase.offered = phase.requests + phase.not_answered
        phase.seconds = time.perf_counter() - start
    finally:
        await _close(client)
    return phase


async def _open_loop(base: str, key: str, config: ServeBenchConfig) -> Phase:
    phase = Phase(f"mixed, open loop at {config.rate:g}/s")
    total = int(config.rate * config.duration)
    rng = random.Random(11)
    client = _client(base, key, 64, GIVE_UP_S)
    try:
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
        await _bounded(tasks, phase, until=start + config.duration + HARD_STOP_S)
        phase.offered = total
        phase.seconds = time.perf_counter() - start
    finally:
        await _close(client)
    return phase


def run(
    config: ServeBenchConfig,
    *,
    url: str | None = None,
    key: str | None = None,
    noisy_key: str | None = None,
    progress: Progress | None = None,
) -> dict[str, object]:
    """Seed, then every phase; the report as JSON data. With ``url``, the noisy-neighbour
    phases run only given ``noisy_key`` (a key of another tenant than ``key``'s)."""
    if (url is None) != (key is None):
        raise InvalidInputError("give both url and key, or neither (a child server is started)")
    with tempfile.TemporaryDirectory(prefix="memledger-bench-serve-") as scratch:
        if url is not None and key is not None:
            return _measure(url.rstrip("/"), key, noisy_key, config, progress, started=False)
        with child_server(Path(scratch), config.serve_options) as (base, admin, noisy):
            return _measure(base, admin, noisy, config, progress, started=True)


def _measure(
    base: str,
    key: str,
    noisy_key: str | None,
    config: ServeBenchConfig,
    progress: Progress | None,
    *,
    started: bool,
) -> dict[str, object]:
    from memledger.eval._serve_tenants import burst_then_read, noisy_neighbour

    asyncio.run(_seed(base, key, config, progress))
    phases: list[Phase] = []
    steps = ["baseline", "recall", "mixed", "noisy", "burst"]
    if noisy_key is None:
        steps.remove("noisy")
    for name in steps:
        if progress is not None:
            progress(name, 0, 1)
        if name == "mixed":
            phases.append(asyncio.run(_open_loop(base, key, config)))
        elif name == "noisy":
            assert noisy_key is not None
            phases.extend(asyncio.run(noisy_neighbour(base, key, noisy_key, config)))
        elif name == "burst":
            phases.append(asyncio.run(burst_then_read(base, key, config)))
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
            "quiet_concurrency": config.quiet_concurrency,
            "noisy_concurrency": config.noisy_concurrency,
            "material_chars": config.material_chars,
            "burst": config.burst,
            "serve_options": list(config.serve_options),
        },
        "machine": describe(),
        "phases": [p.to_json() for p in phases],
    }


def markdown(report: dict[str, object]) -> str:
    """The machine, then the phases as a Markdown table."""
    machine = report["machine"]
    assert isinstance(machine, dict)
    rows = [
        f"machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']}, "
        f"SQLite {machine['sqlite']}, {machine['platform']}",
        "",
        "| phase | requests | offered/s | answered ok/s | p50 ms | p95 ms | p99 ms | max ms "
        "| errors | shed | not answered |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    phases = report["phases"]
    assert isinstance(phases, list)
    for phase in phases:
        lat = phase["latency_ms"]
        rows.append(
            f"| {phase['phase']} | {phase['requests']:,} | {phase['offered_per_s']:,} | "
            f"{phase['ok_per_s']:,} | "
            f"{lat['p50']} | {lat['p95']} | {lat['p99']} | {lat['max']} | {phase['errors']} | "
            f"{phase['shed']} | {phase['not_answered']} |"
        )
        first = phase["by_operation"].get("first read")
        if first is not None:
            rows.append(f"| ... the first read after it | 1 | | | {first['p50']} | | | | | | |")
    return "\n".join(rows)
