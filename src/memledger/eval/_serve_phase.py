"""One phase of ``memledger bench serve``: its deadline, its requests and their outcomes.

Every request a phase sends ends as exactly one of:

* **answered**: a 2xx; only these give the latency percentiles;
* **shed**: a 429 or 503 whose problem ``code`` is one the service sheds with
  (:data:`SHED_CODES`, :mod:`memledger.api._admission`): refused at once as overloaded;
* **error**, by kind (:data:`ErrorKind`): another HTTP status by its class (``3xx``,
  ``4xx``, ``5xx``), ``timeout`` (no answer within :data:`REQUEST_TIMEOUT_S`),
  ``connection`` (refused, reset, closed mid-answer), ``other``;
* **unfinished**: still waiting at the phase's deadline plus :data:`GRACE_S`, then cut.

so ``sent == answered + shed + errors + unfinished`` in every report. A phase sends
nothing past its deadline, bounds each request's timeout by the time the phase has
left (plus the grace), and runs on an event loop of its own in a thread that
:func:`run_phase` waits for at most the phase's duration plus :data:`STOP_S`: past
that the phase is closed as it stands (what it was still waiting for is unfinished)
and the thread abandoned, whatever the server or the HTTP client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from memledger.eval._serve_memory import Window

ErrorKind = Literal["3xx", "4xx", "5xx", "timeout", "connection", "other"]
ERROR_KINDS: tuple[ErrorKind, ...] = ("3xx", "4xx", "5xx", "timeout", "connection", "other")

SHED_CODES = frozenset({"overloaded", "tenant_overloaded"})
"""Problem codes of a request the service refused at once as overloaded (429 or 503)."""

REQUEST_TIMEOUT_S = 5.0
"""A request not answered this long is an error of kind ``timeout`` (unless the
phase's deadline comes first: then it is unfinished)."""
GRACE_S = 1.0
"""Seconds past a phase's deadline its requests in flight may still be answered."""
STOP_S = GRACE_S + 1.0
"""Seconds past its duration a phase takes at most: the grace, then cancelling what
is left and closing the client."""

Status = int | ErrorKind | Literal["shed", "unfinished"]
"""What became of one request: a 2xx status, or how it failed."""


@dataclass(slots=True)
class Phase:
    """What one phase measured."""

    name: str
    seconds: float = 0.0
    """The window the rates are counted over: the phase's duration (what it sends, it
    sends within it), or for a burst the time it took."""
    wall_s: float = 0.0
    """The phase's wall time, its grace and closing included."""
    scheduled: int | None = None
    """Open loop only: requests scheduled within the duration (all sent, unless this
    process's own event loop fell behind)."""
    sent: int = 0
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    """Latencies of the answered (2xx) requests, by operation."""
    shed: Counter[str] = field(default_factory=Counter)
    """Requests shed, by operation."""
    errors: Counter[str] = field(default_factory=Counter)
    """Failed requests, by :data:`ErrorKind`."""
    error_details: Counter[str] = field(default_factory=Counter)
    """Failed requests, by operation and status (with the problem's code) or exception
    name: ``"recall 503 budget_exceeded"``, ``"ingest ConnectError"``."""
    note: str = ""
    """What kept the phase from running, if anything did."""
    closed: bool = False
    """Set at the cut: no outcome counts after it."""
    server_memory: Window | None = None
    """The child server's resident memory while the phase ran (a server the benchmark
    started only)."""

    def start(self) -> None:
        """One more request sent."""
        if not self.closed:
            self.sent += 1

    def add(self, op: str, ms: float, status: Status, detail: str = "") -> None:
        """The outcome of a request :meth:`start` counted (``unfinished`` counts
        itself: sent and never given an outcome)."""
        if self.closed or status == "unfinished":
            return
        if isinstance(status, int) and 200 <= status < 300:
            self.latencies_ms.setdefault(op, []).append(ms)
        elif status == "shed":
            self.shed[op] += 1
        else:
            kind = _kind(status)
            self.errors[kind] += 1
            self.error_details[f"{op} {detail or status}"] += 1

    def close(self) -> None:
        self.closed = True

    @property
    def answered(self) -> int:
        return sum(len(v) for v in self.latencies_ms.values())

    @property
    def unfinished(self) -> int:
        return self.sent - self.answered - sum(self.shed.values()) - sum(self.errors.values())

    def to_json(self) -> dict[str, object]:
        def per_s(n: int) -> float:
            return round(n / self.seconds, 1) if self.seconds > 0 else 0.0

        every = [v for values in self.latencies_ms.values() for v in values]
        ops: dict[str, object] = {}
        for op in sorted({*self.latencies_ms, *self.shed}):
            values = self.latencies_ms.get(op, [])
            ops[op] = {"answered": len(values), "shed": self.shed[op], **_percentiles(values)}
        out: dict[str, object] = {
            "phase": self.name,
            "seconds": round(self.seconds, 3),
            "wall_s": round(self.wall_s, 3),
            "sent": self.sent,
            "answered": self.answered,
            "offered_per_s": per_s(self.sent),
            "answered_per_s": per_s(self.answered),
            "latency_ms": _percentiles(every),
            "errors": sum(self.errors.values()),
            "errors_by_kind": {k: self.errors[k] for k in ERROR_KINDS if self.errors[k]},
            "error_details": dict(sorted(self.error_details.items())),
            "shed": sum(self.shed.values()),
            "unfinished": self.unfinished,
            "by_operation": ops,
        }
        if self.scheduled is not None:
            out["scheduled"] = self.scheduled
        if self.note:
            out["note"] = self.note
        if self.server_memory is not None:
            out["server_memory_mb"] = self.server_memory.to_json()
        return out


def _kind(status: Status) -> ErrorKind:
    if isinstance(status, int):
        return "3xx" if status < 400 else "4xx" if status < 500 else "5xx"
    if status in ERROR_KINDS:
        return status
    return "other"


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "max": round(ordered[-1], 2)}


# -- sending -----------------------------------------------------------------------------


def client(base: str, key: str | None, connections: int) -> object:
    """A bounded client: at most ``connections`` connections, each request bounded by
    :func:`send`. aiohttp, not httpx: it spends about a tenth of httpx's CPU per request
    (0.1 against 1.3 ms here), and this client shares the machine with the server it
    measures."""
    try:
        import aiohttp
    except ImportError as exc:
        raise ImportError(
            "memledger bench serve sends its load with aiohttp: pip install 'memledger[bench]'"
        ) from exc

    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return aiohttp.ClientSession(
        base_url=base,
        headers=headers,
        connector=aiohttp.TCPConnector(limit=connections),
        timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
        trust_env=False,
    )


async def close(http: object) -> None:
    """Close ``http`` within a second; a pool left busy by cut requests is dropped."""
    import aiohttp

    assert isinstance(http, aiohttp.ClientSession)
    with contextlib.suppress(TimeoutError, aiohttp.ClientError, RuntimeError):
        async with asyncio.timeout(STOP_S - GRACE_S - 0.5):
            await http.close()


_JSON = {"Content-Type": "application/json"}


async def send(
    http: object, method: str, path: str, body: object = None, *, deadline: float
) -> tuple[Status, str]:
    """One request: its status (``shed`` for an overload refusal) and a detail (the
    status and the problem's code, or the exception's name). Given up at :data:`REQUEST_TIMEOUT_S`
    (``timeout``), or at ``deadline`` (``time.perf_counter()``) if that comes first
    (``unfinished``)."""
    import aiohttp

    assert isinstance(http, aiohttp.ClientSession)
    left = deadline - time.perf_counter()
    if left <= 0:
        return "unfinished", "unfinished"
    cut = left < REQUEST_TIMEOUT_S
    try:
        async with asyncio.timeout(min(left, REQUEST_TIMEOUT_S)):
            if method == "GET":
                request = http.get(path, allow_redirects=False)
            elif isinstance(body, bytes):  # encoded once by the caller: a large body
                request = http.post(path, data=body, headers=_JSON, allow_redirects=False)
            else:
                request = http.post(path, json=body, allow_redirects=False)
            async with request as response:
                status = response.status
                payload = await response.read()
    except TimeoutError:  # aiohttp's own timeouts are TimeoutErrors too
        return ("unfinished", "unfinished") if cut else ("timeout", "timeout")
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
        return "connection", type(exc).__name__
    except aiohttp.ClientError as exc:
        return "other", type(exc).__name__
    code = _problem_code(payload) if status >= 400 else None
    if status in (429, 503) and code in SHED_CODES:
        return "shed", str(status)
    return status, f"{status} {code}" if code else str(status)


def _problem_code(payload: bytes) -> str | None:
    try:
        found = json.loads(payload)
    except ValueError:
        return None
    code = found.get("code") if isinstance(found, dict) else None
    return code if isinstance(code, str) else None


async def wait_until(tasks: list[asyncio.Task[None]], phase: Phase, *, deadline: float) -> None:
    """Wait for ``tasks`` until ``deadline`` (``time.perf_counter()``), then close the
    phase (what it still waits for is unfinished) and cancel the rest, briefly."""
    if tasks:
        await asyncio.wait(tasks, timeout=max(0.0, deadline - time.perf_counter()))
    phase.close()
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=0.25)


def run_phase(phase: Phase, work: Callable[[], Awaitable[None]], *, seconds: float) -> Phase:
    """Run ``work`` (which counts into ``phase``) on an event loop of its own in a
    thread, for at most ``seconds`` plus :data:`STOP_S`; then ``phase`` is closed as
    it stands, whatever ``work`` is still waiting for."""
    start = time.perf_counter()
    try:
        in_thread(work, seconds=seconds + STOP_S, name=f"bench serve: {phase.name}")
    finally:
        phase.close()
        phase.wall_s = time.perf_counter() - start
        if not phase.seconds:
            phase.seconds = min(seconds, phase.wall_s)
    return phase


def in_thread(work: Callable[[], Awaitable[None]], *, seconds: float, name: str) -> bool:
    """Run ``work`` on an event loop of its own in a daemon thread and wait for it at
    most ``seconds``: whether it ended (its exception is raised here). A thread still
    running then is abandoned; it sends nothing more once its phase's deadline is past."""
    failed: list[BaseException] = []

    async def main() -> None:
        await work()

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # raised again in the caller's thread
            failed.append(exc)

    runner = threading.Thread(target=target, name=name, daemon=True)
    runner.start()
    runner.join(seconds)
    if failed:
        raise failed[0]
    return not runner.is_alive()
